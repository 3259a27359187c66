package expressions

import (
	"fmt"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// The benchmarks come in pairs: Gantry's rendering of cached expressions, and the same work done
// directly with expr on hand-translated programs over the same data. The ratio is the overhead
// of our layer (make bench prints it).

const cachedExpr = `<+pipeline.variables.env>`

func BenchmarkRenderCached(b *testing.B) {
	sc := testScope()
	tpl, err := Compile(cachedExpr, Text)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.Eval(sc, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawExprCached(b *testing.B) {
	env := map[string]any{"pipeline": testScope().Data["pipeline"]}
	prog, err := expr.Compile(`pipeline.variables.env`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := vm.Run(prog, env); err != nil {
			b.Fatal(err)
		}
	}
}

// stepSpec is a 20-expression step spec: references, interpolation, methods, operators.
var stepSpec = []struct{ gantry, raw string }{
	{`<+pipeline.variables.env>`, `pipeline.variables.env`},
	{`<+pipeline.name>`, `pipeline.name`},
	{`run-<+pipeline.sequenceId>`, `"run-" + string(pipeline.sequenceId)`},
	{`<+pipeline.stages.deploy.variables.tier>`, `pipeline.stages.deploy.variables.tier`},
	{`<+stage.variables.x>`, `pipeline.stages.deploy.variables.x`},
	{`<+execution.steps.dry.output.outputVariables.ver>`, `pipeline.stages.deploy.spec.execution.steps.dry.output.outputVariables.ver`},
	{`<+matrix.env>`, `matrix.env`},
	{`<+strategy.iteration>`, `strategy.iteration`},
	{`<+<+pipeline.variables.csv>.split(",")[1]>`, `split(pipeline.variables.csv, ",")[1]`},
	{`<+<+pipeline.variables.env>.toUpperCase()>`, `upper(pipeline.variables.env)`},
	{`<+<+pipeline.variables.n> * 2>`, `pipeline.variables.n * 2`},
	{`<+<+pipeline.variables.env> == "prod">`, `pipeline.variables.env == "prod"`},
	{`<+<+pipeline.variables.csv>.contains("blue")>`, `pipeline.variables.csv contains "blue"`},
	{`/srv/<+pipeline.variables.env>/<+pipeline.sequenceId>`, `"/srv/" + pipeline.variables.env + "/" + string(pipeline.sequenceId)`},
	{`<+pipeline.tags.team>`, `pipeline.tags.team`},
	{`<+env.name>`, `env.name`},
	{`<+repeat.item>`, `$env["repeat"].item`},
	{`<+<+pipeline.variables.env>.startsWith("pr")>`, `hasPrefix(pipeline.variables.env, "pr")`},
	{`<+pipeline.variables.list>`, `pipeline.variables.list`},
	{`<+<+pipeline.variables.n> > 2 ? "big" : "small">`, `pipeline.variables.n > 2 ? "big" : "small"`},
}

func BenchmarkRenderStepSpec20(b *testing.B) {
	sc := testScope()
	tpls := make([]*Template, len(stepSpec))
	for i, e := range stepSpec {
		t, err := Compile(e.gantry, Text)
		if err != nil {
			b.Fatal(e.gantry, err)
		}
		tpls[i] = t
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range tpls {
			if _, err := t.Eval(sc, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkRawExprStepSpec20(b *testing.B) {
	d := testScope().Data
	env := map[string]any{"pipeline": d["pipeline"], "matrix": d["matrix"], "strategy": d["strategy"],
		"env": d["env"], "repeat": d["repeat"]}
	progs := make([]*vm.Program, len(stepSpec))
	for i, e := range stepSpec {
		p, err := expr.Compile(e.raw)
		if err != nil {
			b.Fatal(fmt.Sprintf("%s: %v", e.raw, err))
		}
		progs[i] = p
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range progs {
			if _, err := vm.Run(p, env); err != nil {
				b.Fatal(err)
			}
		}
	}
}
