package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

func runCmd() *cobra.Command {
	var (
		opts           load.Options
		conn           connFlags
		output         string
		showLogs       bool
		verbose        bool
		hbt            time.Duration
		overrideFreeze bool
	)
	cmd := &cobra.Command{
		Use:   "run PIPELINE.yaml",
		Short: "Run a pipeline and follow it to the end",
		Long: `Validates the pipeline with its input sets and --set values, starts an execution and follows it:
one line per node as it starts and ends, then the final tree with durations. With no --address
the embedded Temporal server runs in this process, with its state in --data-dir, so an execution
interrupted by Ctrl-C or a crash carries on the next time gantry runs on that directory.

Exit codes: 0 the pipeline succeeded, 1 it failed or was aborted (or the input is invalid),
2 usage or connection error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if output != "text" && output != "json" {
				return usageErr("--output must be text or json")
			}
			opts.ForRun = true
			if conn.policyDir != "" {
				if opts.Policies, err = policies.Load(cmd.Context(), conn.policyDir); err != nil {
					return &exitError{code: ExitInvalid, err: err}
				}
				opts.PolicyMeta = map[string]any{"user": map[string]any{"name": currentUser()}, "trigger": "MANUAL",
					"timestamp": time.Now().UTC().Format(time.RFC3339)}
			}
			local := conn.localWorker()
			if local { // this process's worker is the only one: its store is every secret a step can read
				if st, err := conn.secretStore(cmd.Context()); err == nil && st.Listed() {
					opts.Secrets = st
				}
			}
			r, err := load.File(args[0], opts)
			if err != nil {
				return usageErr("%v", err)
			}
			if len(r.Diags) > 0 {
				fmt.Fprint(cmd.ErrOrStderr(), r.Diags.Render(r.Sources)) // warnings and policy decisions too
			}
			if !r.OK() {
				return &exitError{code: ExitInvalid, err: fmt.Errorf("%s is invalid; nothing was started", args[0])}
			}
			log := newLogger(verbose)
			conn.buildMachine, conn.containerd = opts.BuildInfra.Machines, opts.BuildInfra.Containerd
			e, err := connect(cmd.Context(), conn, local, log)
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			set := workflows.Settings{HeartbeatTimeout: hbt}
			if overrideFreeze {
				set.OverrideFreeze = currentUser()
			}
			exec, err := e.starter.Start(cmd.Context(), r.Plan, workflows.Trigger{Type: "MANUAL", User: currentUser()}, set)
			if err != nil {
				return usageErr("%v", err)
			}
			if e.uiURL != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "run page: %s\n", webui.RunPageURL(e.uiURL, exec.ID))
			}
			if output == "text" {
				fmt.Fprintf(cmd.OutOrStdout(), "pipeline %s #%d: ", r.Plan.Name, exec.SequenceID)
			}
			return follow(cmd, e, exec, output, showLogs, conn.dataDir)
		},
	}
	cmd.Flags().StringArrayVar(&opts.InputSets, "input-set", nil, "input set or overlay file to merge (repeatable, in precedence order)")
	cmd.Flags().StringArrayVar(&opts.EntityDirs, "entities", nil, "folder of service, environment, infrastructure and connector files (repeatable; the pipeline's folder is always searched)")
	templatesFlag(cmd, &opts.TemplateDirs)
	strictFlag(cmd, &opts.Strict)
	opts.BuildInfra = &pipeline.BuildInfra{}
	buildInfraFlags(cmd, opts.BuildInfra)
	cmd.Flags().StringArrayVar(&opts.Sets, "set", nil, "runtime input value as FQN=VALUE (repeatable)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text (live progress and final tree) or json (final execution as one document)")
	cmd.Flags().BoolVar(&showLogs, "logs", false, "stream step output while steps run")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log worker and client activity to stderr")
	cmd.Flags().BoolVar(&overrideFreeze, "override-freeze", false, "deploy even while a deployment freeze holds (recorded in the audit trail; through the API it needs the override-freeze permission)")
	cmd.Flags().DurationVar(&hbt, "heartbeat-timeout", workflows.DefaultSettings.HeartbeatTimeout, "how long a step may go without a heartbeat before its worker counts as lost")
	conn.add(cmd)
	return cmd
}

func watchCmd() *cobra.Command {
	var conn connFlags
	var output string
	var showLogs bool
	cmd := &cobra.Command{
		Use:   "watch EXECUTION",
		Short: "Follow an execution that is already running to its end; the exit code says how it ended",
		Long: `Prints one line per node as it starts, waits and ends (with what a waiting node needs: the
command that decides it), then the final tree with durations, as gantry run does for the
execution it starts. Exit codes: 0 the pipeline succeeded, 1 it failed or was aborted, 2 usage
or connection error (an unknown execution).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageErr("--output must be text or json")
			}
			e, err := connect(cmd.Context(), conn, conn.localWorker(), newLogger(false))
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			if _, err := e.starter.Tree(cmd.Context(), args[0]); err != nil && errors.Is(err, starter.ErrNotFound) {
				return usageErr("%v", err)
			}
			return follow(cmd, e, starter.Execution{ID: args[0]}, output, showLogs, conn.dataDir)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text (live progress and final tree) or json (final execution as one document)")
	cmd.Flags().BoolVar(&showLogs, "logs", false, "stream step output while steps run")
	conn.add(cmd)
	return cmd
}

