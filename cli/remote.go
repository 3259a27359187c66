package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// control is what the execution commands ask of Gantry: a Temporal connection's starter, or
// a gantry server's API as the user of a token (--server), where roles apply.
type control interface {
	Tree(ctx context.Context, id string) (*workflows.Node, error)
	Notifications(ctx context.Context, id string) ([]workflows.DeliveryRecord, bool, error)
	List(ctx context.Context, pipeline string, limit int) ([]starter.Summary, error)
	PendingPage(ctx context.Context, limit int, token string) (starter.PendingPage, error)
	Pending(ctx context.Context) ([]starter.Pending, error)
	Abort(ctx context.Context, id, user, reason string) error
	Pause(ctx context.Context, id, user string, pause bool) (string, error)
	Intervene(ctx context.Context, id string, req workflows.InterventionRequest) (string, error)
	Approve(ctx context.Context, id string, req workflows.ApprovalRequest) (string, error)
	SupplyInputs(ctx context.Context, id string, req workflows.InputRequest) (string, error)
	Audit(ctx context.Context, q starter.AuditQuery) ([]workflows.AuditRecord, error)
	Ledger() ledger.View
}

// remoteFlags name a gantry server to act through, and the caller's token.
type remoteFlags struct {
	server string
	token  *string
}

// add adds --server and, unless the command has one (idFlags), --token.
func (f *remoteFlags) add(cmd *cobra.Command, token *string) {
	cmd.Flags().StringVar(&f.server, "server", os.Getenv("GANTRY_SERVER"), "act through this gantry server's API (http://host:port) as the user of --token, with the roles of its identity file, instead of connecting to Temporal (env GANTRY_SERVER)")
	if token == nil {
		token = new(string)
		cmd.Flags().StringVar(token, "token", os.Getenv("GANTRY_TOKEN"), "your API token, with --server (env GANTRY_TOKEN; default the sign-in gantry login kept)")
	}
	f.token = token
}

// withControl runs fn through the API with --server, else through a Temporal connection.
func withControl(cmd *cobra.Command, conn connFlags, rf remoteFlags, fn func(ctx context.Context, c control) error) error {
	if rf.server == "" {
		return withEngine(cmd, conn, func(ctx context.Context, e *engine) error { return fn(ctx, e.starter) })
	}
	token := *rf.token
	if token == "" {
		// The sign-in gantry login kept for this server.
		var err error
		if token, err = storedToken(rf.server); err != nil {
			return &exitError{code: ExitInvalid, err: err}
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	if err := fn(ctx, &apiControl{base: strings.TrimSuffix(rf.server, "/"), token: token}); err != nil {
		return &exitError{code: ExitInvalid, err: err}
	}
	return nil
}

// apiControl is control through the HTTP API.
type apiControl struct {
	base, token string
}

// do calls the API; an error answer becomes an error carrying the server's message.
func (a *apiControl) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("gantry server %s: %w", a.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("gantry server %s: %w", a.base, err)
	}
	if resp.StatusCode >= 400 {
		var e server.Error
		if json.Unmarshal(b, &e) != nil || e.Message == "" {
			return fmt.Errorf("gantry server %s answered %d: %s", a.base, resp.StatusCode, bytes.TrimSpace(b))
		}
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%s (pass --token or set GANTRY_TOKEN)", e.Message)
		}
		return errors.New(strings.Join(append([]string{e.Message}, e.Details...), "\n  "))
	}
	if out == nil {
		return nil
	}
	if s, ok := out.(*string); ok {
		*s = string(b)
		return nil
	}
	return json.Unmarshal(b, out)
}

func execPath(id string, rest ...string) string {
	return "/api/v1/executions/" + url.PathEscape(id) + strings.Join(rest, "")
}

func (a *apiControl) Tree(ctx context.Context, id string) (*workflows.Node, error) {
	var n workflows.Node
	return &n, a.do(ctx, "GET", execPath(id), nil, &n)
}

