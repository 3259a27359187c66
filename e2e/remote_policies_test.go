package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/server"
)

// noShout denies a greeting in capitals: the rule of the policy library kept in Git.
func noShout(word string) string {
	return fmt.Sprintf(`package gantry.no_shout
import rego.v1
deny contains msg if {
	some v in input.pipeline.variables
	v.name == "greeting"
	v.value == %q
	msg := sprintf("greeting %%s shouts", [v.value])
}
`, word)
}

const noShoutSets = "policySets:\n  - {identifier: manners, severity: error, action: onrun, global: true, policies: [no_shout]}\n"

// quietPipeline is a local pipeline (of the server's pipelines directory) that says its greeting.
const quietPipeline = `pipeline:
  name: release
  identifier: release
  variables:
    - {name: greeting, type: String, value: <+input>}
  stages:
    - stage:
        name: say
        identifier: say
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: say, identifier: say, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: echo <+pipeline.variables.greeting>}}}}
`

// A policy library kept in Git decides every start, local pipelines' and remote ones', read at
// the head of its own branch: a run records the commit that decided it, a push decides the next
// start, and a pipeline's branch cannot change the policies that judge it. A library that does
// not load is refused at registration and, pushed later, refuses starts (failing closed), each
// time at its repository, commit, file, line and column.
func TestPoliciesKeptInGitDecideEveryStart(t *testing.T) {
	rg := newRemoteRig(t)
	g := rg.git
	if err := os.WriteFile(filepath.Join(rg.dir, "quiet.yaml"), []byte(quietPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := remote.Entry{Kind: "policy", Identifier: "manners", ConnectorRef: "app_repo", FilePath: ".harness/policies", Branch: "rules"}
	broken := g.Commit("app", "rules", map[string]string{".harness/policies/no_shout.rego": "package gantry.no_shout\nimport rego.v1\ndeny contains msg if {\n", ".harness/policies/sets.yaml": noShoutSets})
	out := rg.register(t, lib, 422)
	if d := fmt.Sprint(out["details"]); out["code"] != "invalid-policy" || !strings.Contains(d, "app@"+broken[:12]+":.harness/policies/no_shout.rego:") {
		t.Errorf("a broken library is refused as %v", out)
	}
	ruled := g.Commit("app", "rules", map[string]string{".harness/policies/no_shout.rego": noShout("SHOUT")})
	rg.register(t, lib, 201)
	rg.register(t, remote.Entry{Kind: "pipeline", Identifier: "release", ConnectorRef: "app_repo", FilePath: ".harness/release.yaml", Branch: "main"}, 201)

	_, out = rg.start(t, server.StartRequest{File: "quiet.yaml", Sets: []string{"pipeline.variables.greeting=SHOUT"}}, 422)
	if out["code"] != "policy-denied" || !strings.Contains(fmt.Sprint(out["details"]), "greeting SHOUT shouts") {
		t.Errorf("a local start breaking the rule: %v", out)
	}
	_, out = rg.start(t, server.StartRequest{Pipeline: "release", InputSets: []string{}, Sets: []string{"pipeline.variables.greeting=SHOUT"}}, 422)
	if out["code"] != "policy-denied" {
		t.Errorf("a remote start breaking the rule: %v", out)
	}
	// A branch of the pipeline's repository that drops the rule is still judged by the library's
	// own branch.
	g.Commit("app", "sneaky", map[string]string{".harness/policies/no_shout.rego": noShout("nothing"), ".harness/release.yaml": remotePipeline("sneaky", 0)})
	if _, out = rg.start(t, server.StartRequest{Pipeline: "release", Branch: "sneaky", Sets: []string{"pipeline.variables.greeting=SHOUT"}}, 422); out["code"] != "policy-denied" {
		t.Errorf("a pipeline branch changed its policies: %v", out)
	}

	id, _ := rg.start(t, server.StartRequest{File: "quiet.yaml", Sets: []string{"pipeline.variables.greeting=hush"}}, 201)
	decidedBy := func(id string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := env.starter.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Tree.Sources {
			if s.Kind == "policy" {
				return s.Identifier + " " + s.Branch + "@" + s.Commit + ":" + s.FilePath
			}
		}
		return fmt.Sprintf("no policy among %+v", res.Tree.Sources)
	}
	if got, want := decidedBy(id), "manners rules@"+ruled+":.harness/policies"; got != want {
		t.Errorf("the run records %s, want %s", got, want)
	}

	// A push to the library decides the next start, and a push that breaks it refuses starts.
	stricter := g.Commit("app", "rules", map[string]string{".harness/policies/no_shout.rego": noShout("hush")})
	if _, out = rg.start(t, server.StartRequest{File: "quiet.yaml", Sets: []string{"pipeline.variables.greeting=hush"}}, 422); out["code"] != "policy-denied" {
		t.Errorf("after a push to the library: %v", out)
	}
	id, _ = rg.start(t, server.StartRequest{File: "quiet.yaml", Sets: []string{"pipeline.variables.greeting=SHOUT"}}, 201)
	if got, want := decidedBy(id), "manners rules@"+stricter+":.harness/policies"; got != want {
		t.Errorf("after the push the run records %s, want %s", got, want)
	}
	bad := g.Commit("app", "rules", map[string]string{".harness/policies/no_shout.rego": "package gantry.no_shout\nimport rego.v1\ndeny contains msg if {\n"})
	_, out = rg.start(t, server.StartRequest{File: "quiet.yaml", Sets: []string{"pipeline.variables.greeting=calm"}}, 422)
	if out["code"] != "invalid-policies" || !strings.Contains(fmt.Sprint(out["message"]), "app@"+bad[:12]+":.harness/policies/no_shout.rego:") {
		t.Errorf("a broken library pushed: %v", out)
	}
	g.DeleteBranch("app", "rules")
	if _, out = rg.start(t, server.StartRequest{File: "quiet.yaml", Sets: []string{"pipeline.variables.greeting=calm"}}, 404); !strings.Contains(fmt.Sprint(out["message"]), "rules") {
		t.Errorf("the library's branch deleted: %v", out)
	}
}
