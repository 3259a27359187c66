package webui

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// DecidePath serves the decision page of a waiting step, /gantry/decide/EXECUTION/STEP: an
// approval's vote, an intervention's actions or an execution-time input's fields, made as the
// signed-in user with the rules of the API.
const DecidePath = "/gantry/decide/"

// DecideURL is the decision page of a waiting step, on the Web UI at base.
func DecideURL(base, execution, path string) string {
	return strings.TrimSuffix(base, "/") + DecidePath + url.PathEscape(execution) + "/" + url.PathEscape(path)
}

// Decisions act on waiting steps for the decision pages.
type Decisions struct {
	Starter *starter.Starter
	// User is the user a token names, with the groups approvals check.
	User func(token string) (*identity.User, error)
	// Access authorizes interventions (abort), inputs (execute) and seeing the page (view,
	// or being one of an approval's approvers), and audits; nil allows everything.
	Access Access
}

// UserName turns a token's user lookup into the sign-in check, which names the user.
func UserName(user func(token string) (*identity.User, error)) func(string) (string, error) {
	return func(token string) (string, error) {
		u, err := user(token)
		if err != nil {
			return "", err
		}
		return u.Name, nil
	}
}

var decidePage = template.Must(template.New("decide").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Step}} · {{.Execution}}</title>
<style>body{font-family:sans-serif;max-width:44em;margin:1em 2em}input,textarea{width:100%;padding:.3em;margin:.2em 0 .6em}
button{margin:.2em .4em .2em 0;padding:.4em 1em}#result{padding:.6em;margin:1em 0;border:1px solid #080;background:#efe}#refused{padding:.6em;margin:1em 0;border:1px solid #b00;background:#fee}</style></head>
<body><p><a href="/namespaces/{{.Namespace}}/workflows/{{.Execution}}">{{.Execution}}</a> · step <b>{{.Step}}</b> · <span id="status">{{.Status}}</span> · signed in as {{.User}}</p>
{{if .Result}}<p id="result">{{.Result}}</p>{{end}}{{if .Refused}}<p id="refused">{{.Refused}}</p>{{end}}{{if .Unread}}<p id="unread">{{.Unread}}</p>{{end}}
{{if .Approval}}<h1>Approval</h1><p id="message">{{.Approval.Message}}</p>
<p>Approver groups: {{range $i, $g := .Approval.UserGroups}}{{if $i}}, {{end}}{{$g}}{{end}} · {{.Approval.Approvals}} of {{.Approval.MinimumCount}} approvals</p>
<form method="post">{{range .Approval.Inputs}}<label>{{.}}<input name="input.{{.}}" id="input-{{.}}"></label>{{end}}
<label>Comment<textarea name="comments" id="comments"></textarea></label>
<button type="submit" name="decision" value="APPROVE" id="approve">Approve</button><button type="submit" name="decision" value="REJECT" id="reject">Reject</button></form>{{end}}
{{with .Ticket}}<h1>Waiting on {{if eq .System "Custom"}}a script{{else}}{{.System}} {{if .URL}}<a id="ticket" href="{{.URL}}">{{.Ticket}}</a>{{else}}<span id="ticket">{{.Ticket}}</span>{{end}}{{end}}</h1>
<p>The {{if eq .System "Custom"}}script's outputs decide{{else}}ticket decides{{end}}: nothing is approved here.</p>
<p>Approves when: <code id="approval">{{.Approval}}</code>{{if .Rejection}}<br>Rejects when: <code id="rejection">{{.Rejection}}</code>{{end}}</p>
{{if .Unmet}}<p>Not met yet:</p><ul id="unmet">{{range .Unmet}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Window}}<p id="window">{{.Window}}</p>{{end}}{{if .Error}}<p id="refused">The last read failed, retrying: {{.Error}}</p>{{end}}{{end}}
{{if .Actions}}<h1>Manual intervention</h1><form method="post">{{range .Actions}}<button type="submit" name="decision" value="action:{{.}}" id="action-{{.}}">{{.}}</button>{{end}}</form>{{end}}
{{if .Inputs}}<h1>Inputs</h1><form method="post">{{range .Inputs}}<label>{{.}}<input name="input.{{.}}" id="input-{{.}}"></label>{{end}}
<button type="submit" name="decision" value="INPUT" id="submit-inputs">Submit</button></form>{{end}}
{{if .Ended}}<h1>Decided</h1><p id="ended">Nothing waits here any more: the step is <b>{{.Status}}</b>.</p>
{{with .Votes}}<table id="votes"><thead><tr><th>Who</th><th>Decision</th><th>When</th><th>Comment</th><th>Inputs</th></tr></thead><tbody>
{{range .}}<tr><td>{{.Who}}</td><td>{{.What}}</td><td>{{if not .At.IsZero}}<time datetime="{{.At.Format "2006-01-02T15:04:05Z07:00"}}" title="{{.At.Format "2006-01-02 15:04:05 UTC"}}">{{.When}}</time>{{end}}</td><td>{{.Comment}}</td><td>{{range $i, $in := .Inputs}}{{if $i}}; {{end}}{{$in}}{{end}}</td></tr>
{{end}}</tbody></table>{{end}}
{{with .Notes}}<ul id="notes">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}
</body></html>`))

// handler serves the decision page: GET shows what the step waits for, POST acts as the
// signed-in user and shows the outcome or why it was refused.
func (d Decisions) handler(namespace string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		execution, step, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, DecidePath), "/")
		if !ok || execution == "" || step == "" {
			http.Error(w, "a decision is /gantry/decide/EXECUTION/STEP", http.StatusNotFound)
			return
		}
		user := signedIn(r, d.User)
		if user == nil {
			http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
			return
		}
		data := map[string]any{"Execution": execution, "Step": step, "User": user.Name, "Namespace": namespace}
		if r.Method == http.MethodPost {
			// Only this page may decide: no form posted from another site.
			if o := r.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					http.Error(w, "a decision from another origin", http.StatusForbidden)
					return
				}
			}
			msg, err := d.act(r, execution, step, user)
			d.audit(r, execution, step, user, err)
			var ref *starter.Refused
			switch {
			case access.Forbidden(err):
				w.WriteHeader(http.StatusForbidden)
				data["Refused"] = err.Error()
			case errors.As(err, &ref):
				w.WriteHeader(http.StatusConflict)
				data["Refused"] = ref.Message
			case err != nil:
				w.WriteHeader(http.StatusBadGateway)
				data["Refused"] = err.Error()
			default:
				data["Result"] = msg
			}
		}
		tree, err := d.Starter.Tree(r.Context(), execution)
		var n *workflows.Node
		if tree != nil {
			n = tree.Find(step)
		}
		if (err != nil && !errors.Is(err, starter.ErrNotFound)) || n == nil {
			if r.Method == http.MethodPost {
				// The decision was sent: its outcome is the answer, even when the execution
				// cannot be read just after it (a stage that the decision ended has left the
				// pipeline's tree until the pipeline records its result).
				data["Unread"] = "the step cannot be read just now; reload the execution's page to see where it is"
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.Header().Set("Cache-Control", "no-store")
				_ = decidePage.Execute(w, data)
				return
			}
			if err != nil && !errors.Is(err, starter.ErrNotFound) {
				http.Error(w, "read execution "+execution+": "+err.Error(), http.StatusBadGateway)
				return
			}
			http.Error(w, "execution "+execution+" has no step "+step+" running", http.StatusNotFound)
			return
		}
		if err := d.allowPage(r, user, execution, n); err != nil {
			if access.Forbidden(err) {
				d.Access.Audit(r.Context(), workflows.AuditRecord{User: user.Name, Action: "view", Execution: execution, Path: step, Outcome: "refused", Detail: err.Error()})
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
			http.Error(w, "execution "+execution+": "+err.Error(), http.StatusBadGateway)
			return
		}
		data["Status"] = n.Status
		switch n.Status {
		case status.ApprovalWaiting:
			data["Approval"] = n.Approval
			data["Ticket"] = n.Ticket
		case status.InterventionWaiting:
			data["Actions"] = n.Actions
		case status.InputWaiting:
			data["Inputs"] = n.Inputs
		default:
			data["Ended"], data["Votes"], data["Notes"] = true, votesOf(n, time.Now()), decisionNotes(n)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = decidePage.Execute(w, data)
	})
}

// vote is one approver's vote, as the decided page lists it.
type vote struct {
	Who, What, Comment, When string
	At                       time.Time
	Inputs                   []string // "name = value"
}

// votesOf are an approval's votes from its outputs (approvalActivities), in order; now
// words how long ago each was cast.
func votesOf(n *workflows.Node, now time.Time) []vote {
	acts, _ := n.Outputs["approvalActivities"].([]any)
	out := make([]vote, 0, len(acts))
	str := func(v any) string { s, _ := v.(string); return s }
	for _, a := range acts {
		m, _ := a.(map[string]any)
		user, _ := m["user"].(map[string]any)
		v := vote{Who: str(user["name"]), Comment: str(m["comments"])}
		switch str(m["action"]) {
		case "APPROVE":
			v.What = "approved"
		case "REJECT":
			v.What = "rejected"
		default:
			v.What = strings.ToLower(str(m["action"]))
		}
		if ms, ok := m["approvedAt"].(float64); ok {
			v.At = time.UnixMilli(int64(ms)).UTC()
			v.When = ago(now.Sub(v.At))
		}
		ins, _ := m["approverInputs"].([]any)
		for _, in := range ins {
			kv, _ := in.(map[string]any)
			v.Inputs = append(v.Inputs, str(kv["name"])+" = "+fmt.Sprint(kv["value"]))
		}
		out = append(out, v)
	}
	return out
}

// decisionNotes are what the step's node records of the decisions taken on it: interventions,
// inputs supplied, the failure strategy chosen and by whom.
func decisionNotes(n *workflows.Node) []string {
	notes := slices.Clone(n.Notes)
	if st := n.Strategy; st != nil && st.By != "" {
		notes = append(notes, "failure strategy "+st.Action+", chosen by "+st.By)
	}
	return notes
}

// act sends the form's decision as user.
func (d Decisions) act(r *http.Request, execution, step string, user *identity.User) (string, error) {
	decision := r.PostFormValue("decision")
	inputs := map[string]string{}
	for k, v := range r.PostForm {
		if name, ok := strings.CutPrefix(k, "input."); ok && len(v) > 0 && v[0] != "" {
			inputs[name] = v[0]
		}
	}
	var need identity.Action
	switch {
	case strings.HasPrefix(decision, "action:"):
		need = identity.Abort
	case decision == "INPUT":
		need = identity.Execute
	}
	if need != "" && d.Access != nil {
		if err := d.Access.Allow(r.Context(), user, need, execution); err != nil {
			return "", err
		}
	}
	switch {
	case decision == "APPROVE" || decision == "REJECT":
		return d.Starter.Approve(r.Context(), execution, workflows.ApprovalRequest{Path: step, Action: decision,
			User: user.Name, Email: user.Email, Groups: user.Groups, Comments: r.PostFormValue("comments"), Inputs: inputs})
	case strings.HasPrefix(decision, "action:"):
		return d.Starter.Intervene(r.Context(), execution, workflows.InterventionRequest{Path: step,
			Action: strings.TrimPrefix(decision, "action:"), User: user.Name})
	case decision == "INPUT":
		return d.Starter.SupplyInputs(r.Context(), execution, workflows.InputRequest{Path: step, User: user.Name, Values: inputs})
	}
	return "", errors.New("the form named no decision")
}

// allowPage lets a user see a step's decision page: with view on the pipeline, or as one of
// the approvers the waiting approval names.
func (d Decisions) allowPage(r *http.Request, user *identity.User, execution string, n *workflows.Node) error {
	if d.Access == nil {
		return nil
	}
	if n.Status == status.ApprovalWaiting && n.Approval != nil && user.InAnyGroup(n.Approval.UserGroups) {
		return nil
	}
	return d.Access.Allow(r.Context(), user, identity.View, execution)
}

// audit writes the audit line of a decision made on the page.
func (d Decisions) audit(r *http.Request, execution, step string, user *identity.User, err error) {
	if d.Access == nil {
		return
	}
	action, detail := strings.ToLower(r.PostFormValue("decision")), ""
	if a, ok := strings.CutPrefix(r.PostFormValue("decision"), "action:"); ok {
		action, detail = "intervene", a
	}
	rec := workflows.AuditRecord{User: user.Name, Action: action, Execution: execution, Path: step, Outcome: "ok", Detail: detail}
	switch {
	case access.Forbidden(err):
		rec.Outcome, rec.Detail = "refused", err.Error()
	case err != nil:
		rec.Outcome, rec.Detail = "failed", err.Error()
	}
	d.Access.Audit(r.Context(), rec)
}
