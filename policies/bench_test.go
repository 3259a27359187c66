package policies

import (
	"context"
	"fmt"
	"io/fs"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// twentyStages is an on-run input: a 20-stage pipeline, each stage with 3 ShellScript steps.
func twentyStages() map[string]any {
	var stages []any
	for i := 0; i < 20; i++ {
		var steps []any
		for j := 0; j < 3; j++ {
			steps = append(steps, map[string]any{"step": map[string]any{"identifier": fmt.Sprintf("s%d", j), "type": "ShellScript",
				"spec": map[string]any{"source": map[string]any{"spec": map[string]any{"script": "make build && ./deploy.sh"}}}}})
		}
		stages = append(stages, map[string]any{"stage": map[string]any{"identifier": fmt.Sprintf("st%d", i), "type": "Deployment",
			"spec": map[string]any{"execution": map[string]any{"steps": steps, "rollbackSteps": steps[:1]}}}})
	}
	return map[string]any{"pipeline": map[string]any{"identifier": "p", "timeout": "2h", "tags": map[string]any{"owner": "a", "team": "b"},
		"variables": []any{map[string]any{"name": "region", "type": "String", "value": "eu"}}, "stages": stages}}
}

// starterLibrary loads the embedded starter library.
func starterLibrary(tb testing.TB) *Engine {
	sub, _ := fs.Sub(Library, "library")
	e, err := LoadFS(context.Background(), sub, "library")
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// BenchmarkOnRunPrepared evaluates the starter library's on-run sets with the queries prepared
// once, as gantry does.
func BenchmarkOnRunPrepared(b *testing.B) {
	e := starterLibrary(b)
	sets, input := e.OnRunSets(Scope{}), twentyStages()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Evaluate(context.Background(), sets, input); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/eval")
}

// BenchmarkOnRunNewPipeline is BenchmarkOnRunPrepared with a pipeline the engine has not seen
// in each decision (its identifier changes), so the input is converted every time.
func BenchmarkOnRunNewPipeline(b *testing.B) {
	e := starterLibrary(b)
	sets, input := e.OnRunSets(Scope{}), twentyStages()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		input["pipeline"].(map[string]any)["identifier"] = fmt.Sprintf("p%d", i)
		if _, err := e.Evaluate(context.Background(), sets, input); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/eval")
}

// BenchmarkOnRunUnprepared does the same work compiling and preparing the queries on every
// evaluation (the baseline).
func BenchmarkOnRunUnprepared(b *testing.B) {
	sub, _ := fs.Sub(Library, "library")
	modules, err := readModules(sub, "library", false)
	if err != nil {
		b.Fatal(err)
	}
	input := twentyStages()
	var queries []string
	for _, pol := range []string{"no_curl_pipe_shell", "no_plaintext_secrets", "approval_before_prod", "deployment_has_rollback",
		"required_tags", "max_pipeline_timeout", "prod_failure_strategies", "allowed_registries"} {
		queries = append(queries, "data.gantry."+pol+".deny", "data.gantry."+pol+".warn")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, q := range queries {
			opts := append(builtinOptions(), rego.Query(q), rego.Input(input), rego.SetRegoVersion(ast.RegoV1))
			for name, src := range modules {
				opts = append(opts, rego.Module(name, src))
			}
			if _, err := rego.New(opts...).Eval(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/eval")
}
