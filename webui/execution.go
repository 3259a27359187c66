package webui

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// The execution page, ExecutionsPath/ID, draws a run as people picture it: stages left to
// right, parallel ones stacked, each with its steps, groups, loop iterations and rollback; a
// node's details and a step's log beneath on selection. It follows the run through
// ExecutionsPath/ID?tree, the tree as JSON, read through the shared tree reads of the log
// pages: however many people watch an execution, the server reads its tree once per
// treeFresh.

// executionPage serves the execution page, its tree, and the actions on the execution
// (ExecutionsPath/ID/ACTION, posted from the page).
func executionPage(list ExecutionLister, trees *sharedTrees, userOf func(string) (*identity.User, error), acc Access, namespace string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, action, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, ExecutionsPath+"/"), "/")
		if id == "" || (r.Method == http.MethodGet) != (action == "") || strings.Contains(action, "/") {
			http.Error(w, "an execution is GET "+ExecutionsPath+"/EXECUTION; an action on it POST "+ExecutionsPath+"/EXECUTION/ACTION", http.StatusNotFound)
			return
		}
		_, asTree := r.URL.Query()["tree"]
		inputsOf, asInputs := r.URL.Query()["inputs"]
		verifyOf, asVerification := r.URL.Query()["verification"]
		asTree = asTree || asInputs
		user := signedIn(r, userOf)
		if user == nil {
			if asTree || action != "" { // the page reloads, and its reload signs in
				http.Error(w, "sign in first: "+SignInPath, http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if action != "" {
			act(w, r, list, acc, user, id, action)
			return
		}
		tree, err := trees.get(r.Context(), id)
		if errors.Is(err, starter.ErrNotFound) {
			http.Error(w, "execution "+id+" does not exist: see "+ExecutionsPath+" for the executions there are", http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, "read execution "+id+": "+err.Error(), http.StatusBadGateway)
			return
		}
		if err := allow(r, acc, user, identity.View, id); err != nil {
			refuse(w, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if asInputs {
			in, err := list.Input(r.Context(), id)
			if err != nil {
				refuse(w, err)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(nodeInputs(in.Plan, inputsOf[0]))
			return
		}
		if asVerification {
			verificationPage(w, id, tree, verifyOf[0], user.Name)
			return
		}
		if asTree {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(tree)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The tree just read comes with the page: it draws the run without asking again.
		initial, err := json.Marshal(tree)
		if err != nil {
			http.Error(w, "execution "+id+": "+err.Error(), http.StatusInternalServerError)
			return
		}
		_ = executionGraph.Execute(w, map[string]any{"Execution": id, "Name": tree.Name, "User": user.Name, "Namespace": namespace,
			"Tree":     template.JS(initial),
			"LogsPath": LogsPath, "DecidePath": DecidePath, "ExecutionsPath": ExecutionsPath,
			"CanAbort": allow(r, acc, user, identity.Abort, id) == nil, "CanRun": allowRun(r, list, acc, user, id) == nil,
			"Stages": stageIDs(tree), "Sources": tree.Sources})
	})
}

// allow authorizes action a on the execution for user; refusals go to the audit trail.
func allow(r *http.Request, acc Access, user *identity.User, a identity.Action, id string) error {
	if acc == nil {
		return nil
	}
	err := acc.Allow(r.Context(), user, a, id)
	if access.Forbidden(err) && a == identity.View {
		acc.Audit(r.Context(), workflows.AuditRecord{User: user.Name, Action: "view", Execution: id, Outcome: "refused", Detail: err.Error()})
	}
	return err
}

// allowRun authorizes running the execution's plan again as user.
func allowRun(r *http.Request, list ExecutionLister, acc Access, user *identity.User, id string) error {
	if acc == nil {
		return nil
	}
	in, err := list.Input(r.Context(), id)
	if err != nil {
		return err
	}
	return acc.AllowPlan(user, in.Plan)
}

// refuse answers a failed authorization: 403 with its reason, else the error reading what it
// needed.
func refuse(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	switch {
	case access.Forbidden(err):
		code = http.StatusForbidden
	case errors.Is(err, starter.ErrNotFound):
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}

// NodeInputs are what a node of the run was planned with: its spec (expressions in it are
// rendered when it runs), variables, execution-time inputs, condition and timeout; for the
// pipeline (path ""), its variables and codebase.
type NodeInputs struct {
	Spec      any              `json:"spec,omitempty"`
	Variables []plan.Variable  `json:"variables,omitempty"`
	Inputs    []plan.ExecInput `json:"inputs,omitempty"`
	When      string           `json:"when,omitempty"`
	Timeout   string           `json:"timeout,omitempty"`
	Codebase  *plan.Codebase   `json:"codebase,omitempty"`
}

// nodeInputs finds the node at path in p, an iteration of a loop as the loop's node (its
// identifier is the loop's and a suffix); nothing when p has no such node.
func nodeInputs(p *plan.Plan, path string) NodeInputs {
	if path == "" {
		return NodeInputs{Variables: p.Variables, Timeout: p.Timeout, Codebase: p.Codebase}
	}
	level := p.Stages
	var n *plan.Node
	for _, seg := range strings.Split(path, ".") {
		n = nil
		for _, c := range flatten(level) {
			if c.ID == seg || (c.Strategy != nil && strings.HasPrefix(seg, c.ID+"_")) {
				n = c
				break
			}
		}
		if n == nil {
			return NodeInputs{}
		}
		level = append(append([]*plan.Node{}, n.Children...), n.Rollback...)
	}
	return NodeInputs{Spec: n.Spec, Variables: n.Variables, Inputs: n.Inputs, When: n.When, Timeout: n.Timeout}
}

// flatten is nodes with the members of parallel blocks in place of the blocks.
func flatten(nodes []*plan.Node) []*plan.Node {
	var out []*plan.Node
	for _, n := range nodes {
		if n.Kind == plan.KindParallel {
			out = append(out, flatten(n.Children)...)
		} else {
			out = append(out, n)
		}
	}
	return out
}

// stageIDs are the identifiers of the run's stages, in order, for retry from a stage.
func stageIDs(n *workflows.Node) []string {
	var out []string
	for _, c := range n.Children {
		switch c.Kind {
		case "stage":
			out = append(out, c.ID)
		case "parallel":
			out = append(out, stageIDs(c)...)
		}
	}
	return out
}

// act applies an action posted from the execution page as user, with the rules of the API
// (abort, pause and resume need abort; re-run and retry running the plan again), and audits
// it. It answers the outcome's message as text (for a re-run or retry, the new execution's
// ID in X-Gantry-Execution).
func act(w http.ResponseWriter, r *http.Request, list ExecutionLister, acc Access, user *identity.User, id, action string) {
	// Only the page may act: no form posted from another site.
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "an action from another origin", http.StatusForbidden)
			return
		}
	}
	var msg, started string
	var err error
	switch action {
	case "abort", "pause", "resume":
		if err = allow(r, acc, user, identity.Abort, id); err != nil {
			break
		}
		if action == "abort" {
			if err = list.Abort(r.Context(), id, user.Name, r.PostFormValue("reason")); err == nil {
				msg = "abort requested by " + user.Name
			}
		} else {
			msg, err = list.Pause(r.Context(), id, user.Name, action == "pause")
		}
	case "rerun", "retry":
		if err = allowRun(r, list, acc, user, id); err != nil {
			break
		}
		trig := workflows.Trigger{Type: "MANUAL", User: user.Name}
		var exec starter.Execution
		if action == "retry" {
			exec, err = list.Retry(r.Context(), id, r.PostFormValue("stage"), trig)
		} else {
			exec, err = list.Rerun(r.Context(), id, trig)
		}
		started, msg = exec.ID, "started "+exec.ID
	default:
		http.Error(w, "no action "+action+": abort, pause, resume, rerun or retry", http.StatusNotFound)
		return
	}
	if acc != nil {
		rec := workflows.AuditRecord{User: user.Name, Action: action, Execution: id, Outcome: "ok", Detail: started}
		switch {
		case access.Forbidden(err):
			rec.Outcome, rec.Detail = "refused", err.Error()
		case err != nil:
			rec.Outcome, rec.Detail = "failed", err.Error()
		}
		acc.Audit(r.Context(), rec)
	}
	var refused *starter.Refused
	switch {
	case access.Forbidden(err):
		http.Error(w, err.Error(), http.StatusForbidden)
	case errors.As(err, &refused):
		http.Error(w, refused.Message, http.StatusConflict)
	case err != nil:
		refuse(w, err)
	default:
		w.Header().Set("X-Gantry-Execution", started)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(msg))
	}
}

var executionGraph = template.Must(template.New("execution").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Execution}} · Gantry</title>
<meta name="color-scheme" content="light dark">
<style>
body{font-family:sans-serif;margin:1em 2em}
#flow{display:flex;align-items:flex-start;gap:2.2em;overflow-x:auto;padding:.5em 0 1em}
.col{display:flex;flex-direction:column;gap:.8em;position:relative}
.col+.col::before{content:"→";position:absolute;left:-1.6em;top:.6em;font-size:1.2em;opacity:.6}
.box{border:1px solid #8888;border-radius:6px;padding:.4em;min-width:13em;display:flex;flex-direction:column;gap:.3em}
.box.kind-rollback{border-style:dashed}.box.kind-strategy,.box.kind-batch{border-style:dotted}
.parallel{display:flex;gap:.5em;align-items:flex-start}
.node{display:flex;gap:.4em;align-items:baseline;text-align:left;font:inherit;background:none;color:inherit;border:1px solid transparent;border-radius:4px;padding:.2em .3em;cursor:pointer;width:100%}
.node[aria-pressed=true]{border-color:#36f;background:#36f2}.node:focus{outline:2px solid #36f;outline-offset:1px}
.mark{width:1.2em}.meta{opacity:.75;font-size:.85em;margin-left:auto;white-space:nowrap}
.s-SUCCEEDED .mark,.s-IGNORE_FAILED .mark{color:#070}.s-FAILED .mark,.s-ERRORED .mark,.s-EXPIRED .mark,.s-APPROVAL_REJECTED .mark,.s-FREEZE_FAILED .mark{color:#b00}
.failure{border:1px solid #b00;background:#b001;padding:.4em;margin:.4em 0;white-space:pre-wrap}
#details{border-top:1px solid #8888;margin-top:.5em;padding-top:.5em}#details dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}
pre{background:#111;color:#ddd;padding:1em;white-space:pre-wrap;word-break:break-all;font-size:13px;max-height:32em;overflow:auto}
table.values,table.votes{border-collapse:collapse;margin:.3em 0}table.values>tbody>tr>*,table.values>tr>*,table.votes td,table.votes th{text-align:left;vertical-align:top;padding:.2em .8em .2em 0;border-bottom:1px solid #8884;word-break:break-word}
table.values th{font-weight:600;white-space:nowrap}
#waiting{border:1px solid #c80;background:#c801;padding:.4em .6em;margin:.4em 0;border-radius:6px}#waiting button{margin:.1em .3em;font:inherit;cursor:pointer}
@media (prefers-color-scheme: dark){.s-SUCCEEDED .mark,.s-IGNORE_FAILED .mark{color:#6d6}.s-FAILED .mark,.s-ERRORED .mark,.s-EXPIRED .mark,.s-APPROVAL_REJECTED .mark,.s-FREEZE_FAILED .mark{color:#f77}a{color:#8af}}
</style></head>
<body><p><a href="{{.ExecutionsPath}}">Pipeline executions</a> · <b>{{.Name}}</b> <span id="execution">{{.Execution}}</span> · <span id="status"></span> · signed in as {{.User}} ·
<a href="/namespaces/{{.Namespace}}/workflows/{{.Execution}}">history in the Temporal UI</a></p>
<p id="actions">{{if .CanAbort}}<button type="button" id="act-abort" data-action="abort">Abort</button> <button type="button" id="act-pause" data-action="pause">Pause</button> <button type="button" id="act-resume" data-action="resume">Resume</button> {{end}}{{if .CanRun}}<button type="button" id="act-rerun" data-action="rerun">Re-run</button> <label>Retry from stage <select id="retry-stage">{{range .Stages}}<option>{{.}}</option>{{end}}</select></label> <button type="button" id="act-retry" data-action="retry">Retry</button>{{end}} <span id="act-result" role="status"></span></p>
{{if .Sources}}<details id="sources"><summary>Read from Git: {{range $i, $s := .Sources}}{{if $i}}, {{end}}{{$s.Kind}} {{$s.Identifier}}{{end}}</summary><dl>{{range .Sources}}<dt>{{.Kind}} {{.Identifier}}</dt><dd>{{.Repo}} <code title="{{.Commit}}">{{slice .Commit 0 12}}</code> {{.FilePath}} (branch {{.Branch}}, connector {{.Connector}})</dd>{{end}}</dl></details>{{end}}
<div id="waiting" role="status" aria-live="polite" hidden></div>
<div id="flow" aria-label="the run's stages, left to right"></div>
<section id="details" hidden><div id="decision"></div><div id="info"></div><div id="planned"></div><div id="logbox"></div></section>
<script>
(function () {
  var exec = {{.Execution}}, ns = {{.Namespace}}, logs = {{.LogsPath}}, decide = {{.DecidePath}};
  var flow = document.getElementById("flow"), details = document.getElementById("details"), st = document.getElementById("status");
  var ended = {"SUCCEEDED":1,"FAILED":1,"ERRORED":1,"ABORTED":1,"EXPIRED":1,"APPROVAL_REJECTED":1,"IGNORE_FAILED":1,"SKIPPED":1,"FREEZE_FAILED":1,"TERMINATED":1};
  var failedSet = {"FAILED":1,"ERRORED":1,"EXPIRED":1,"APPROVAL_REJECTED":1,"FREEZE_FAILED":1};
  var tree = null, selected = decodeURIComponent(location.hash.slice(1)), log = {path: null, from: 0, timer: null}, expanded = {};
  var mark = function (s) {
    if (s === "SUCCEEDED" || s === "IGNORE_FAILED") return "✓";
    if (s === "ABORTED" || s === "TERMINATED") return "■";
    if (s === "RUNNING") return "▶";
    if (/^QUEUED/.test(s) || s === "RESOURCE_WAITING") return "⧗";
    if (/_WAITING$/.test(s) || s === "PAUSED" || s === "PAUSING") return "‖";
    if (failedSet[s]) return "✗";
    return "○";
  };
  function dur(n) {
    if (!n.startedAt) return "";
    var ms = (n.endedAt ? new Date(n.endedAt) : new Date()) - new Date(n.startedAt);
    if (ms < 1000) return ms + "ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + "s";
    var s = Math.round(ms / 1000), h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
    return (h ? h + "h" : "") + m + "m" + (s % 60) + "s";
  }
  // waitsFor words what a queued node waits for: the key and who holds it.
  function waitsFor(r) {
    var what = {queue: "queue key ", infrastructure: "infrastructure ", concurrency: "a place under the limit of "}[r.kind] || "";
    return "waits for " + what + r.key + (r.holder ? ", held by " + r.holder : "") + (r.ahead ? ", " + r.ahead + " ahead" : "");
  }
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; }
  function label(n) { return n.kind === "rollback" ? "Rollback" : (n.name || n.id || n.kind); }
  function button(n, extra) {
    var b = el("button", "node s-" + n.status);
    b.type = "button"; b.dataset.path = n.path; b.dataset.kind = n.kind;
    b.setAttribute("aria-pressed", String(n.path === selected));
    var meta = [n.status, dur(n), n.attempts > 1 ? "attempt " + n.attempts : "", n.worker || "", n.resource ? waitsFor(n.resource) : "", extra || ""].filter(Boolean).join(" · ");
    b.append(el("span", "mark", mark(n.status)), el("span", "name", label(n)), el("span", "meta", meta));
    if (n.failure) b.title = n.failure.message;
    b.onclick = function () { select(n.path); };
    return b;
  }
  function children(parent, kids, loop) {
    kids = (kids || []).slice();
    if (loop) kids.sort(function (a, b) { return (failedSet[b.status] ? 1 : 0) - (failedSet[a.status] ? 1 : 0); });
    var shown = loop && kids.length > 20 && !expanded[parent.dataset.path] ? 20 : kids.length;
    kids.slice(0, shown).forEach(function (k) {
      if (k.kind === "parallel") {
        var row = el("div", "parallel");
        (k.children || []).forEach(function (c) { row.append(node(c)); });
        parent.append(row);
      } else parent.append(node(k));
    });
    if (shown < kids.length) {
      var more = el("button", "node more", "… " + (kids.length - shown) + " more");
      more.type = "button";
      more.onclick = function () { expanded[parent.dataset.path] = true; render(); };
      parent.append(more);
    }
  }
  function node(n) {
    if (n.kind === "step" && !(n.children || []).length) {
      if (!n.failure) return button(n);
      var w = el("div", "failed-step");
      w.append(button(n), el("div", "failure", n.failure.message));
      return w;
    }
    var box = el("div", "box kind-" + n.kind);
    box.dataset.path = n.path;
    var extra = "";
    if (n.kind === "strategy" || n.kind === "batch") {
      var f = (n.children || []).filter(function (c) { return failedSet[c.status]; }).length;
      extra = (n.children || []).length + " iterations" + (f ? ", " + f + " failed" : "");
    }
    box.append(button(n, extra));
    if (n.failure) box.append(el("div", "failure", n.failure.message));
    children(box, n.children, n.kind === "strategy" || n.kind === "batch");
    return box;
  }
  function find(n, path) {
    if (n.path === path && n.kind !== "parallel") return n;
    for (var i = 0; n.children && i < n.children.length; i++) { var f = find(n.children[i], path); if (f) return f; }
    return null;
  }
  // showWaiting lists, above the graph, the steps that wait for a person (an approval, an
  // intervention, execution-time inputs) or for a Queue key, each a button that opens it.
  var waitingBox = document.getElementById("waiting");
  function showWaiting() {
    var found = [];
    (function walk(n) {
      if (n.kind === "step" && (/_WAITING$/.test(n.status) || /^QUEUED/.test(n.status))) found.push(n);
      (n.children || []).forEach(walk);
    })(tree);
    waitingBox.hidden = !found.length;
    if (!found.length) { waitingBox.replaceChildren(); return; }
    var items = [el("b", "", found.length === 1 ? "Waiting: " : found.length + " waiting: ")];
    found.forEach(function (n, i) {
      var what = {APPROVAL_WAITING: "an approval", INTERVENTION_WAITING: "a manual intervention", INPUT_WAITING: "inputs"}[n.status] ||
        (n.resource ? waitsFor(n.resource).replace(/^waits for /, "") : n.status.toLowerCase().replace(/_/g, " "));
      var b = el("button", "waits", label(n) + " (" + n.path + ") waits for " + what);
      b.type = "button"; b.onclick = function () { select(n.path); };
      if (i) items.push(" ");
      items.push(b);
    });
    waitingBox.replaceChildren.apply(waitingBox, items);
  }
  function render() {
    if (!tree) return;
    st.textContent = mark(tree.status) + " " + tree.status + " " + dur(tree);
    showActions();
    var cols = el("div", "");
    cols.style.display = "contents";
    (tree.children || []).forEach(function (s) {
      var col = el("div", "col");
      if (s.kind === "parallel") (s.children || []).forEach(function (c) { col.append(node(c)); });
      else col.append(node(s));
      cols.append(col);
    });
    showWaiting();
    var focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.path : null;
    flow.replaceChildren(cols);
    if (focused != null) { var again = flow.querySelector('[data-path="' + CSS.escape(focused) + '"].node'); if (again) again.focus(); }
    showDetails();
  }
  function select(path) {
    selected = path;
    history.replaceState(null, "", "#" + encodeURIComponent(path));
    render();
  }
  function row(dl, k, v) { if (v) dl.append(el("dt", "", k), el("dd", "", v)); }
  // values shows a step's inputs or outputs as a table of names and values (times given in
  // epoch milliseconds, such as an approval's approvedAt, as UTC times; an approval's votes as
  // a table of their own), the JSON behind a toggle.
  function utc(ms) { return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC"; }
  function cell(k, v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number" && /At$/.test(k) && v > 1e12) return utc(v);
    if (typeof v !== "object") return String(v);
    if (k === "approvalActivities" && Array.isArray(v)) {
      var t = el("table", "votes"), h = el("tr");
      ["who", "decision", "when", "comment", "inputs"].forEach(function (c) { h.append(el("th", "", c)); });
      t.append(h);
      v.forEach(function (a) {
        var r = el("tr");
        [a.user && a.user.name, a.action === "APPROVE" ? "approved" : a.action === "REJECT" ? "rejected" : a.action,
         a.approvedAt ? utc(a.approvedAt) : "", a.comments, (a.approverInputs || []).map(function (i) { return i.name + " = " + i.value; }).join("; ")
        ].forEach(function (c) { r.append(el("td", "", c || "")); });
        t.append(r);
      });
      return t;
    }
    return JSON.stringify(v);
  }
  function values(obj, cls) {
    var box = el("div", cls), t = el("table", "values");
    Object.keys(obj).sort().forEach(function (k) {
      var r = el("tr"), c = cell(k, obj[k]), d = el("td");
      d.append(c);
      r.append(el("th", "", k), d);
      t.append(r);
    });
    var raw = el("details"), sum = el("summary", "", "JSON");
    raw.append(sum, el("pre", "", JSON.stringify(obj, null, 2)));
    box.append(t, raw);
    return box;
  }
  var info = document.getElementById("info"), planned = document.getElementById("planned"), decision = document.getElementById("decision"), logbox = document.getElementById("logbox"), shown = {};
  function showDetails() {
    var n = selected ? find(tree, selected) : null;
    if (!n) { details.hidden = true; log.path = null; shown = {}; return; }
    details.hidden = false;
    var head = el("h2", "", mark(n.status) + " " + label(n));
    var dl = el("dl");
    row(dl, "status", n.status); row(dl, "kind", n.kind + (n.type ? " (" + n.type + ")" : ""));
    row(dl, "started", n.startedAt ? new Date(n.startedAt).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "");
    row(dl, "duration", dur(n)); row(dl, "attempts", n.attempts > 1 ? String(n.attempts) : ""); row(dl, "ran on", n.worker || "");
    if (n.tests) row(dl, "tests", n.tests.total + " run, " + n.tests.failed + " failed");
    if (n.resource) {
      var wait = el("dd", "", waitsFor(n.resource));
      var holder = (n.resource.holder || "").split(" ")[0];
      if (holder && holder !== exec) { var h = el("a", "", "the holder's run"); h.href = location.pathname.slice(0, location.pathname.lastIndexOf("/") + 1) + encodeURIComponent(holder); wait.append(" (", h, ")"); }
      dl.append(el("dt", "", "queued"), wait);
    }
    var parts = [head, dl];
    if (n.failure) parts.push(el("div", "failure", (n.failure.category ? n.failure.category + ": " : "") + n.failure.message));
    (n.notes || []).forEach(function (t) { parts.push(el("p", "note", t)); });
    if (n.outputs) { parts.push(el("h3", "", "Outputs")); parts.push(values(n.outputs, "outputs")); }
    var links = el("p", "links");
    if (n.kind === "stage") { var a = el("a", "", "stage history in the Temporal UI"); a.href = "/namespaces/" + ns + "/workflows/" + encodeURIComponent(exec + "/" + n.id); links.append(a); }
    if (n.kind === "step" && n.startedAt) { var full = el("a", "", "log page"); full.href = logs + exec + "/" + n.path; links.append(full); }
    if (n.type === "Verify" && n.startedAt) { var v = el("a", "", "verification"); v.href = location.pathname + "?verification=" + encodeURIComponent(n.path); links.append(" · ", v); }
    parts.push(links);
    info.replaceChildren.apply(info, parts);
    // The decision form and the log stay in place while the graph refreshes: a form being
    // filled in keeps what was typed, the log its scroll.
    // A form stays once the step it was shown for has moved on: it shows the outcome of the
    // decision that moved it, which a refresh of the graph may see first.
    var waiting = n.kind === "step" && /_WAITING$/.test(n.status) && n.status !== "RESOURCE_WAITING";
    var form = waiting || shown.decision === n.path ? n.path : "";
    if (shown.decision !== form) {
      shown.decision = form;
      decision.replaceChildren();
      if (form) {
        var f = el("iframe"); f.id = "decide"; f.title = "the decision " + label(n) + " waits for";
        f.src = decide + exec + "/" + n.path; f.style.cssText = "width:100%;height:26em;border:1px solid #8888";
        decision.append(f);
      }
    }
    if (shown.inputs !== n.path) {
      shown.inputs = n.path;
      planned.replaceChildren();
      fetch(location.pathname + "?inputs=" + encodeURIComponent(n.kind === "pipeline" ? "" : n.path), {credentials: "same-origin"}).then(function (r) {
        return r.ok ? r.json() : null;
      }).then(function (v) {
        if (!v || shown.inputs !== n.path || !Object.keys(v).length) return;
        planned.replaceChildren(el("h3", "", "Inputs, as planned (expressions resolve when it runs)"), values(v, "inputs"));
      }).catch(function () {});
    }
    var logged = n.kind === "step" && n.startedAt ? n.path : "";
    if (shown.log !== logged) {
      shown.log = logged;
      logbox.replaceChildren();
      log.path = logged || null;
      if (logged) {
        var pre = el("pre", ""); pre.id = "log"; pre.hidden = true; logbox.append(pre);
        log.from = 0; log.text = ""; pollLog();
      }
    }
  }
  function pollLog() {
    var path = log.path;
    if (!path) return;
    clearTimeout(log.timer);
    fetch(logs + exec + "/" + path + "?from=" + log.from, {credentials: "same-origin"}).then(function (r) {
      if (r.status === 401) { location.reload(); return; }
      var status = r.headers.get("X-Gantry-Status") || "";
      if (!r.ok) { // no log (yet): ask again less often, and not once the step has ended
        var n = tree && find(tree, path);
        if (log.path === path && !(n && ended[n.status])) log.timer = setTimeout(pollLog, 5000);
        return;
      }
      return r.text().then(function (text) {
        if (log.path !== path) return;
        if (text && r.ok) { log.text += text; log.from += new TextEncoder().encode(text).length; var pre = document.getElementById("log"); if (pre) { pre.hidden = false; pre.textContent = log.text; pre.scrollTop = pre.scrollHeight; } }
        if (!ended[status]) log.timer = setTimeout(pollLog, 1000);
      });
    }).catch(function () { log.timer = setTimeout(pollLog, 2000); });
  }
  var actions = document.querySelectorAll("#actions button"), result = document.getElementById("act-result");
  actions.forEach(function (b) {
    b.onclick = function () {
      var a = b.dataset.action, body = new URLSearchParams();
      if (a === "abort" && !confirm("Abort " + exec + "?")) return;
      if (a === "retry") body.set("stage", document.getElementById("retry-stage").value);
      fetch(location.pathname + "/" + a, {method: "POST", body: body, credentials: "same-origin"}).then(function (r) {
        if (r.status === 401) { location.reload(); return; }
        var next = r.headers.get("X-Gantry-Execution");
        return r.text().then(function (t) {
          result.textContent = t.trim();
          if (r.ok && next) location.href = {{.ExecutionsPath}} + "/" + encodeURIComponent(next);
        });
      });
    };
  });
  function showActions() {
    var s = tree.status, done = !!ended[s], paused = s === "PAUSED" || s === "PAUSING";
    var show = {"abort": !done, "pause": !done && !paused, "resume": paused, "rerun": done, "retry": done};
    actions.forEach(function (b) { b.hidden = !show[b.dataset.action]; });
    var sel = document.getElementById("retry-stage");
    if (sel) sel.parentNode.hidden = !done;
  }
  function poll() {
    fetch(location.pathname + "?tree", {credentials: "same-origin"}).then(function (r) {
      if (r.status === 401) { location.reload(); return; }
      if (!r.ok) { setTimeout(poll, 3000); return; }
      return r.json().then(function (t) { tree = t; render(); if (!ended[t.status]) setTimeout(poll, 1000); });
    }).catch(function () { setTimeout(poll, 3000); });
  }
  tree = {{.Tree}};
  render();
  if (!ended[tree.status]) setTimeout(poll, 1000);
})();
</script></body></html>`))