// follow watches an execution to its end and prints it; the exit code says how it ended.
func follow(cmd *cobra.Command, e *engine, exec starter.Execution, output string, showLogs bool, dataDir string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := &watcher{out: cmd.OutOrStdout(), e: e, id: exec.ID, logs: showLogs, seen: map[string]status.Status{}, offsets: map[string]int64{}}
	if output == "text" {
		fmt.Fprintf(w.out, "execution %s\n", exec.ID)
	}
	if showLogs && e.remote {
		w.logs = false
		fmt.Fprintf(cmd.ErrOrStderr(), "gantry: step logs stay with the workers that run them; read one with gantry logs %s STEP-PATH --data-dir WORKER-DATA-DIR\n", exec.ID)
	}
	res, err := w.follow(ctx, output == "text")
	if err == nil {
		err = e.starter.Complete(ctx, exec.ID, res.Tree)
	}
	if err != nil {
		if ctx.Err() != nil && e.server == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "gantry: stopped following %s; it goes on (follow it again with gantry watch %s, stop it with gantry abort %s)\n", exec.ID, exec.ID, exec.ID)
			return &exitError{code: ExitInvalid}
		}
		if ctx.Err() != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "gantry: stopped following %s; it continues when a worker runs again (gantry server, or any gantry command on %s); stop it with gantry abort %s\n", exec.ID, dataDir, exec.ID)
			return &exitError{code: ExitInvalid}
		}
		return usageErr("%v", err)
	}
	if output == "json" {
		if err := writeJSON(w.out, exec.ID, res); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w.out)
		printTree(w.out, res.Tree, pages{execution: exec.ID, ui: e.uiURL})
	}
	if !res.Status.Positive() {
		return &exitError{code: ExitInvalid}
	}
	return nil
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

// watcher follows an execution: it polls the node tree, prints transitions and streams logs.
type watcher struct {
	out     io.Writer
	e       *engine
	id      string
	logs    bool
	seen    map[string]status.Status
	offsets map[string]int64
}

func (w *watcher) follow(ctx context.Context, progress bool) (*workflows.PipelineResult, error) {
	done := make(chan struct{})
	var res *workflows.PipelineResult
	var resErr error
	go func() {
		defer close(done)
		res, resErr = w.e.starter.Result(ctx, w.id)
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if resErr != nil {
				return nil, resErr
			}
			if progress {
				w.show(res.Tree)
			}
			return res, nil
		case <-ctx.Done():
			<-done
			return nil, ctx.Err()
		case <-tick.C:
			if !progress {
				continue
			}
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			tree, err := w.e.starter.Tree(qctx, w.id)
			cancel()
			if err == nil {
				w.show(tree)
			}
		}
	}
}

// show prints the nodes whose status changed since the last call, and new log lines. A node
// that started is printed before its children, one that ended after them.
func (w *watcher) show(n *workflows.Node) {
	if n == nil {
		return
	}
	visible := n.Kind != "pipeline" && n.Kind != "parallel" && n.Status != status.NotStarted
	if visible && !n.Status.Final() {
		w.print(n)
	}
	if visible && n.Kind == "step" && w.logs && n.Status != status.Skipped {
		w.streamLog(n.Path)
	}
	for _, c := range n.Children {
		w.show(c)
	}
	if visible && n.Status.Final() {
		w.print(n)
	}
}

