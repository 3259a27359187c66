package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/status"
)

func TestTreeMarkdown(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(1500 * time.Millisecond)
	root := &Node{ID: "deploy", Type: "Deployment", Status: status.InterventionWaiting, Children: []*Node{
		{ID: "build", Path: "deploy.build", Type: "ShellScript", Status: status.Failed, StartedAt: &t0, EndedAt: &t1,
			Failure: &activities.Failure{Category: activities.Unknown, Message: "exit 1\nmore"}},
		{Kind: "parallel", Children: []*Node{
			{ID: "fix", Path: "deploy.fix", Type: "ShellScript", Status: status.InterventionWaiting, StartedAt: &t0, Actions: []string{"Retry", "Abort"}},
		}},
	}}
	md := TreeMarkdown(root, "p-1", t1.Add(time.Second))
	for _, want := range []string{
		"**deploy (Deployment)** ⏸ INTERVENTION_WAITING",
		"- ✗ build (ShellScript) · FAILED · 1.5s — Unknown: exit 1 more",
		"- ⏸ fix (ShellScript) · INTERVENTION_WAITING · 2.5s — decide with `gantry intervene p-1 deploy.fix --action Retry|Abort`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
