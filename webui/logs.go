package webui

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// LogsPath serves a step's log page, /gantry/logs/EXECUTION/STEP, and its text,
// /gantry/logs/EXECUTION/STEP?from=BYTES, to signed-in users.
const LogsPath = "/gantry/logs/"

// LogSource is where the log pages read a step's log (every attempt, masked as written,
// from the bucket when logs are shipped) and how far the step has come.
type LogSource interface {
	// CopyFrom writes the log from byte offset from on (nothing past its end).
	CopyFrom(ctx context.Context, out io.Writer, executionID, stepPath string, from int64) error
	// Step is a step's status and, when it failed, its failure message; "" and no error
	// when the execution has no such step.
	Step(ctx context.Context, executionID, stepPath string) (status, failure string, err error)
}

// StepLogs is the LogSource of a Gantry engine: its log store (local files, or the bucket logs
// are shipped to) and its executions' trees. Make it with NewStepLogs, so that the pages
// watching one execution share their reads of its tree.
type StepLogs struct {
	Logs    LogReader
	Starter *starter.Starter
	trees   *sharedTrees // nil: each call reads the tree itself
}

// LogReader reads a step's log from a byte offset on (the engine's log store).
type LogReader interface {
	CopyFrom(ctx context.Context, out io.Writer, executionID, stepPath string, from int64) error
}

// NewStepLogs is the LogSource of logs and starter's executions.
func NewStepLogs(logs LogReader, s *starter.Starter) StepLogs {
	return StepLogs{Logs: logs, Starter: s, trees: &sharedTrees{read: s.Tree, fresh: treeFresh}}
}

// treeFresh is how long a tree read serves the log pages of an execution: less than a page's
// half-second poll, so one watcher sees each poll's own read and many share one.
const treeFresh = 400 * time.Millisecond

// CopyFrom writes a step's log from byte offset from on.
func (l StepLogs) CopyFrom(ctx context.Context, out io.Writer, executionID, stepPath string, from int64) error {
	return l.Logs.CopyFrom(ctx, out, executionID, stepPath, from)
}

// Step reads a step's status and failure from its execution's tree.
func (l StepLogs) Step(ctx context.Context, executionID, stepPath string) (string, string, error) {
	read := l.Starter.Tree
	if l.trees != nil {
		read = l.trees.get
	}
	tree, err := read(ctx, executionID)
	if errors.Is(err, starter.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	n := tree.Find(stepPath)
	if n == nil {
		return "", "", nil
	}
	failure := ""
	if n.Failure != nil {
		failure = string(n.Failure.Category) + ": " + n.Failure.Message
	}
	return string(n.Status), failure, nil
}

var logPage = template.Must(template.New("log").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Step}} · {{.Execution}}</title>
<style>body{font-family:sans-serif;margin:1em 2em}pre{background:#111;color:#ddd;padding:1em;white-space:pre-wrap;word-break:break-all;font-size:13px}
#status{font-weight:bold}#failure{border:1px solid #b00;background:#fee;padding:.6em;margin:1em 0;display:none}</style></head>
<body><p><a href="/namespaces/{{.Namespace}}/workflows/{{.Execution}}">{{.Execution}}</a> · step <b>{{.Step}}</b> · <span id="status">{{.Status}}</span> · signed in as {{.User}}</p>
<pre id="log"></pre><div id="failure"></div>
<script>
(function () {
  var log = document.getElementById("log"), st = document.getElementById("status"), fail = document.getElementById("failure");
  var from = 0, url = {{.TextURL}};
  var ended = {"SUCCEEDED":1,"FAILED":1,"ERRORED":1,"ABORTED":1,"EXPIRED":1,"APPROVAL_REJECTED":1,"IGNORE_FAILED":1,"SKIPPED":1};
  function poll() {
    fetch(url + "?from=" + from, {credentials: "same-origin"}).then(function (r) {
      if (r.status === 401) { location.reload(); return; }
      var status = r.headers.get("X-Gantry-Status") || "", failure = r.headers.get("X-Gantry-Failure") || "";
      return r.text().then(function (text) {
        if (text) { log.textContent += text; from += new TextEncoder().encode(text).length; }
        st.textContent = status;
        if (failure) { fail.textContent = decodeURIComponent(failure); fail.style.display = "block"; }
        if (ended[status]) {
          if (location.hash === "#failure" || failure) { (failure ? fail : log).scrollIntoView({block: "end"}); }
          return;
        }
        window.scrollTo(0, document.body.scrollHeight);
        setTimeout(poll, 500);
      });
    }).catch(function () { setTimeout(poll, 2000); });
  }
  poll();
})();
</script></body></html>`))

// logs serves the log pages: the page, which follows the step while it runs, and the log's
// text from a byte offset with the step's status. Without a valid sign-in cookie the page
// sends the browser to the sign-in page, and the text is refused.
func logs(src LogSource, check func(string) (string, error), namespace string, acc Access, userOf func(string) (*identity.User, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET", http.StatusMethodNotAllowed)
			return
		}
		rest := strings.TrimPrefix(r.URL.Path, LogsPath)
		execution, step, ok := strings.Cut(rest, "/")
		if !ok || execution == "" || step == "" {
			http.Error(w, "a log is /gantry/logs/EXECUTION/STEP (the step's path, identifiers joined by dots)", http.StatusNotFound)
			return
		}
		user, token := "", ""
		if token = requestToken(r); token != "" && check != nil {
			user, _ = check(token)
		}
		_, text := r.URL.Query()["from"]
		if user == "" {
			if text {
				http.Error(w, "sign in first: "+SignInPath, http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
			return
		}
		if acc != nil && userOf != nil {
			u, err := userOf(token)
			if err == nil {
				err = acc.Allow(r.Context(), u, identity.View, execution)
			}
			if err != nil {
				if access.Forbidden(err) {
					acc.Audit(r.Context(), workflows.AuditRecord{User: user, Action: "view", Execution: execution, Path: step, Outcome: "refused", Detail: err.Error()})
					http.Error(w, err.Error(), http.StatusForbidden)
					return
				}
				http.Error(w, "execution "+execution+": "+err.Error(), http.StatusNotFound)
				return
			}
		}
		status, failure, err := src.Step(r.Context(), execution, step)
		if err != nil {
			http.Error(w, "read execution "+execution+": "+err.Error(), http.StatusBadGateway)
			return
		}
		if status == "" {
			http.Error(w, "execution "+execution+" has no step "+step, http.StatusNotFound)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if !text {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = logPage.Execute(w, map[string]any{"Execution": execution, "Step": step, "Status": status, "User": user,
				"Namespace": namespace, "TextURL": LogsPath + execution + "/" + step})
			return
		}
		// Only what the page has not shown yet is read: a long log is not read again per poll.
		from, _ := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
		var buf bytes.Buffer
		if from >= 0 {
			if err := src.CopyFrom(r.Context(), &buf, execution, step, from); err != nil {
				http.Error(w, "read the log: "+err.Error(), http.StatusBadGateway)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Gantry-Status", status)
		if failure != "" {
			w.Header().Set("X-Gantry-Failure", url.PathEscape(failure))
		}
		_, _ = w.Write(buf.Bytes())
	})
}