func (w *watcher) print(n *workflows.Node) {
	if w.seen[n.Path] == n.Status {
		return
	}
	w.seen[n.Path] = n.Status
	fmt.Fprintf(w.out, "%s%s %-30s %-20s %s\n", indent(n.Path), symbol(n.Status), n.Path, n.Status, detail(n, pages{execution: w.id, ui: w.e.uiURL}))
}

func (w *watcher) streamLog(path string) {
	f, err := os.Open(w.e.logs.Path(w.id, path))
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(w.offsets[path], io.SeekStart); err != nil {
		return
	}
	b, _ := io.ReadAll(f)
	if i := strings.LastIndexByte(string(b), '\n'); i >= 0 {
		b = b[:i+1]
		w.offsets[path] += int64(len(b))
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			fmt.Fprintf(w.out, "%s  │ %s\n", indent(path), line)
		}
	}
}

func indent(path string) string {
	return strings.Repeat("  ", strings.Count(path, ".")+1)
}

func symbol(s status.Status) string {
	switch {
	case s == status.Succeeded:
		return "✓"
	case s == status.Skipped:
		return "-"
	case s == status.IgnoreFailed:
		return "~"
	case s == status.Aborted:
		return "■"
	case s.Broke():
		return "✗"
	case s == status.NotStarted:
		return " "
	}
	return "▶"
}

// pages say where an execution's run page and decision pages are: the Web UI of the server a
// command joined ("" when none is known).
type pages struct {
	execution, ui string
}

// decide is how a person decides what n waits for: the command, and the page when known.
func (pg pages) decide(n *workflows.Node) string {
	exec := pg.execution
	if exec == "" {
		exec = "<execution>"
	}
	var cmd string
	switch {
	case n.Status == status.ApprovalWaiting && n.Approval != nil:
		cmd = fmt.Sprintf("gantry approve %s --step %s", exec, n.Path)
		for _, in := range n.Approval.Inputs {
			cmd += " --input " + in + "=VALUE"
		}
		if left := n.Approval.MinimumCount - n.Approval.Approvals; left > 1 {
			cmd += fmt.Sprintf(" (%d approvers still needed; or gantry reject)", left)
		} else {
			cmd += " (or gantry reject)"
		}
	case n.Status == status.InputWaiting && len(n.Inputs) > 0:
		cmd = fmt.Sprintf("gantry input %s --step %s --set %s=VALUE", exec, n.Path, n.Inputs[0])
	case len(n.Actions) > 0:
		cmd = fmt.Sprintf("gantry intervene %s %s --action %s", exec, n.Path, strings.Join(n.Actions, "|"))
	default:
		return ""
	}
	if pg.ui != "" && pg.execution != "" {
		cmd += ", or " + webui.DecideURL(pg.ui, pg.execution, n.Path)
	}
	return "decide with: " + cmd
}

