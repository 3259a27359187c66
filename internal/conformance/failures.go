package conformance

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gantry-cd/gantry/status"
)

// Short durations stand in for the spec's 10 s timeouts and retry intervals, so the cases run
// in seconds. "1s 1ms" is the shortest duration the grammar accepts (it rounds up to 2 s).
const short = "1s 1ms"

const (
	IF = status.IgnoreFailed
	AB = status.Aborted
	EX = status.Expired
	ER = status.Errored
)

func strategy(errors, action string) string {
	return fmt.Sprintf("[{onFailure: {errors: [%s], action: %s}}]", errors, action)
}

func act(typ string) string { return "{type: " + typ + "}" }

func retry(count int, intervals, onRetryFailure string) string {
	return fmt.Sprintf("{type: Retry, spec: {retryCount: %d, retryIntervals: [%s], onRetryFailure: {action: %s}}}", count, intervals, onRetryFailure)
}

func manual(timeout, onTimeout string) string {
	return fmt.Sprintf("{type: ManualIntervention, spec: {timeout: %q, onTimeout: {action: %s}}}", timeout, onTimeout)
}

// withOutput adds an output variable named v read from shell variable V.
func withOutput(stepYAML, v string) string {
	return strings.Replace(stepYAML, "}}}", fmt.Sprintf("}}, outputVariables: [{name: %s, type: String, value: %s}]}", strings.ToLower(v), v), 1)
}

func stageFull(id, when, failure string, steps []string, rollback []string) string {
	s := fmt.Sprintf(`{stage: {name: %s, identifier: %s, type: Custom`, id, id)
	if when != "" {
		s += ", when: " + when
	}
	if failure != "" {
		s += ", failureStrategies: " + failure
	}
	s += fmt.Sprintf(", spec: {execution: {steps: [%s]", strings.Join(steps, ", "))
	if len(rollback) > 0 {
		s += fmt.Sprintf(", rollbackSteps: [%s]", strings.Join(rollback, ", "))
	}
	return s + "}}}}"
}

func group(id, when, failure string, steps []string, rollback []string) string {
	s := fmt.Sprintf(`{stepGroup: {name: %s, identifier: %s`, id, id)
	if when != "" {
		s += ", when: " + when
	}
	if failure != "" {
		s += ", failureStrategies: " + failure
	}
	s += fmt.Sprintf(", steps: [%s]", strings.Join(steps, ", "))
	if len(rollback) > 0 {
		s += fmt.Sprintf(", rollbackSteps: [%s]", strings.Join(rollback, ", "))
	}
	return s + "}}"
}

func withVariable(yaml, name, value string) string {
	return strings.Replace(yaml, "  stages:\n", fmt.Sprintf("  variables:\n    - {name: %s, type: String, value: %q}\n  stages:\n", name, value), 1)
}

func withTimeout(yaml, timeout string) string {
	return strings.Replace(yaml, "  stages:\n", fmt.Sprintf("  timeout: %s\n  stages:\n", timeout), 1)
}

// Conditions returns cases C13-C18 (spec 16.B).
func Conditions() []Case {
	return []Case{
		{ID: "C13", YAML: pipeline("c13", stage("s1", "", whenStep("a", "exit 0", "{stageStatus: Success, condition: <+input>}"))),
			Want: map[string]status.Status{"s1.a": K, "s1": S}},
		{ID: "C14", YAML: pipeline("c14", stage("s1", "", whenStep("a", "exit 0", `{stageStatus: Success, condition: '<+execution.steps.later.output.outputVariables.x> == "1"'}`), ok("later"))),
			Want: map[string]status.Status{"s1.a": K, "s1.later": S, "": S}},
		{ID: "C15", YAML: pipeline("c15", stage("s1", "", whenStep("a", "exit 0", "{stageStatus: Success, condition: <+pipeline.name>}"), ok("b"))),
			Want: map[string]status.Status{"s1.a": ER, "s1.b": K, "s1": ER, "": ER}},
		{ID: "C16-true", YAML: withVariable(pipeline("c16t", stage("s1", "", whenStep("a", "exit 0", "{stageStatus: Success, condition: <+pipeline.variables.flag>}"))), "flag", "true"),
			Want: map[string]status.Status{"s1.a": S}},
		{ID: "C16-yes", YAML: withVariable(pipeline("c16y", stage("s1", "", whenStep("a", "exit 0", "{stageStatus: Success, condition: <+pipeline.variables.flag>}"))), "flag", "yes"),
			Want: map[string]status.Status{"s1.a": ER}},
		{ID: "C17", YAML: pipeline("c17", stage("s1", "", fail("a"), group("g", "{stageStatus: All}", "", []string{ok("b")}, nil))),
			Want: map[string]status.Status{"s1.a": F, "s1.g": S, "s1.g.b": K, "s1": F}},
		{ID: "C18", YAML: pipeline("c18", stage("s1", "", fail("a")), stage("s2", "{pipelineStatus: All}", whenStep("x", "exit 0", `{stageStatus: Success, condition: '<+pipeline.stages.s1.status> == "FAILED"'}`))),
			Want: map[string]status.Status{"s1": F, "s2.x": S, "s2": S}},
	}
}

