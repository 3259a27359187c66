package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/pipeline/load"
)

func validateCmd() *cobra.Command {
	var opts load.Options
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check pipelines and input sets without running them",
		Long: `Checks a pipeline (root "pipeline:"), input set or overlay input set: YAML syntax, unknown keys,
required fields, identifiers, step types and specs, failure strategies, conditions, looping
strategies, barriers, durations, runtime inputs and expression syntax. Input sets and --set values
are merged as a run would merge them. Prints "ok" with a summary, or every problem as
file:line:col with a hint.

Exit codes: 0 valid, 1 invalid, 2 usage or I/O error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			invalid := false
			for _, path := range args {
				r, err := load.File(path, opts)
				if err != nil {
					return usageErr("%v", err)
				}
				if !report(out, path, r) {
					invalid = true
				}
			}
			if invalid {
				return &exitError{code: ExitInvalid}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&opts.InputSets, "input-set", nil, "input set or overlay file to merge (repeatable, in precedence order)")
	cmd.Flags().StringArrayVar(&opts.Sets, "set", nil, "runtime input value as FQN=VALUE, e.g. pipeline.variables.region=eu (repeatable)")
	cmd.Flags().StringArrayVar(&opts.EntityDirs, "entities", nil, "folder of service, environment, infrastructure and connector files (repeatable; the pipeline's folder is always searched)")
	cmd.Flags().BoolVar(&opts.ForRun, "for-run", false, "also fail when a required runtime input has no value, as a run would")
	return cmd
}

// report prints a loaded file's diagnostics and summary; it returns false when the file is invalid.
func report(out io.Writer, path string, r *load.Result) bool {
	if len(r.Diags) > 0 {
		fmt.Fprint(out, r.Diags.Render(r.Sources))
	}
	if !r.OK() {
		n := len(r.Diags.Errors())
		fmt.Fprintf(out, "%s: invalid: %d %s\n", path, n, plural(n, "error", "errors"))
		return false
	}
	f := r.File
	switch {
	case f.Pipeline != nil:
		s := r.Summary
		line := fmt.Sprintf("ok %s: pipeline %s: %d %s, %d %s", path, f.Pipeline.Identifier,
			s.Stages, plural(s.Stages, "stage", "stages"), s.Steps, plural(s.Steps, "step", "steps"))
		if s.Groups > 0 {
			line += fmt.Sprintf(", %d step %s", s.Groups, plural(s.Groups, "group", "groups"))
		}
		var open []string
		for _, o := range r.Open {
			open = append(open, o.Describe())
		}
		if len(open) == 0 {
			line += "; no runtime inputs open"
		} else {
			line += fmt.Sprintf("; %d runtime %s open: %s", len(open), plural(len(open), "input", "inputs"), strings.Join(open, ", "))
		}
		fmt.Fprintln(out, line)
	case f.InputSet != nil:
		fmt.Fprintf(out, "ok %s: input set %s\n", path, f.InputSet.Identifier)
	case f.Trigger != nil:
		fmt.Fprintf(out, "ok %s: trigger %s (%s) for pipeline %s\n", path, f.Trigger.Identifier, f.Trigger.Source.Type, f.Trigger.PipelineIdentifier)
	case f.Service != nil:
		fmt.Fprintf(out, "ok %s: service %s (%s, %d manifests)\n", path, f.Service.Identifier, f.Service.ServiceDefinition.Type, len(f.Service.ServiceDefinition.Spec.Manifests))
	case f.Environment != nil:
		fmt.Fprintf(out, "ok %s: environment %s (%s)\n", path, f.Environment.Identifier, f.Environment.Type)
	case f.Infrastructure != nil:
		fmt.Fprintf(out, "ok %s: infrastructure definition %s of environment %s\n", path, f.Infrastructure.Identifier, f.Infrastructure.EnvironmentRef)
	case f.Connector != nil:
		fmt.Fprintf(out, "ok %s: connector %s (%s, %s)\n", path, f.Connector.Identifier, f.Connector.Type, f.Connector.Spec.Credential.Type)
	case f.Overlay != nil:
		fmt.Fprintf(out, "ok %s: overlay input set %s (%d input sets)\n", path, f.Overlay.Identifier, len(f.Overlay.InputSetReferences))
	}
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
