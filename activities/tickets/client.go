// Package tickets talks to ticket systems for the ticket steps (docs/tickets.md): Jira's REST
// API (v2, which Jira Cloud and Data Center both serve) and ServiceNow's Table and Import Set
// APIs. It opens and updates tickets, idempotently across retries, and reads them for the
// approval steps, whose waiting is workflow logic.
package tickets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Activity runs the ticket steps and reads tickets for approvals.
type Activity struct {
	Secrets secrets.Resolver
	Client  *http.Client // nil: a client with a 30 s timeout

	mu     sync.Mutex
	tokens map[string]oauthToken // ServiceNow OAuth access tokens by connector and refresh token
}

// client is one connector's authenticated HTTP client.
type client struct {
	http *http.Client
	conn plan.TicketConnector
	base string // the URL without its trailing slash
	auth string // the Authorization header
	mask *secrets.Masker
}

// connect resolves a connector's credentials (registering them with mask) and returns its
// client.
func (a *Activity) connect(ctx context.Context, conn *plan.TicketConnector, mask *secrets.Masker) (*client, error) {
	if conn == nil {
		return nil, contract.Fail(contract.Unknown, "the step's connector was not resolved before the run")
	}
	hc := a.Client
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	c := &client{http: hc, conn: *conn, base: strings.TrimRight(conn.URL, "/"), mask: mask}
	switch conn.Auth {
	case "PersonalAccessToken":
		_, pat, err := secrets.Login(ctx, a.Secrets, conn.ID, "", "", conn.PatRef)
		if err != nil {
			return nil, err
		}
		mask.Add(pat)
		c.auth = "Bearer " + pat
	case "RefreshTokenGrantType":
		tok, err := a.accessToken(ctx, c)
		if err != nil {
			return nil, err
		}
		c.auth = "Bearer " + tok
	default: // UsernamePassword
		user, pass, err := secrets.Login(ctx, a.Secrets, conn.ID, conn.Username, conn.UsernameRef, conn.PasswordRef)
		if err != nil {
			return nil, err
		}
		mask.Add(pass)
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		mask.Add(basic)
		c.auth = "Basic " + basic
	}
	return c, nil
}

// statusError is an answer the ticket system gave with an error status.
type statusError struct {
	code    int
	method  string
	path    string
	message string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.method, e.path, e.code, e.message)
}

// do sends a request with a JSON body (nil: none) and decodes a JSON answer into out (nil:
// discarded). Errors carry the server's own message, masked.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return contract.Fail(contract.Unknown, "%s connector %s: %v", c.conn.Type, c.conn.ID, err)
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// Unreachable: retryable, the workflow decides how long to keep trying.
		return fmt.Errorf("%s %s at %s: %s", method, path, c.conn.Type, c.mask.Apply(err.Error()))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode >= 300 {
		return &statusError{code: resp.StatusCode, method: method, path: pathOnly(path), message: c.mask.Apply(serverMessage(raw))}
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not JSON: %v", method, pathOnly(path), err)
	}
	return nil
}

// fail turns an error of do into a step failure: refused credentials and refused requests are
// the pipeline's to fix (not retried); an outage or a server error is retried.
func (c *client) fail(err error, what string) error {
	se, ok := err.(*statusError)
	switch {
	case !ok:
		return fmt.Errorf("%s: %w", what, err)
	case se.code == http.StatusUnauthorized || se.code == http.StatusForbidden:
		return contract.Fail(contract.Authentication, "%s: %s refused the credentials of connector %s (HTTP %d): %s", what, c.conn.Type, c.conn.ID, se.code, se.message)
	case se.code == http.StatusTooManyRequests || se.code >= 500:
		return fmt.Errorf("%s: %w", what, se)
	}
	return contract.Fail(contract.Unknown, "%s: %s answered HTTP %d: %s", what, c.conn.Type, se.code, se.message)
}

// serverMessage is the readable part of an error answer: Jira's errorMessages and errors,
// ServiceNow's error.message and detail, else the text itself.
func serverMessage(raw []byte) string {
	var m struct {
		ErrorMessages []string          `json:"errorMessages"`
		Errors        map[string]string `json:"errors"`
		Error         *struct {
			Message string `json:"message"`
			Detail  string `json:"detail"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &m) == nil {
		var parts []string
		parts = append(parts, m.ErrorMessages...)
		for k, v := range m.Errors {
			parts = append(parts, k+": "+v)
		}
		if m.Error != nil {
			parts = append(parts, strings.TrimSpace(m.Error.Message+" "+m.Error.Detail))
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

func pathOnly(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

// esc escapes a path segment.
func esc(s string) string { return url.PathEscape(s) }

// correlation is the mark a ticket step leaves on what it creates, from its execution and
// step: a retried step finds what an earlier attempt created instead of creating it again.
func correlation(execution, step string) string {
	return "gantry-" + shortHash(execution+"/"+step)
}