// Failures returns cases C19-C42 of spec 16.C that need no approvals or execution inputs, plus
// stage and pipeline timeouts. dir holds marker files of steps that fail once.
func Failures(dir string) []Case {
	marker := func(name string) string { return filepath.Join(dir, name) }
	failOnce := func(id, m string, failure string) string {
		return step(id, fmt.Sprintf("if [ -f %s ]; then exit 0; fi; touch %s; exit 1", m, m), "1m", "", failure)
	}
	rollbackAll := strategy("AllErrors", act("StageRollback"))
	return []Case{
		{ID: "C19", YAML: pipeline("c19", stage("s1", "", step("a", "exit 3", "1m", "", strategy("AllErrors", act("Ignore"))), ok("b")), stage("s2", "", ok("c"))),
			Want: map[string]status.Status{"s1.a": IF, "s1.b": S, "s1": IF, "s2.c": S, "": IF}},
		{ID: "C20", YAML: pipeline("c20", stage("s1", "", step("a", "exit 3", "1m", "", strategy("AllErrors", act("MarkAsSuccess"))), ok("b"))),
			Want: map[string]status.Status{"s1.a": S, "s1": S, "": S}},
		{ID: "C21", YAML: pipeline("c21",
			stageFull("deploy", "", rollbackAll, []string{ok("a"), fail("b"), ok("c")}, []string{ok("r1"), ok("r2")}),
			stage("next", "", ok("d")), stage("onfail", "{pipelineStatus: Failure}", ok("e"))),
			Want: map[string]status.Status{"deploy.b": F, "deploy.c": NS, "deploy.rollbackSteps.r1": S, "deploy.rollbackSteps.r2": S,
				"deploy": F, "next": K, "onfail": S, "": F},
			Order: []string{"deploy.rollbackSteps.r1", "deploy.rollbackSteps.r2"}},
		{ID: "C22", YAML: pipeline("c22",
			stageFull("deploy", "", rollbackAll, []string{ok("a"), step("b", "exit 1", "1m", "", strategy("AllErrors", act("MarkAsFailure"))), ok("c")}, []string{ok("r1"), ok("r2")})),
			Want: map[string]status.Status{"deploy.b": F, "deploy.c": K, "deploy.rollbackSteps.r1": NS, "deploy.rollbackSteps.r2": NS, "deploy": F}},
		{ID: "C23", YAML: pipeline("c23",
			stageFull("s1", "", rollbackAll, []string{step("a", "sleep 60", short, "", strategy("Timeout", act("MarkAsSuccess")))}, []string{ok("r1")})),
			Want: map[string]status.Status{"s1.a": S, "s1.rollbackSteps.r1": NS, "s1": S}},
		{ID: "C23-unknown", YAML: pipeline("c23u",
			stageFull("s1", "", rollbackAll, []string{step("a", "exit 1", short, "", strategy("Timeout", act("MarkAsSuccess")))}, []string{ok("r1")})),
			Want: map[string]status.Status{"s1.a": F, "s1.rollbackSteps.r1": S, "s1": F}},
		{ID: "C24", YAML: pipeline("c24",
			stageFull("s1", "", strategy("AllErrors", act("Abort")), []string{group("g", "", strategy("AllErrors", act("Ignore")), []string{fail("a"), ok("b")}, nil), fail("c")}, nil)),
			Want: map[string]status.Status{"s1.g.a": IF, "s1.g.b": S, "s1.g": IF, "s1.c": AB, "s1": AB, "": AB}},
		{ID: "C25", YAML: pipeline("c25", stage("s1", "", step("a", "exit 1", "1m", "", strategy("AllErrors", act("Abort")))), stage("s2", "{pipelineStatus: All}", ok("b"))),
			Want: map[string]status.Status{"s1.a": AB, "s1": AB, "s2": NS, "": AB}},
		{ID: "C26", YAML: pipeline("c26", stage("s1", "",
			failOnce("a", marker("c26"), strategy("AllErrors", retry(2, short, act("MarkAsFailure")))),
			withOutput(whenStep("count", "R=<+execution.steps.a.retryCount>", "{stageStatus: All}"), "R"))),
			Want: map[string]status.Status{"s1.a": S, "s1": S}, Attempts: map[string]int{"s1.a": 2},
			Outputs: map[string]map[string]any{"s1.count": {"r": "1"}}},
		{ID: "C27", YAML: pipeline("c27", stage("s1", "",
			step("a", "exit 1", "1m", "", strategy("AllErrors", retry(3, short+", 1s 2ms", act("Ignore")))),
			withOutput(whenStep("count", "R=<+execution.steps.a.retryCount>", "{stageStatus: All}"), "R"))),
			Want: map[string]status.Status{"s1.a": IF, "s1": IF}, Attempts: map[string]int{"s1.a": 4},
			Outputs: map[string]map[string]any{"s1.count": {"r": "3"}}},
		{ID: "C28", YAML: pipeline("c28", stage("s1", "", step("a", "exit 1", "1m", "", strategy("AllErrors", retry(0, short, act("MarkAsSuccess")))))),
			Want: map[string]status.Status{"s1.a": S, "s1": S}, Attempts: map[string]int{"s1.a": 1}},
		{ID: "C29", YAML: pipeline("c29", stageFull("s1", "", rollbackAll, []string{fail("a")}, []string{fail("r1"), ok("r2")})),
			Want: map[string]status.Status{"s1.rollbackSteps.r1": F, "s1.rollbackSteps.r2": NS, "s1": F}},
		{ID: "C29-shielded", YAML: pipeline("c29s", stageFull("s1", "", rollbackAll, []string{fail("a")},
			[]string{step("r1", "exit 1", "1m", "", strategy("AllErrors", act("MarkAsFailure"))), whenStep("r2", "exit 0", "{stageStatus: All}")})),
			Want: map[string]status.Status{"s1.rollbackSteps.r1": F, "s1.rollbackSteps.r2": S, "s1": F}},
		{ID: "C30", YAML: pipeline("c30", stageFull("s1", "", rollbackAll, []string{fail("a")}, []string{whenStep("r1", "exit 0", "{stageStatus: Success}")})),
			Want: map[string]status.Status{"s1.rollbackSteps.r1": K, "s1": F}},
		{ID: "C34", YAML: pipeline("c34", stage("s1", "", failOnce("a", marker("c34"), strategy("AllErrors", manual("1h", act("Abort")))))),
			Want: map[string]status.Status{"s1.a": S, "s1": S, "": S}, Attempts: map[string]int{"s1.a": 2},
			Interventions: []Intervention{{Path: "s1.a", When: status.InterventionWaiting, Action: "Retry"}}},
		{ID: "C35", YAML: pipeline("c35", stage("s1", "", step("a", "exit 1", "1m", "", strategy("AllErrors", manual(short, act("MarkAsSuccess")))), ok("b"))),
			Want: map[string]status.Status{"s1.a": S, "s1.b": S, "s1": S}},
		{ID: "C36", YAML: pipeline("c36", stage("s1", "", step("a", "exit 1", "1m", "", strategy("AllErrors", manual("1h", act("Abort")))), ok("b"))),
			Want:          map[string]status.Status{"s1.a": F, "s1.b": K, "s1": F},
			Interventions: []Intervention{{Path: "s1.a", When: status.InterventionWaiting, Action: "MarkAsFailure"}}},
		{ID: "C37", YAML: pipeline("c37", stage("s1", "", step("a", "sleep 60", short, "", ""), ok("b")), stage("s2", "{pipelineStatus: Failure}", ok("c"))),
			Want: map[string]status.Status{"s1.a": EX, "s1.b": K, "s1": EX, "s2": S}},
		{ID: "C38", YAML: pipeline("c38", stage("s1", "", step("a", "sleep 60", short, "", strategy("Timeout", act("MarkAsFailure"))))),
			Want: map[string]status.Status{"s1.a": F, "s1": F}},
		{ID: "C39", YAML: pipeline("c39", stageFull("s1", "", "", []string{
			group("g", "", strategy("AllErrors", act("StepGroupRollback")), []string{ok("a"), fail("b"), ok("c")}, []string{ok("gr")}), ok("d")},
			[]string{ok("sr")})),
			Want: map[string]status.Status{"s1.g.c": NS, "s1.g.rollbackSteps.gr": S, "s1.g": F, "s1.d": NS, "s1.rollbackSteps.sr": NS, "s1": F}},
		{ID: "C40", YAML: pipeline("c40",
			stage("s1", "", group("g", "", strategy("AllErrors", "{type: RetryStepGroup, spec: {retryCount: 2, retryIntervals: ["+short+"]}}"),
				[]string{script("a", "echo a >> "+marker("c40"), ""), script("b", "echo b >> "+marker("c40")+"; exit 1", "")}, nil)),
			stage("count", "{pipelineStatus: All}", withOutput(script("n", "N=$(wc -l < "+marker("c40")+" | tr -d ' ')", ""), "N"))),
			Want:    map[string]status.Status{"s1.g": F, "s1": F},
			Outputs: map[string]map[string]any{"count.n": {"n": "6"}}},
		{ID: "C41", YAML: pipeline("c41",
			stageFull("s1", "", "", []string{ok("a1")}, []string{withOutput(script("rb1", "M=<+pipeline.executionMode>", ""), "M")}),
			stageFull("s2", "", "", []string{ok("a2")}, []string{ok("rb2")}),
			stageFull("s3", "", strategy("AllErrors", act("PipelineRollback")), []string{fail("a3")}, []string{ok("rb3")}),
			stage("s4", "{pipelineStatus: Failure}", ok("a4"))),
			Want: map[string]status.Status{"s3": F, "s4": NS, "pipelineRollback.s3.rollbackSteps.rb3": S,
				"pipelineRollback.s2.rollbackSteps.rb2": S, "pipelineRollback.s1.rollbackSteps.rb1": S, "": F},
			Order:   []string{"pipelineRollback.s3.rollbackSteps.rb3", "pipelineRollback.s2.rollbackSteps.rb2", "pipelineRollback.s1.rollbackSteps.rb1"},
			Outputs: map[string]map[string]any{"pipelineRollback.s1.rollbackSteps.rb1": {"m": "PIPELINE_ROLLBACK"}}},
		{ID: "C42", YAML: pipeline("c42", stage("s1", "", step("a", "sleep 600", "1m", "", strategy("UserMarkedFailure", act("Ignore"))), ok("b"))),
			Want:          map[string]status.Status{"s1.a": IF, "s1.b": S, "s1": IF},
			Interventions: []Intervention{{Path: "s1.a", When: status.Running, Action: "MarkAsFailure"}}},
		{ID: "stage-timeout", YAML: pipeline("stimeout",
			strings.Replace(stage("s1", "", ok("a"), step("b", "sleep 60", "1m", "", strategy("AllErrors", act("MarkAsSuccess"))), ok("c")), "type: Custom", "type: Custom, timeout: "+short, 1),
			stage("s2", "{pipelineStatus: Failure}", ok("d"))),
			Want: map[string]status.Status{"s1.a": S, "s1.b": EX, "s1.c": NS, "s1": EX, "s2": S, "": EX}},
		{ID: "pipeline-timeout", YAML: withTimeout(pipeline("ptimeout", stage("s1", "", script("a", "sleep 60", "")), stage("s2", "", ok("b"))), short),
			Want: map[string]status.Status{"s1.a": EX, "s1": EX, "s2": NS, "": EX}},
	}
}
