package workflows

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
)

// maxDetailLines bounds the markdown tree a stage publishes: a big loop shows its first nodes.
const maxDetailLines = 200

// publish sets the stage workflow's current details (shown by the Temporal UI) to its live node
// tree in markdown: statuses, durations, failures, and what a waiting node needs and the
// command that gives it. Current details are workflow metadata, not commands: replay-safe.
func (s *stageRun) publish(ctx workflow.Context) {
	if s.tree == nil {
		return
	}
	workflow.SetCurrentDetails(ctx, s.details.render(s.tree, s.in.ExecutionID, workflow.Now(ctx)))
}

// TreeMarkdown renders a node tree as a markdown list.
func TreeMarkdown(root *Node, executionID string, now time.Time) string {
	var r treeRenderer
	return r.render(root, executionID, now)
}

// A treeRenderer renders a stage's tree again after each change. The line of a node that ended,
// or has not started, does not change until the node does, so it is kept: a stage of many steps
// would otherwise format every line of its tree after each step.
type treeRenderer struct {
	kept map[*Node]renderedLine
	size int // of the last render, to size the next
}

type renderedLine struct {
	status           status.Status
	started, endedAt time.Time
	failure          *contract.Failure
	depth            int
	line             string
}

func (r *treeRenderer) render(root *Node, executionID string, now time.Time) string {
	var b strings.Builder
	b.Grow(r.size)
	fmt.Fprintf(&b, "**%s** %s %s\n\n", nodeLabel(root), symbolOf(root.Status), root.Status)
	lines := 0
	var walk func(n *Node, depth int)
	walk = func(n *Node, depth int) {
		for _, c := range n.Children {
			if c.Kind == "parallel" {
				walk(c, depth)
				continue
			}
			if lines == maxDetailLines {
				fmt.Fprintf(&b, "%s- …\n", strings.Repeat("  ", depth))
				lines++
				return
			}
			if lines > maxDetailLines {
				return
			}
			lines++
			b.WriteString(r.line(c, depth, executionID, now))
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	r.size = b.Len()
	return b.String()
}

// line is a node's line, kept while the node has not started and once it ended. A running
// node's line shows the time it has run; a waiting one's, how to answer it.
func (r *treeRenderer) line(c *Node, depth int, executionID string, now time.Time) string {
	if (c.StartedAt != nil && c.EndedAt == nil) || waiting(c.Status) {
		return nodeLine(c, depth, executionID, now)
	}
	var started, ended time.Time
	if c.StartedAt != nil {
		started = *c.StartedAt
	}
	if c.EndedAt != nil {
		ended = *c.EndedAt
	}
	if l, ok := r.kept[c]; ok && l.status == c.Status && l.started.Equal(started) && l.endedAt.Equal(ended) &&
		l.failure == c.Failure && l.depth == depth {
		return l.line
	}
	line := nodeLine(c, depth, executionID, now)
	if r.kept == nil || len(r.kept) > 2*maxDetailLines {
		// Nodes a loop or a retry replaced leave lines behind: start over now and then.
		r.kept = map[*Node]renderedLine{}
	}
	r.kept[c] = renderedLine{c.Status, started, ended, c.Failure, depth, line}
	return line
}

// waiting reports whether a node waits for a person, which its line says how to answer.
func waiting(st status.Status) bool {
	return st == status.ApprovalWaiting || st == status.InterventionWaiting || st == status.InputWaiting
}

func nodeLine(c *Node, depth int, executionID string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s- %s %s · %s", strings.Repeat("  ", depth), symbolOf(c.Status), nodeLabel(c), c.Status)
	if c.StartedAt != nil {
		end := now
		if c.EndedAt != nil {
			end = *c.EndedAt
		}
		fmt.Fprintf(&b, " · %s", end.Sub(*c.StartedAt).Round(time.Millisecond))
		if c.Kind == "step" {
			// The Web UI serves each step's log on its own origin (webui.LogsPath); a failed
			// step's link opens at the failure.
			at := ""
			if c.Status.Broke() {
				at = "#failure"
			}
			fmt.Fprintf(&b, " · [log](/gantry/logs/%s/%s%s)", url.PathEscape(executionID), url.PathEscape(c.Path), at)
		}
	}
	if waiting(c.Status) && c.Kind == "step" {
		// The Web UI's decision page (webui.DecidePath) answers it as the signed-in user.
		fmt.Fprintf(&b, " · [decide](/gantry/decide/%s/%s)", url.PathEscape(executionID), url.PathEscape(c.Path))
	}
	switch c.Status {
	case status.ApprovalWaiting:
		fmt.Fprintf(&b, " — approve with `gantry approve %s --step %s` (or `gantry reject`)", executionID, c.Path)
	case status.InterventionWaiting:
		fmt.Fprintf(&b, " — decide with `gantry intervene %s %s --action %s`", executionID, c.Path, strings.Join(c.Actions, "|"))
	case status.InputWaiting:
		fmt.Fprintf(&b, " — answer with `gantry input %s --step %s --set KEY=VALUE` (%s)", executionID, c.Path, strings.Join(c.Inputs, ", "))
	}
	if t := c.Tests; t != nil {
		fmt.Fprintf(&b, " · tests: %d, %d failed", t.Total, t.Failed)
		if len(t.Failing) > 0 {
			fmt.Fprintf(&b, " (%s)", oneLine(strings.Join(t.Failing, ", ")))
		}
	}
	if c.Failure != nil {
		fmt.Fprintf(&b, " — %s: %s", c.Failure.Category, oneLine(c.Failure.Message))
	}
	b.WriteByte('\n')
	return b.String()
}

func nodeLabel(n *Node) string {
	label := n.ID
	if n.Type != "" {
		label += " (" + n.Type + ")"
	}
	return label
}

func symbolOf(st status.Status) string {
	switch {
	case st == status.Succeeded || st == status.IgnoreFailed:
		return "✓"
	case st == status.Skipped || st == status.NotStarted:
		return "·"
	case st.Broke():
		return "✗"
	case st == status.Running:
		return "▶"
	}
	return "‖" // U+2016: in the fonts every system has (U+23F8 ⏸ showed as an empty box)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
