package webui

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// The execution page, ExecutionsPath/ID, draws a run as people picture it: stages left to
// right, parallel ones stacked, each with its steps, groups, loop iterations and rollback; a
// node's details and a step's log beneath on selection. It follows the run through
// ExecutionsPath/ID?tree, the tree as JSON, read through the shared tree reads of the log
// pages: however many people watch an execution, the server reads its tree once per
// treeFresh.

// executionPage serves the execution page and its tree.
func executionPage(trees *sharedTrees, userOf func(string) (*identity.User, error), acc Access, namespace string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET", http.StatusMethodNotAllowed)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, ExecutionsPath+"/")
		if id == "" || strings.Contains(id, "/") {
			http.Error(w, "an execution is "+ExecutionsPath+"/EXECUTION", http.StatusNotFound)
			return
		}
		_, asTree := r.URL.Query()["tree"]
		var user *identity.User
		if ck, err := r.Cookie(codec.TokenCookie); err == nil {
			user, _ = userOf(ck.Value)
		}
		if user == nil {
			if asTree { // the page reloads, and its reload signs in
				http.Error(w, "sign in first: "+SignInPath, http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
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
		if acc != nil {
			if err := acc.Allow(r.Context(), user, identity.View, id); err != nil {
				code := http.StatusBadGateway
				if access.Forbidden(err) {
					code = http.StatusForbidden
					acc.Audit(r.Context(), workflows.AuditRecord{User: user.Name, Action: "view", Execution: id, Outcome: "refused", Detail: err.Error()})
				}
				http.Error(w, err.Error(), code)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		if asTree {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(tree)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = executionGraph.Execute(w, map[string]any{"Execution": id, "Name": tree.Name, "User": user.Name, "Namespace": namespace,
			"LogsPath": LogsPath, "DecidePath": DecidePath, "ExecutionsPath": ExecutionsPath})
	})
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
@media (prefers-color-scheme: dark){.s-SUCCEEDED .mark,.s-IGNORE_FAILED .mark{color:#6d6}.s-FAILED .mark,.s-ERRORED .mark,.s-EXPIRED .mark,.s-APPROVAL_REJECTED .mark,.s-FREEZE_FAILED .mark{color:#f77}a{color:#8af}}
</style></head>
<body><p><a href="{{.ExecutionsPath}}">Pipeline executions</a> · <b>{{.Name}}</b> <span id="execution">{{.Execution}}</span> · <span id="status"></span> · signed in as {{.User}} ·
<a href="/namespaces/{{.Namespace}}/workflows/{{.Execution}}">history in the Temporal UI</a></p>
<div id="flow" aria-label="the run's stages, left to right"></div>
<section id="details" hidden></section>
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
    if (/_WAITING$/.test(s) || s === "PAUSED" || s === "PAUSING") return "⏸";
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
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; }
  function label(n) { return n.kind === "rollback" ? "Rollback" : (n.name || n.id || n.kind); }
  function button(n, extra) {
    var b = el("button", "node s-" + n.status);
    b.type = "button"; b.dataset.path = n.path; b.dataset.kind = n.kind;
    b.setAttribute("aria-pressed", String(n.path === selected));
    var meta = [n.status, dur(n), n.attempts > 1 ? "attempt " + n.attempts : "", n.worker || "", extra || ""].filter(Boolean).join(" · ");
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
  function render() {
    if (!tree) return;
    st.textContent = mark(tree.status) + " " + tree.status + " " + dur(tree);
    var cols = el("div", "");
    cols.style.display = "contents";
    (tree.children || []).forEach(function (s) {
      var col = el("div", "col");
      if (s.kind === "parallel") (s.children || []).forEach(function (c) { col.append(node(c)); });
      else col.append(node(s));
      cols.append(col);
    });
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
  function showDetails() {
    var n = selected ? find(tree, selected) : null;
    if (!n) { details.hidden = true; return; }
    details.hidden = false;
    var head = el("h2", "", mark(n.status) + " " + label(n));
    var dl = el("dl");
    row(dl, "status", n.status); row(dl, "kind", n.kind + (n.type ? " (" + n.type + ")" : ""));
    row(dl, "started", n.startedAt ? new Date(n.startedAt).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "");
    row(dl, "duration", dur(n)); row(dl, "attempts", n.attempts > 1 ? String(n.attempts) : ""); row(dl, "ran on", n.worker || "");
    if (n.tests) row(dl, "tests", n.tests.total + " run, " + n.tests.failed + " failed");
    var parts = [head, dl];
    if (n.failure) parts.push(el("div", "failure", (n.failure.category ? n.failure.category + ": " : "") + n.failure.message));
    (n.notes || []).forEach(function (t) { parts.push(el("p", "note", t)); });
    if (n.outputs) { parts.push(el("h3", "", "Outputs")); parts.push(el("pre", "outputs", JSON.stringify(n.outputs, null, 2))); }
    var links = el("p", "links");
    if (n.kind === "stage") { var a = el("a", "", "stage history in the Temporal UI"); a.href = "/namespaces/" + ns + "/workflows/" + encodeURIComponent(exec + "/" + n.id); links.append(a); }
    if (/_WAITING$/.test(n.status) && n.kind === "step") { var d = el("a", "", "decide"); d.href = decide + exec + "/" + n.path; d.id = "decide"; links.append(d); }
    parts.push(links);
    if (n.kind === "step" && n.startedAt) {
      var full = el("a", "", "log page"); full.href = logs + exec + "/" + n.path; links.append(document.createTextNode(" "), full);
      if (log.path !== n.path) { log = {path: n.path, from: 0, text: "", timer: log.timer}; pollLog(); }
      var pre = el("pre", "", log.text); pre.id = "log"; parts.push(pre);
    } else log.path = null;
    details.replaceChildren.apply(details, parts);
  }
  function pollLog() {
    var path = log.path;
    if (!path) return;
    clearTimeout(log.timer);
    fetch(logs + exec + "/" + path + "?from=" + log.from, {credentials: "same-origin"}).then(function (r) {
      if (r.status === 401) { location.reload(); return; }
      var status = r.headers.get("X-Gantry-Status") || "";
      return r.text().then(function (text) {
        if (log.path !== path) return;
        if (text && r.ok) { log.text += text; log.from += new TextEncoder().encode(text).length; var pre = document.getElementById("log"); if (pre) { pre.textContent = log.text; pre.scrollTop = pre.scrollHeight; } }
        if (!ended[status]) log.timer = setTimeout(pollLog, 1000);
      });
    }).catch(function () { log.timer = setTimeout(pollLog, 2000); });
  }
  function poll() {
    fetch(location.pathname + "?tree", {credentials: "same-origin"}).then(function (r) {
      if (r.status === 401) { location.reload(); return; }
      if (!r.ok) { setTimeout(poll, 3000); return; }
      return r.json().then(function (t) { tree = t; render(); if (!ended[t.status]) setTimeout(poll, 1000); });
    }).catch(function () { setTimeout(poll, 3000); });
  }
  poll();
})();
</script></body></html>`))
