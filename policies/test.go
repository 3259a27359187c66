package policies

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestResult is one Rego test's outcome.
type TestResult struct {
	Name  string
	Pass  bool
	Error string
}

// Test runs the Rego tests (*_test.rego) of a policy directory with OPA's test runner.
func Test(ctx context.Context, dir string) ([]TestResult, error) {
	modules, _, err := tester.LoadWithRegoVersion([]string{dir}, nil, ast.RegoV1)
	if err != nil {
		return nil, fmt.Errorf("policies in %s: %w", dir, err)
	}
	ch, err := tester.NewRunner().AddCustomBuiltins(testBuiltins()).SetModules(modules).RunTests(ctx, nil)
	if err != nil {
		return nil, err
	}
	var out []TestResult
	for r := range ch {
		tr := TestResult{Name: r.Package + "." + r.Name, Pass: !r.Fail && r.Error == nil}
		if r.Error != nil {
			tr.Error = r.Error.Error()
		} else if r.Fail {
			tr.Error = "failed"
			if r.Location != nil {
				tr.Error = fmt.Sprintf("failed at %s", r.Location)
			}
		}
		out = append(out, tr)
	}
	return out, nil
}
