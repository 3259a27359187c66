// Package commitstatus reports a CI stage's build on its commit to the codebase's Git provider,
// as the reference does for pull-request checks: GitHub (and GitHub Enterprise) commit
// statuses, GitLab commit statuses, and Bitbucket Cloud and Server build statuses.
package commitstatus

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/activities/notify"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
)

// Activity reports commit statuses.
type Activity struct {
	Secrets secrets.Resolver
	// UIURL is the Web UI a status links to ("" or nil: the repository's page, which
	// Bitbucket needs at least).
	UIURL func() string
	// Client sends the requests (nil: one with a 30 s timeout).
	Client *http.Client
}

// request is one provider call: where, how authenticated, what.
type request struct {
	url    string
	header http.Header
	body   any
}

// Report sends one status. A refusal (4xx) is not retried: the token lacks the scope or the
// repository or commit is not the provider's; the workflow notes it on the stage.
func (a *Activity) Report(ctx context.Context, in contract.CommitStatusInput) error {
	api := in.Repo.Connector.API
	if api == nil {
		return temporal.NewNonRetryableApplicationError("the codebase connector has no apiAccess", "CommitStatus", nil)
	}
	user, token, err := secrets.Login(ctx, a.Secrets, in.Repo.Connector.ID, api.Username, api.UsernameRef, api.TokenRef)
	if err != nil {
		return err // an Authentication failure naming the connector and the reference
	}
	mask := &secrets.Masker{}
	mask.Add(token)
	link := a.link(in)
	r, err := build(in, link, user, token)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "CommitStatus", nil)
	}
	return a.send(ctx, r, mask)
}

// link is the page the status links to: the execution in the Web UI, else the repository.
func (a *Activity) link(in contract.CommitStatusInput) string {
	if a.UIURL != nil {
		if base := a.UIURL(); base != "" {
			return notify.LinksFor(base, contract.NotifyEvent{Namespace: in.Namespace, ExecutionID: in.ExecutionID}).Execution
		}
	}
	return in.Repo.RepoDisplay()
}

// repository splits a clone URL (https://host/owner/name.git or git@host:owner/name.git) into
// the API's scheme and host and the repository's path.
func repository(raw string) (scheme, host, path string, err error) {
	if !strings.Contains(raw, "://") { // scp-like SSH: git@host:owner/name.git
		at := strings.LastIndex(raw, "@")
		colon := strings.Index(raw, ":")
		if colon < 0 {
			return "", "", "", fmt.Errorf("repository URL %q names no host", raw)
		}
		return "https", raw[at+1 : colon], strings.TrimSuffix(strings.Trim(raw[colon+1:], "/"), ".git"), nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", "", fmt.Errorf("repository URL %q: not a URL", raw)
	}
	scheme = u.Scheme
	if scheme != "http" {
		scheme = "https" // ssh:// and git:// clone URLs: the API is served over HTTPS
	}
	host = u.Host
	if u.Port() != "" && scheme == "https" && u.Scheme != "https" {
		host = u.Hostname()
	}
	return scheme, host, strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), nil
}

// build is the provider's request for a status.
func build(in contract.CommitStatusInput, link, user, token string) (request, error) {
	scheme, host, path, err := repository(in.Repo.RepoURL())
	if err != nil {
		return request{}, err
	}
	if path == "" {
		return request{}, fmt.Errorf("repository URL %q names no repository", in.Repo.RepoDisplay())
	}
	h := http.Header{"Content-Type": {"application/json"}}
	switch in.Repo.Connector.Type {
	case "Github":
		api := scheme + "://" + host + "/api/v3" // GitHub Enterprise Server
		if host == "github.com" {
			api = "https://api.github.com"
		}
		h.Set("Authorization", "Bearer "+token)
		h.Set("Accept", "application/vnd.github+json")
		return request{url: api + "/repos/" + path + "/statuses/" + in.SHA, header: h, body: map[string]string{
			"state": in.State, "context": in.Context, "description": clip(in.Description, 140), "target_url": link}}, nil
	case "Gitlab":
		if in.Repo.Connector.API.Type == "OAuth" {
			h.Set("Authorization", "Bearer "+token)
		} else {
			h.Set("PRIVATE-TOKEN", token)
		}
		state := map[string]string{contract.CommitPending: "running", contract.CommitSuccess: "success",
			contract.CommitFailure: "failed", contract.CommitError: "canceled"}[in.State]
		return request{url: scheme + "://" + host + "/api/v4/projects/" + url.PathEscape(path) + "/statuses/" + in.SHA, header: h,
			body: map[string]string{"state": state, "name": in.Context, "description": clip(in.Description, 255), "target_url": link}}, nil
	case "Bitbucket":
		if user != "" {
			h.Set("Authorization", "Basic "+basic(user, token))
		} else {
			h.Set("Authorization", "Bearer "+token)
		}
		state := map[string]string{contract.CommitPending: "INPROGRESS", contract.CommitSuccess: "SUCCESSFUL",
			contract.CommitFailure: "FAILED", contract.CommitError: "STOPPED"}[in.State]
		body := map[string]string{"key": key(in.Context), "state": state, "name": in.Context, "description": clip(in.Description, 255), "url": link}
		if host == "bitbucket.org" {
			return request{url: "https://api.bitbucket.org/2.0/repositories/" + path + "/commit/" + in.SHA + "/statuses/build", header: h, body: body}, nil
		}
		// Bitbucket Server and Data Center: statuses are per commit, whatever the repository.
		return request{url: scheme + "://" + host + "/rest/build-status/1.0/commits/" + in.SHA, header: h, body: body}, nil
	}
	return request{}, fmt.Errorf("%s connectors have no commit status API", in.Repo.Connector.Type)
}

// key is a Bitbucket status key: at most 40 characters, the context itself when it fits.
func key(context string) string {
	if len(context) <= 40 {
		return context
	}
	sum := sha1.Sum([]byte(context))
	return context[:23] + "-" + hex.EncodeToString(sum[:8])
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func basic(user, token string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
}

// send posts the status; the provider's answer to a refusal is in the error, masked.
func (a *Activity) send(ctx context.Context, r request, mask *secrets.Masker) error {
	body, err := json.Marshal(r.body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "CommitStatus", nil)
	}
	req.Header = r.header
	c := a.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %s", r.url, mask.Apply(err.Error()))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode < 300 {
		return nil
	}
	msg := fmt.Sprintf("POST %s: %s: %s", r.url, resp.Status, mask.Apply(strings.TrimSpace(string(answer))))
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
		return temporal.NewNonRetryableApplicationError(msg, "CommitStatus", nil)
	}
	return fmt.Errorf("%s", msg)
}