func detail(n *workflows.Node, pg pages) string {
	var parts []string
	if n.Template != nil {
		parts = append(parts, "(template "+n.Template.Ref+"@"+n.Template.Version+")")
	}
	if len(n.Sources) > 0 {
		parts = append(parts, "(from Git: "+sourcesLine(n.Sources)+")")
	}
	if n.StartedAt != nil && n.EndedAt != nil {
		parts = append(parts, n.EndedAt.Sub(*n.StartedAt).Round(time.Millisecond).String())
	} else if n.StartedAt != nil && !n.Status.Final() && time.Since(*n.StartedAt) >= time.Second {
		parts = append(parts, "for "+time.Since(*n.StartedAt).Round(time.Second).String())
	}
	if n.Worker != "" {
		parts = append(parts, "on "+n.Worker)
	}
	if n.Failure != nil {
		parts = append(parts, fmt.Sprintf("%s: %s", n.Failure.Category, n.Failure.Message))
	}
	if t := n.Tests; t != nil {
		tests := fmt.Sprintf("tests: %d, %d failed", t.Total, t.Failed)
		if t.Skipped > 0 {
			tests += fmt.Sprintf(", %d skipped", t.Skipped)
		}
		if len(t.Failing) > 0 {
			tests += " (" + strings.Join(t.Failing, ", ") + ")"
		}
		parts = append(parts, tests)
	}
	if len(n.Notes) > 0 {
		parts = append(parts, "["+strings.Join(n.Notes, "; ")+"]")
	}
	if r := n.Resource; r != nil {
		w := "waiting for " + r.Kind + " " + r.Key
		if r.Holder != "" {
			w += ", held by " + r.Holder
		}
		if r.Ahead > 0 {
			w += fmt.Sprintf(", %d ahead", r.Ahead)
		}
		parts = append(parts, w)
	}
	if d := pg.decide(n); d != "" {
		parts = append(parts, d)
	}
	if n.Policy != nil && n.Policy.Status != "pass" {
		parts = append(parts, "policy "+n.Policy.Status+": "+strings.Join(n.Policy.Messages, "; "))
	}
	if p := n.Parent; p != nil {
		parts = append(parts, fmt.Sprintf("chained by %s stage %s", p.ExecutionID, p.Stage))
	}
	if n.Abort != nil {
		a := "aborted by " + n.Abort.By
		if n.Abort.Reason != "" {
			a += ": " + n.Abort.Reason
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, "  ")
}

// sourcesLine names the files a run read from Git, each with its repository, branch and commit.
func sourcesLine(sources []plan.Source) string {
	var out []string
	for _, s := range sources {
		c := s.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		out = append(out, fmt.Sprintf("%s %s %s@%s:%s (%s)", s.Kind, s.Identifier, s.Repo, c, s.FilePath, s.Branch))
	}
	return strings.Join(out, ", ")
}

// printTree prints the final tree, one node per line, indented by depth.
func printTree(out io.Writer, tree *workflows.Node, pg pages) {
	if tree == nil {
		return
	}
	fmt.Fprintf(out, "%s %s %s %s\n", symbol(tree.Status), tree.Name, tree.Status, detail(tree, pg))
	var walk func(n *workflows.Node, depth int)
	walk = func(n *workflows.Node, depth int) {
		for _, c := range n.Children {
			if c.Kind == "parallel" {
				walk(c, depth)
				continue
			}
			pad := strings.Repeat("  ", depth)
			fmt.Fprintf(out, "%s%s %-*s %-20s %s\n", pad, symbol(c.Status), max(32-len(pad), 1), c.ID, c.Status, detail(c, pg))
			walk(c, depth+1)
		}
	}
	walk(tree, 1)
}

// jsonNode is one node of `--output json`; keep this shape stable.
type jsonNode struct {
	Path     string         `json:"path"`
	Type     string         `json:"type"`
	Status   string         `json:"status"`
	Attempts int            `json:"attempts"`
	Outputs  map[string]any `json:"outputs,omitempty"`
	// Worker (host/pid) and the times say who ran a step and when.
	Worker    string     `json:"worker,omitempty"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// Failure is set on every node that failed (or whose failure a strategy settled).
	Failure *jsonFailure `json:"failure,omitempty"`
	// Tests summarise a step's test reports: total, failed, skipped, failing test names.
	Tests *contract.TestSummary `json:"tests,omitempty"`
}

// jsonFailure is why a node failed and what its failure strategy did about it.
type jsonFailure struct {
	Category string `json:"category"`
	Message  string `json:"message"`
	// Action is the failure-strategy action applied ("None" when no strategy matched and the
	// failure propagated); ActionBy names the user who chose it, or "timeout".
	Action   string `json:"action"`
	ActionBy string `json:"actionBy,omitempty"`
}

func failureOf(n *workflows.Node) *jsonFailure {
	if n.Failure == nil {
		return nil
	}
	f := &jsonFailure{Category: string(n.Failure.Category), Message: n.Failure.Message, Action: "None"}
	if n.Strategy != nil {
		f.Action, f.ActionBy = n.Strategy.Action, n.Strategy.By
	}
	return f
}

func writeJSON(out io.Writer, id string, res *workflows.PipelineResult) error {
	doc := struct {
		ExecutionID string     `json:"executionId"`
		Status      string     `json:"status"`
		Nodes       []jsonNode `json:"nodes"`
	}{ExecutionID: id, Status: string(res.Status), Nodes: []jsonNode{}}
	res.Tree.Walk(func(n *workflows.Node) {
		if n.Kind == "pipeline" || n.Kind == "parallel" || n.Kind == "rollback" {
			return
		}
		typ := n.Type
		if n.Kind == "group" {
			typ = "StepGroup"
		}
		doc.Nodes = append(doc.Nodes, jsonNode{Path: n.Path, Type: typ, Status: string(n.Status), Attempts: n.Attempts, Outputs: n.Outputs,
			Worker: n.Worker, StartedAt: n.StartedAt, EndedAt: n.EndedAt, Failure: failureOf(n), Tests: n.Tests})
	})
	return printJSON(out, doc)
}

// printJSON writes v as one indented JSON document: what every `-o json` prints.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
