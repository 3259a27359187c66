package webui

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// ExecutionsPath lists pipeline executions (not their stages' workflows), newest first, to
// signed-in users: those of the pipelines they may view; ExecutionsPath/ID is an execution's
// page (execution.go).
const ExecutionsPath = "/gantry/executions"

// RunPageURL is an execution's run page on the Web UI at base.
func RunPageURL(base, execution string) string {
	return strings.TrimSuffix(base, "/") + ExecutionsPath + "/" + url.PathEscape(execution)
}

// ExecutionLister reads pages of pipeline executions and an execution's tree, and acts on
// executions as a user (a *starter.Starter).
type ExecutionLister interface {
	ListPage(ctx context.Context, f starter.ListFilter, limit int, token string) (starter.ExecutionsPage, error)
	Tree(ctx context.Context, executionID string) (*workflows.Node, error)
	Input(ctx context.Context, executionID string) (*workflows.PipelineInput, error)
	Abort(ctx context.Context, executionID, user, reason string) error
	Pause(ctx context.Context, executionID, user string, pause bool) (string, error)
	Rerun(ctx context.Context, executionID string, trig workflows.Trigger) (starter.Execution, error)
	Retry(ctx context.Context, executionID, fromStage string, trig workflows.Trigger) (starter.Execution, error)
}

const (
	// executionsPerPage is how many rows a page aims at, and the size of each visibility read.
	executionsPerPage = 50
	// maxListReads bounds the visibility reads of one page when the viewer may see few of the
	// executions listed: the page then ends early, with its link to the next.
	maxListReads = 10
)

// statusFilters are the statuses the page filters by, as a select offers them.
var statusFilters = []status.Status{status.Running, status.ApprovalWaiting, status.InterventionWaiting, status.InputWaiting,
	status.Paused, status.Succeeded, status.Failed, status.Errored, status.Aborted, status.Expired, status.ApprovalRejected,
	status.FreezeFailed, status.IgnoreFailed}

// executionRow is one execution as the page shows it.
type executionRow struct {
	starter.Summary
	Mark, Duration, StartedBy string
	// Ago is how long ago it started, in words (the time itself on hover).
	Ago string
}

// executions serves the executions page.
func executions(list ExecutionLister, userOf func(string) (*identity.User, error), acc Access, namespace string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := pageUser(w, r, userOf)
		if user == nil {
			return
		}
		q := r.URL.Query()
		f := starter.ListFilter{Pipeline: strings.TrimSpace(q.Get("pipeline")), Status: q.Get("status"), User: strings.TrimSpace(q.Get("user"))}
		allowed := func(pipeline string) error {
			if acc == nil {
				return nil
			}
			return acc.AllowPipeline(user, identity.View, pipeline)
		}
		if f.Pipeline != "" {
			if err := allowed(f.Pipeline); err != nil {
				refuse(w, err)
				return
			}
		}
		var rows []executionRow
		token := q.Get("page")
		for reads := 0; reads < maxListReads && len(rows) < executionsPerPage; reads++ {
			page, err := list.ListPage(r.Context(), f, executionsPerPage, token)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			for _, sm := range page.Executions {
				if allowed(sm.Pipeline) == nil {
					rows = append(rows, row(sm, time.Now()))
				}
			}
			if token = page.Next; token == "" {
				break
			}
		}
		next := ""
		if token != "" {
			v := url.Values{}
			for k, s := range map[string]string{"pipeline": f.Pipeline, "status": f.Status, "user": f.User, "page": token} {
				if s != "" {
					v.Set(k, s)
				}
			}
			next = ExecutionsPath + "?" + v.Encode()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = executionsPage.Execute(w, map[string]any{"Rows": rows, "Filter": f, "Statuses": statusFilters, "Next": next,
			"First": q.Get("page") == "", "User": user.Name, "Namespace": namespace, "Path": ExecutionsPath})
	})
}

// pageUser is the signed-in user a GET of a page comes from; nil when the request was
// answered instead: another method refused, a visitor who is not signed in sent to sign in
// and back.
func pageUser(w http.ResponseWriter, r *http.Request, userOf func(string) (*identity.User, error)) *identity.User {
	if r.Method != http.MethodGet {
		http.Error(w, "GET", http.StatusMethodNotAllowed)
		return nil
	}
	user := signedIn(r, userOf)
	if user == nil {
		http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	}
	return user
}

// signedIn is the user whose token the request carries, nil without one.
func signedIn(r *http.Request, userOf func(string) (*identity.User, error)) *identity.User {
	token := requestToken(r)
	if token == "" {
		return nil
	}
	u, _ := userOf(token)
	return u
}

// requestToken is the token a request carries: a browser's sign-in cookie, or a script's
// `Authorization: Bearer` header (which browsers never send on their own, so no other site
// can make a visitor's browser use it).
func requestToken(r *http.Request) string {
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && t != "" {
		return t
	}
	if ck, err := r.Cookie(codec.TokenCookie); err == nil {
		return ck.Value
	}
	return ""
}