func (a *apiControl) Notifications(ctx context.Context, id string) ([]workflows.DeliveryRecord, bool, error) {
	var out struct {
		Deliveries []workflows.DeliveryRecord `json:"deliveries"`
		Done       bool                       `json:"done"`
	}
	err := a.do(ctx, "GET", execPath(id, "/notifications"), nil, &out)
	return out.Deliveries, out.Done, err
}

func (a *apiControl) List(ctx context.Context, pipeline string, limit int) ([]starter.Summary, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if pipeline != "" {
		q.Set("pipeline", pipeline)
	}
	var out struct {
		Executions []starter.Summary `json:"executions"`
	}
	return out.Executions, a.do(ctx, "GET", "/api/v1/executions?"+q.Encode(), nil, &out)
}

func (a *apiControl) PendingPage(ctx context.Context, limit int, token string) (starter.PendingPage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if token != "" {
		q.Set("pageToken", token)
	}
	var page starter.PendingPage
	return page, a.do(ctx, "GET", "/api/v1/pending?"+q.Encode(), nil, &page)
}

func (a *apiControl) Pending(ctx context.Context) ([]starter.Pending, error) {
	return starter.AllPending(ctx, 1000, a.PendingPage)
}

// message is the body of the API's decisions.
type message struct {
	Message string `json:"message"`
}

func (a *apiControl) Abort(ctx context.Context, id, _, reason string) error {
	return a.do(ctx, "POST", execPath(id, "/abort"), map[string]string{"reason": reason}, nil)
}

func (a *apiControl) Pause(ctx context.Context, id, _ string, pause bool) (string, error) {
	op := "/resume"
	if pause {
		op = "/pause"
	}
	var m message
	return m.Message, a.do(ctx, "POST", execPath(id, op), nil, &m)
}

func (a *apiControl) Intervene(ctx context.Context, id string, req workflows.InterventionRequest) (string, error) {
	var m message
	return m.Message, a.do(ctx, "POST", execPath(id, "/intervene"), map[string]string{"path": req.Path, "action": req.Action}, &m)
}

func (a *apiControl) Approve(ctx context.Context, id string, req workflows.ApprovalRequest) (string, error) {
	op := "/approve"
	if req.Action == "REJECT" {
		op = "/reject"
	}
	var m message
	return m.Message, a.do(ctx, "POST", execPath(id, op), server.VoteRequest{Path: req.Path, Comments: req.Comments, Inputs: req.Inputs}, &m)
}

func (a *apiControl) SupplyInputs(ctx context.Context, id string, req workflows.InputRequest) (string, error) {
	var m message
	return m.Message, a.do(ctx, "POST", execPath(id, "/input"), map[string]any{"path": req.Path, "values": req.Values}, &m)
}

func (a *apiControl) Audit(ctx context.Context, q starter.AuditQuery) ([]workflows.AuditRecord, error) {
	v := url.Values{"since": {q.Since.UTC().Format(time.RFC3339)}, "executions": {strconv.Itoa(q.Executions)}}
	if q.Execution != "" {
		v.Set("execution", q.Execution)
	}
	if q.User != "" {
		v.Set("user", q.User)
	}
	var out struct {
		Records []workflows.AuditRecord `json:"records"`
	}
	return out.Records, a.do(ctx, "GET", "/api/v1/audit?"+v.Encode(), nil, &out)
}

// restart reruns or retries through the API and returns the new execution.
func (a *apiControl) restart(ctx context.Context, id, fromStage string, retry bool) (string, error) {
	op, body := "/rerun", any(nil)
	if retry {
		op, body = "/retry", map[string]string{"fromStage": fromStage}
	}
	var out struct {
		ExecutionID string `json:"executionId"`
	}
	return out.ExecutionID, a.do(ctx, "POST", execPath(id, op), body, &out)
}

// stepLog reads a step's log through the API.
func (a *apiControl) stepLog(ctx context.Context, id, step string) (string, error) {
	var text string
	return text, a.do(ctx, "GET", execPath(id, "/logs/", url.PathEscape(step)), nil, &text)
}
