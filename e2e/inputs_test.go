package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

func inputPipeline(id, timeout, failure string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: a
                  identifier: a
                  timeout: ` + timeout + `
` + failure + `                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "C=$COLOR; R=$REGION"}}
                    environmentVariables:
                      - {name: COLOR, type: String, value: "<+input>.default(blue).allowedValues(blue,green).executionInput()"}
                      - {name: REGION, type: String, value: "<+input>.regex(eu-[a-z]+-[0-9]).executionInput()"}
                    outputVariables:
                      - {name: c, type: String, value: C}
                      - {name: r, type: String, value: R}
`
}

// A step asks for its inputs when it starts (INPUT_WAITING); bad values are refused; given
// values reach the script and the spec view.
func TestExecutionInputsSupplied(t *testing.T) {
	p := compile(t, "in.yaml", []byte(inputPipeline("inputs_given", "1h", "")), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	tree := waitFor(t, ctx, env.starter, exec.ID, "s.a", status.InputWaiting)
	if got := strings.Join(tree.Find("s.a").Inputs, ","); got != "spec.environmentVariables.COLOR,spec.environmentVariables.REGION" {
		t.Errorf("inputs %q", got)
	}
	for _, bad := range []map[string]string{
		{"spec.environmentVariables.REGION": "us-east-1"},                                           // regex (full match)
		{"spec.environmentVariables.COLOR": "red", "spec.environmentVariables.REGION": "eu-west-1"}, // not allowed
		{"spec.environmentVariables.COLOR": "blue"},                                                 // REGION has no default
		{"spec.nope": "x", "spec.environmentVariables.REGION": "eu-west-1"},                         // unknown key
	} {
		if _, err := env.starter.SupplyInputs(ctx, exec.ID, workflows.InputRequest{Path: "s.a", User: "tester", Values: bad}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := env.starter.SupplyInputs(ctx, exec.ID, workflows.InputRequest{Path: "s.a", User: "tester",
		Values: map[string]string{"spec.environmentVariables.REGION": "eu-west-1"}}); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	outs := res.Tree.Find("s.a").Outputs["outputVariables"].(map[string]any)
	if res.Status != status.Succeeded || outs["c"] != "blue" || outs["r"] != "eu-west-1" {
		t.Errorf("%s %v", res.Status, outs)
	}
}

// C44: nobody answers; ProceedWithDefaultValues runs the step with the defaults; without the
// strategy the step fails with InputTimeoutError.
func TestExecutionInputTimeout(t *testing.T) {
	strategy := "                  failureStrategies: [{onFailure: {errors: [InputTimeoutError], action: {type: ProceedWithDefaultValues}}}]\n"
	_, res := runPlan(t, env.starter, compile(t, "c44.yaml", []byte(inputPipeline("c44", "1s 1ms", strategy)), load.Options{}))
	conformance.Check(t, res.Tree, map[string]status.Status{"s.a": status.Succeeded})
	if outs := res.Tree.Find("s.a").Outputs["outputVariables"].(map[string]any); outs["c"] != "blue" || outs["r"] != "" {
		t.Errorf("defaults: %v", outs)
	}
	_, res = runPlan(t, env.starter, compile(t, "c44b.yaml", []byte(inputPipeline("c44b", "1s 1ms", "")), load.Options{}))
	if n := res.Tree.Find("s.a"); n.Status != status.Failed || n.Failure == nil || n.Failure.Category != "InputTimeoutError" {
		t.Errorf("without strategy: %s %+v", n.Status, n.Failure)
	}
}