// row is how an execution shows: a mark that tells its status without colour, its duration so
// far, and who or what started it.
func row(sm starter.Summary, now time.Time) executionRow {
	r := executionRow{Summary: sm, StartedBy: strings.ToLower(sm.Trigger), Ago: ago(now.Sub(sm.Start))}
	if sm.User != "" {
		r.StartedBy = sm.User
	}
	end := sm.End
	if end.IsZero() {
		end = now
	}
	switch d := end.Sub(sm.Start); {
	case d >= time.Minute:
		r.Duration = d.Round(time.Second).String()
	case d >= time.Second:
		r.Duration = d.Round(100 * time.Millisecond).String()
	default:
		r.Duration = d.Round(time.Millisecond).String()
	}
	st := status.Status(sm.Status)
	switch {
	case st == status.Succeeded || st == status.IgnoreFailed:
		r.Mark = "✓"
	case st == status.Aborted || st == "TERMINATED" || st == "CANCELED":
		r.Mark = "■"
	case st == status.Running:
		r.Mark = "▶"
	case strings.HasSuffix(sm.Status, "_WAITING") || st == status.Paused || st == status.Pausing:
		r.Mark = "‖"
	default:
		r.Mark = "✗"
	}
	return r
}

var executionsPage = template.Must(template.New("executions").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Executions · Gantry</title>
<meta name="color-scheme" content="light dark">
<style>
body{font-family:sans-serif;margin:1em 2em}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #8884}
th{font-weight:600}td.mark{width:1.5em;font-size:1.1em}
form{display:flex;gap:.8em;align-items:end;flex-wrap:wrap;margin:1em 0}label{display:flex;flex-direction:column;font-size:.9em}
input,select,button{padding:.3em;font:inherit}a:focus,button:focus,input:focus,select:focus{outline:2px solid #36f;outline-offset:1px}
.s-SUCCEEDED,.s-IGNORE_FAILED{color:#070}.s-FAILED,.s-ERRORED,.s-EXPIRED,.s-APPROVAL_REJECTED,.s-FREEZE_FAILED{color:#b00}
@media (prefers-color-scheme: dark){.s-SUCCEEDED,.s-IGNORE_FAILED{color:#6d6}.s-FAILED,.s-ERRORED,.s-EXPIRED,.s-APPROVAL_REJECTED,.s-FREEZE_FAILED{color:#f77}a{color:#8af}}
</style></head>
<body><p><b>Pipeline executions</b> · signed in as {{.User}} · <a href="` + ServicesPath + `">services</a> · <a href="/namespaces/{{.Namespace}}/workflows">all workflows in the Temporal UI</a></p>
<form method="get" action="{{.Path}}" role="search">
<label>Pipeline<input name="pipeline" id="f-pipeline" value="{{.Filter.Pipeline}}" placeholder="identifier"></label>
<label>Status<select name="status" id="f-status"><option value="">any</option>{{range .Statuses}}<option{{if eq (print .) $.Filter.Status}} selected{{end}}>{{.}}</option>{{end}}</select></label>
<label>Started by<input name="user" id="f-user" value="{{.Filter.User}}" placeholder="user"></label>
<button type="submit" id="f-apply">Filter</button>{{if or .Filter.Pipeline .Filter.Status .Filter.User}} <a href="{{.Path}}" id="f-clear">clear</a>{{end}}
</form>
{{if .Rows}}<table id="executions"><thead><tr><th></th><th>Execution</th><th>Pipeline</th><th>Status</th><th>Started by</th><th>Started</th><th>Duration</th></tr></thead><tbody>
{{range .Rows}}<tr class="execution" data-id="{{.ID}}"><td class="mark" aria-hidden="true">{{.Mark}}</td>
<td><a href="{{$.Path}}/{{.ID}}">{{.ID}}</a></td><td>{{.Pipeline}}</td>
<td class="status s-{{.Status}}">{{.Status}}</td><td>{{.StartedBy}}</td><td><time datetime="{{.Start.UTC.Format "2006-01-02T15:04:05Z"}}" title="{{.Start.UTC.Format "2006-01-02 15:04:05"}} UTC">{{.Ago}}</time></td><td>{{.Duration}}</td></tr>
{{end}}</tbody></table>{{else}}<p id="none">No executions{{if or .Filter.Pipeline .Filter.Status .Filter.User}} match the filter{{end}}{{if not .First}} on this page{{end}}.</p>{{end}}
<p>{{if not .First}}<a href="{{.Path}}?pipeline={{.Filter.Pipeline}}&amp;status={{.Filter.Status}}&amp;user={{.Filter.User}}" id="newest">newest</a> · {{end}}{{if .Next}}<a href="{{.Next}}" id="older">older →</a>{{end}}</p>
</body></html>`))
