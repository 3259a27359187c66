package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/policies"
)

func policyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Test Rego policies and see their decision for a pipeline"}
	test := &cobra.Command{
		Use:   "test POLICY-DIR",
		Short: "Run the policies' own Rego tests (*_test.rego)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			results, err := policies.Test(cmd.Context(), args[0])
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			failed := 0
			for _, r := range results {
				mark := "PASS"
				if !r.Pass {
					mark, failed = "FAIL", failed+1
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", mark, r.Name, r.Error)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d tests, %d failed\n", len(results), failed)
			if failed > 0 || len(results) == 0 {
				return &exitError{code: ExitInvalid}
			}
			return nil
		},
	}
	var opts load.Options
	eval := &cobra.Command{
		Use:   "eval POLICY-DIR PIPELINE.yaml [--input-set F] [--set FQN=V]",
		Short: "Show the on-run policy decision for a pipeline without running it",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := policies.Load(cmd.Context(), args[0])
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			opts.ForRun, opts.Policies = true, e
			opts.PolicyMeta = map[string]any{"user": map[string]any{"name": currentUser()}, "trigger": "MANUAL", "timestamp": time.Now().UTC().Format(time.RFC3339)}
			r, err := load.File(args[1], opts)
			if err != nil {
				return usageErr("%v", err)
			}
			if r.Policy == nil {
				fmt.Fprint(cmd.ErrOrStderr(), r.Diags.Render(r.Sources))
				return &exitError{code: ExitInvalid, err: fmt.Errorf("no policy decision: the pipeline does not load, or no onrun set applies to it")}
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(r.Policy); err != nil {
				return err
			}
			if r.Policy.Denied() {
				return &exitError{code: ExitInvalid}
			}
			return nil
		},
	}
	eval.Flags().StringArrayVar(&opts.InputSets, "input-set", nil, "input set or overlay file (repeatable)")
	eval.Flags().StringArrayVar(&opts.Sets, "set", nil, "runtime input FQN=VALUE (repeatable)")
	templatesFlag(eval, &opts.TemplateDirs)
	cmd.AddCommand(test, eval)
	return cmd
}
