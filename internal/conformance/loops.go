package conformance

import (
	"path/filepath"
	"strings"

	"github.com/gantry-cd/gantry/status"
)

// looped adds a strategy to a step or stage fragment.
func looped(fragment, strategy string) string {
	return strings.Replace(fragment, ", identifier: ", ", strategy: "+strategy+", identifier: ", 1)
}

// Loops returns cases C45-C55 of spec 16.D. dir holds files the steps write.
func Loops(dir string) []Case {
	echo := func(id, text string) string {
		return withOutput(script(id, "O='"+text+"'", ""), "O")
	}
	concurrencyLog := filepath.Join(dir, "c47")
	return []Case{
		{ID: "C45", YAML: pipeline("c45", stage("s1", "", looped(echo("t", "<+matrix.os>/<+matrix.arch> <+strategy.iteration>/<+strategy.iterations>"),
			"{matrix: {os: [linux, windows], arch: [amd64, arm64], exclude: [{os: windows, arch: arm64}]}}"))),
			Want: map[string]status.Status{"s1.t": S, "s1.t_0_0": S, "s1.t_0_1": S, "s1.t_1_0": S, "s1.t_1_1": NS},
			Outputs: map[string]map[string]any{"s1.t_0_0": {"o": "linux/amd64 0/3"}, "s1.t_0_1": {"o": "linux/arm64 1/3"},
				"s1.t_1_0": {"o": "windows/amd64 2/3"}}},
		{ID: "C46", YAML: pipeline("c46", stage("s1", "", looped(ok("t"), `{matrix: {region: [us.east, eu], nodeName: "<+matrix.region>-x"}}`))),
			Want: map[string]status.Status{"s1.t_us_east_x": S, "s1.t_eu_x": S}},
		{ID: "C47", YAML: pipeline("c47", stage("s1", "", looped(script("x", "echo start <+matrix.n> >> "+concurrencyLog+"; sleep 1; echo end <+matrix.n> >> "+concurrencyLog, ""),
			"{matrix: {n: [a, b, c], maxConcurrency: 1}}"))),
			Want:  map[string]status.Status{"s1.x": S, "s1.x_0": S, "s1.x_1": S, "s1.x_2": S},
			Order: []string{"s1.x_0", "s1.x_1", "s1.x_2"}, Log: concurrencyLog,
			LogWant: "start a\nend a\nstart b\nend b\nstart c\nend c\n"},
		{ID: "C48", YAML: pipeline("c48", stage("s1", "",
			looped(echo("r", "<+repeat.item>"), "{repeat: {items: [a, b, c, d, e], start: 1, end: 3}}"),
			looped(echo("q", "<+repeat.item>"), "{repeat: {items: [a, b, c, d, e], start: 3}}"))),
			Want:    map[string]status.Status{"s1.r_0": S, "s1.r_1": S, "s1.r_2": NS, "s1.q_0": S, "s1.q_1": S, "s1.q_2": NS},
			Outputs: map[string]map[string]any{"s1.r_0": {"o": "b"}, "s1.r_1": {"o": "c"}, "s1.q_0": {"o": "d"}, "s1.q_1": {"o": "e"}}},
		{ID: "C50", YAML: pipeline("c50", stage("s1", "", looped(script("t", `[ "<+matrix.n>" != q ]`, ""), "{matrix: {n: [p, q, r]}}"), ok("after"))),
			Want: map[string]status.Status{"s1.t_0": S, "s1.t_1": F, "s1.t_2": S, "s1.t": F, "s1.after": K, "s1": F}},
		{ID: "C51", YAML: pipeline("c51", stage("s1", "", looped(script("t", `[ "<+matrix.n>" != q ]`, ""), "{matrix: {n: [q, p, r], maxConcurrency: 1}}"))),
			Want: map[string]status.Status{"s1.t_0": F, "s1.t_1": S, "s1.t_2": S, "s1.t": F}},
		{ID: "C51-skipqueued", YAML: pipeline("c51s", stage("s1", "", looped(script("t", `[ "<+matrix.n>" != q ]`, ""), "{matrix: {n: [q, p, r], maxConcurrency: 1}, onFailure: SkipQueued}"))),
			Want: map[string]status.Status{"s1.t_0": F, "s1.t_1": K, "s1.t_2": K, "s1.t": F}},
		{ID: "C52", YAML: pipeline("c52", looped(stage("st", `{pipelineStatus: Success, condition: "false"}`, ok("a")), "{matrix: {v: [1, 2]}}")),
			Want: map[string]status.Status{"st": K, "st_0": K, "st_1": K, "": S}},
		{ID: "C52-strategy-when", YAML: pipeline("c52w", looped(stage("st", "", ok("a")), `{matrix: {v: [1, 2]}, when: "false"}`)),
			Want: map[string]status.Status{"st": K, "st_0": NS, "": S}},
		{ID: "C53", YAML: pipeline("c53", looped(stage("st", "", looped(echo("t",
			"<+stage.matrix.svc> <+matrix.svc> <+strategy.node.t.iteration> <+strategy.node.st.iteration> <+strategy.currentGlobalIteration>/<+strategy.totalGlobalIteration>"),
			"{matrix: {svc: [x, y]}}")), "{matrix: {svc: [api, web]}}")),
			Want:    map[string]status.Status{"st_1.t_0": S},
			Outputs: map[string]map[string]any{"st_1.t_0": {"o": "web x 0 1 2/4"}}},
		{ID: "C54", YAML: pipeline("c54",
			stage("s1", "", looped(withOutput(script("probe", "CODE=<+strategy.iteration>1", ""), "CODE"), "{parallelism: 2}")),
			stage("s2", "", echo("use", "<+pipeline.stages.s1.spec.execution.steps.probe_1.output.outputVariables.code>|<+pipeline.stages.s1.spec.execution.steps.probe.output.outputVariables.code>"))),
			Want:    map[string]status.Status{"s2.use": S},
			Outputs: map[string]map[string]any{"s2.use": {"o": "11|null"}}},
		{ID: "C55", YAML: withVariable(pipeline("c55", stage("s1", "", looped(ok("t"), `{matrix: {host: '<+json.list("hosts", <+pipeline.variables.payload>)>'}}`))), "payload", `{"hosts": []}`),
			Want: map[string]status.Status{"s1.t": F, "s1": F}},
		{ID: "repeat-partition", YAML: pipeline("rpart", stage("s1", "", looped(echo("p", "<+repeat.partition>"), "{repeat: {items: [a, b, c, d, e], partitionSize: 2}}"))),
			Outputs: map[string]map[string]any{"s1.p_0": {"o": `["a","b"]`}, "s1.p_2": {"o": `["e"]`}}},
		{ID: "batched-loop", YAML: pipeline("batched", stage("s1", "",
			looped(echo("t", "<+strategy.iteration>"), "{repeat: {times: 450, maxConcurrency: 50}}"),
			echo("last", "<+execution.steps.t_449.output.outputVariables.o>/<+execution.steps.t_0.output.outputVariables.o>"))),
			Want:    map[string]status.Status{"s1.t": S, "s1.last": S, "s1": S},
			Outputs: map[string]map[string]any{"s1.last": {"o": "449/0"}}},
		{ID: "group-loop", YAML: pipeline("gloop", stage("s1", "", looped(group("g", "", "", []string{echo("a", "<+repeat.item>-<+stepGroup.identifierPostFix>")}, nil), "{repeat: {items: [x, y]}}"),
			echo("b", "<+execution.steps.g_1.steps.a.output.outputVariables.o>"))),
			Want:    map[string]status.Status{"s1.g": S, "s1.g_0.a": S, "s1.g_1.a": S},
			Outputs: map[string]map[string]any{"s1.g_0.a": {"o": "x-_0"}, "s1.b": {"o": "y-_1"}}},
	}
}
