package container

import (
	"testing"

	"github.com/gantry-cd/gantry/plan"
)

// A pull request is fetched from the ref its Git server publishes it under.
func TestPullRequestRef(t *testing.T) {
	for _, c := range []struct{ typ, strategy, want string }{
		{"Github", "", "refs/pull/7/merge"},
		{"Github", "MergeCommit", "refs/pull/7/merge"},
		{"Git", "SourceBranch", "refs/pull/7/head"},
		{"Gitlab", "MergeCommit", "refs/merge-requests/7/merge"},
		{"Gitlab", "SourceBranch", "refs/merge-requests/7/head"},
	} {
		if got := pullRequestRef(plan.GitConnector{Type: c.typ}, "7", c.strategy); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.typ, c.strategy, got, c.want)
		}
	}
}
