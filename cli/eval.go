package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/expressions"
)

func evalCmd() *cobra.Command {
	var (
		contextFile string
		at          string
		condition   bool
		strict      bool
	)
	cmd := &cobra.Command{
		Use:   "eval TEXT",
		Short: "Render <+...> expressions against a JSON execution context",
		Long: `Renders a text holding <+...> expressions (or, with --condition, a JEXL condition such as
<+a> == "x" && <+b>.contains("y")) against an execution context read from a JSON file, and prints
the typed result. On error it prints where evaluation failed.

The context file holds the roots expressions read: {"pipeline": {...}, "matrix": {...}, ...}.
--at names the node being evaluated (for relative references such as <+stage.variables.x> or
<+execution.steps.probe.output...>), e.g. pipeline.stages.deploy.spec.execution.steps.probe.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data := map[string]any{}
			if contextFile != "" {
				b, err := os.ReadFile(contextFile)
				if err != nil {
					return usageErr("%v", err)
				}
				dec := json.NewDecoder(strings.NewReader(string(b)))
				dec.UseNumber()
				if err := dec.Decode(&data); err != nil {
					return usageErr("%s: not a JSON object: %v", contextFile, err)
				}
				data = numbers(data).(map[string]any)
			}
			mode := expressions.Text
			if condition {
				mode = expressions.Condition
			}
			opts := expressions.Options{}
			if strict {
				opts.Unresolved = expressions.UnresolvedFail
			}
			src := args[0]
			v, err := expressions.Render(src, mode, expressions.NewScope(data, at), opts)
			out := cmd.OutOrStdout()
			if err != nil {
				var ee *expressions.Error
				if errors.As(err, &ee) {
					col := ee.Column(src)
					fmt.Fprintf(out, "error at column %d: %s\n  %s\n  %s^\n", col, ee.Message, src, strings.Repeat(" ", col-1))
				} else {
					fmt.Fprintf(out, "error: %v\n", err)
				}
				return &exitError{code: ExitInvalid}
			}
			fmt.Fprintf(out, "%s: %s\n", expressions.TypeName(v), display(v))
			return nil
		},
	}
	cmd.Flags().StringVar(&contextFile, "context", "", "JSON file with the execution context")
	cmd.Flags().StringVar(&at, "at", "", "FQN of the node being evaluated, for relative references")
	cmd.Flags().BoolVar(&condition, "condition", false, "read TEXT as a condition (when.condition, assertion) and require a boolean")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail on references that resolve to nothing, naming the missing path")
	return cmd
}

func display(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return expressions.ToString(v)
}

// numbers turns json.Number into int64 or float64.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
