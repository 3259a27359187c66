package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/activities/gitstore"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/entities"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/pipeline/validate"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/remote"
)

func validateCmd() *cobra.Command {
	var opts load.Options
	var output string
	var listTypes bool
	var checkout string
	var fromGit gitFlags
	cmd := &cobra.Command{
		Use:   "validate FILE... | --checkout DIR [FILE...]",
		Short: "Check pipelines and input sets without running them",
		Long: `Checks a pipeline (root "pipeline:"), input set or overlay input set: YAML syntax, unknown keys,
required fields, identifiers, step types and specs, failure strategies, conditions, looping
strategies, barriers, durations, runtime inputs and expression syntax. Input sets and --set values
are merged as a run would merge them. Prints "ok" with a summary, or every problem as
file:line:col with a hint.

Three verdicts: errors (broken input, with file:line:col and a hint), unsupported (valid in the
reference, but Gantry cannot run it yet: the code begins with "unsupported" and names what), and
warnings (accepted, but said: for example a field Gantry does not act on, or a key the reference
does not define, which it ignores; --strict makes unknown keys errors).
--output json prints, per file, whether it is valid and every diagnostic (severity, code, file,
line, column, message, hint). --list-types prints the stage, deployment and step types Gantry runs.

--checkout DIR validates a repository as it is (a pull request's branch, before it merges):
every pipeline in it, or the FILEs given (paths in the checkout), with the templates, input
sets and entities of the whole checkout resolved between them as a server resolves remote
entities kept in that repository (docs/git.md).

Exit codes: 0 valid (warnings allowed), 1 invalid or unsupported, 2 usage or I/O error.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if listTypes {
				return cobra.NoArgs(cmd, args)
			}
			if checkout != "" || fromGit.connector != "" {
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if output != "text" && output != "json" {
				return usageErr("--output must be text or json, got %q", output)
			}
			if listTypes {
				return printTypes(out, output)
			}
			invalid := false
			var files []jsonValidation
			loadOne := func(path string) (*load.Result, error) { return load.File(path, opts) }
			prefix := ""
			if fromGit.connector != "" {
				if checkout != "" {
					return usageErr("give --checkout or --connector, not both")
				}
				var err error
				if checkout, prefix, err = fromGit.snapshot(cmd.Context(), opts.EntityDirs); err != nil {
					return usageErr("%v", err)
				}
			}
			if checkout != "" {
				ws, pipelines, err := remote.Checkout(checkout)
				if err != nil {
					return usageErr("%v", err)
				}
				defer ws.Close()
				ws.Within(prefix)
				if len(args) == 0 {
					args = remote.Sorted(pipelines)
				}
				loadOne = func(path string) (*load.Result, error) {
					file, ok := pipelines[filepath.ToSlash(filepath.Clean(path))]
					if !ok {
						return nil, fmt.Errorf("%s is no pipeline of the checkout %s", path, checkout)
					}
					r, err := load.File(file, opts)
					if err == nil {
						r.Diags, r.Sources = ws.Rename(r.Diags), ws.RenameSources(r.Sources)
					}
					return r, err
				}
			}
			for _, path := range args {
				show := prefix + filepath.ToSlash(path)
				r, err := loadOne(path)
				if err != nil {
					return usageErr("%v", err)
				}
				if !r.OK() {
					invalid = true
				}
				if output == "json" {
					files = append(files, validationJSON(show, r))
				} else {
					report(out, show, r)
				}
			}
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					Files []jsonValidation `json:"files"`
				}{files}); err != nil {
					return err
				}
			}
			if invalid {
				return &exitError{code: ExitInvalid}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	fromGit.add(cmd)
	cmd.Flags().StringVar(&checkout, "checkout", "", "validate a repository's checkout as a server reads it from Git: its pipelines (or the FILEs given, as paths in it) with its templates, input sets and entities")
	cmd.Flags().BoolVar(&listTypes, "list-types", false, "print the stage, deployment and step types Gantry runs, and exit")
	cmd.Flags().StringArrayVar(&opts.InputSets, "input-set", nil, "input set or overlay file to merge (repeatable, in precedence order)")
	cmd.Flags().StringArrayVar(&opts.Sets, "set", nil, "runtime input value as FQN=VALUE, e.g. pipeline.variables.region=eu (repeatable)")
	cmd.Flags().StringArrayVar(&opts.EntityDirs, "entities", nil, "folder of service, environment, infrastructure and connector files (repeatable; the pipeline's folder is always searched)")
	templatesFlag(cmd, &opts.TemplateDirs)
	strictFlag(cmd, &opts.Strict)
	opts.BuildInfra = &pipeline.BuildInfra{}
	buildInfraFlags(cmd, opts.BuildInfra)
	cmd.Flags().BoolVar(&opts.ForRun, "for-run", false, "also fail when a required runtime input has no value, as a run would")
	return cmd
}

// printTypes prints what Gantry runs: the list unsupported-step-type hints point to.
func printTypes(out io.Writer, output string) error {
	types := struct {
		Stages      []string `json:"stages"`
		Deployments []string `json:"deployments"`
		Steps       []string `json:"steps"`
	}{pipeline.StageTypes, validate.DeploymentTypes(), steps.Runnable()}
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(types)
	}
	fmt.Fprintf(out, "stage types: %s\ndeployment types: %s\nstep types: %s\n",
		strings.Join(types.Stages, ", "), strings.Join(types.Deployments, ", "), strings.Join(types.Steps, ", "))
	return nil
}

// report prints a loaded file's diagnostics and summary; it returns false when the file is invalid.
func report(out io.Writer, path string, r *load.Result) bool {
	if len(r.Diags) > 0 {
		fmt.Fprint(out, r.Diags.Render(r.Sources))
	}
	if !r.OK() {
		var parts []string
		if n := len(r.Diags.Invalid()); n > 0 {
			parts = append(parts, fmt.Sprintf("invalid: %d %s", n, plural(n, "error", "errors")))
		}
		if n := len(r.Diags.UnsupportedOnly()); n > 0 {
			parts = append(parts, fmt.Sprintf("unsupported: %d %s Gantry cannot run yet", n, plural(n, "feature", "features")))
		}
		fmt.Fprintf(out, "%s: %s\n", path, strings.Join(parts, "; "))
		return false
	}
	f := r.File
	switch {
	case f.Pipeline != nil:
		s := r.Summary
		line := fmt.Sprintf("ok %s: pipeline %s: %d %s, %d %s", path, f.Pipeline.Identifier,
			s.Stages, plural(s.Stages, "stage", "stages"), s.Steps, plural(s.Steps, "step", "steps"))
		if pipeline.Unexpanded(f.Pipeline.Node) {
			line = fmt.Sprintf("ok %s: pipeline %s, from a pipeline template not found (not checked inside)", path, f.Pipeline.Identifier)
		}
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
	case f.Template != nil:
		fmt.Fprintf(out, "ok %s: %s template %s@%s\n", path, f.Template.Type, f.Template.Identifier, f.Template.VersionLabel)
	case f.InputSet != nil:
		fmt.Fprintf(out, "ok %s: input set %s\n", path, f.InputSet.Identifier)
	case f.Trigger != nil:
		fmt.Fprintf(out, "ok %s: trigger %s (%s) for pipeline %s\n", path, f.Trigger.Identifier, f.Trigger.Source.Type, f.Trigger.PipelineIdentifier)
	case f.Service != nil && (f.Service.ServiceDefinition == nil || f.Service.ServiceDefinition.Spec == nil):
		fmt.Fprintf(out, "ok %s: service %s (no service definition yet)\n", path, f.Service.Identifier)
	case f.Service != nil:
		fmt.Fprintf(out, "ok %s: service %s (%s, %d manifests)\n", path, f.Service.Identifier, f.Service.ServiceDefinition.Type, len(f.Service.ServiceDefinition.Spec.Manifests))
	case f.Environment != nil:
		fmt.Fprintf(out, "ok %s: environment %s (%s)\n", path, f.Environment.Identifier, f.Environment.Type)
	case f.Infrastructure != nil:
		fmt.Fprintf(out, "ok %s: infrastructure definition %s of environment %s\n", path, f.Infrastructure.Identifier, f.Infrastructure.EnvironmentRef)
	case f.EnvGroup != nil:
		fmt.Fprintf(out, "ok %s: environment group %s (%d environments)\n", path, f.EnvGroup.Identifier, len(f.EnvGroup.EnvIdentifiers))
	case f.Connector != nil:
		fmt.Fprintf(out, "ok %s: connector %s (%s, %s)\n", path, f.Connector.Identifier, f.Connector.Type, f.Connector.Access())
	case f.Secret != nil:
		fmt.Fprintf(out, "ok %s: secret %s (%s)\n", path, f.Secret.Identifier, f.Secret.Type)
	case f.Freeze != nil:
		status := f.Freeze.Status
		if status == "" {
			status = "Enabled"
		}
		fmt.Fprintf(out, "ok %s: freeze %s (%s, %d windows)\n", path, f.Freeze.Identifier, status, len(f.Freeze.Windows))
	case f.Monitored != nil:
		sources := 0
		if f.Monitored.Sources != nil {
			sources = len(f.Monitored.Sources.HealthSources)
		}
		fmt.Fprintf(out, "ok %s: monitored service %s (service %s, %d health sources)\n", path, f.Monitored.Identifier, f.Monitored.ServiceRef, sources)
	case f.Overlay != nil:
		fmt.Fprintf(out, "ok %s: overlay input set %s (%d input sets)\n", path, f.Overlay.Identifier, len(f.Overlay.InputSetReferences))
	}
	return true
}

// jsonValidation is one file of `validate --output json`; keep this shape stable.
type jsonValidation struct {
	File        string           `json:"file"`
	Valid       bool             `json:"valid"`
	Diagnostics []jsonDiagnostic `json:"diagnostics"`
}

type jsonDiagnostic struct {
	Severity string `json:"severity"` // error, unsupported or warning
	Code     string `json:"code"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
	Via      string `json:"via,omitempty"` // how a template's position got into the pipeline
}

func validationJSON(path string, r *load.Result) jsonValidation {
	v := jsonValidation{File: path, Valid: r.OK(), Diagnostics: []jsonDiagnostic{}}
	for _, d := range r.Diags {
		v.Diagnostics = append(v.Diagnostics, jsonDiagnostic{Severity: d.Severity.String(), Code: d.Code, File: d.Pos.File,
			Line: d.Pos.Line, Column: d.Pos.Col, Message: d.Message, Hint: d.Hint, Via: d.Pos.Via})
	}
	return v
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// gitFlags name a repository and branch to validate as they are in Git, through a connector.
type gitFlags struct {
	connector, repo, branch string
}

func (f *gitFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.connector, "connector", "", "validate a repository's branch as it is in Git: the Git connector (a connector file in --entities, default the current folder; its secrets from GANTRY_SECRET_<ID>) that reaches it")
	cmd.Flags().StringVar(&f.repo, "repo", "", "with --connector: the repository (repoName), for an Account connector")
	cmd.Flags().StringVar(&f.branch, "branch", "main", "with --connector: the branch to validate")
}

// snapshot reads the branch's head's YAML files through the connector, as a server reads a
// remote pipeline's repository, and returns where they are and how diagnostics name them.
func (f *gitFlags) snapshot(ctx context.Context, entityDirs []string) (dir, prefix string, err error) {
	if len(entityDirs) == 0 {
		entityDirs = []string{"."}
	}
	cat, _ := entities.Load(entityDirs, func(pf *pipeline.File) diag.List { _, d := validate.File(pf); return d })
	gc, err := entities.GitConnectorOf(cat.Connectors, f.connector, strings.Join(entityDirs, ", "))
	if err != nil {
		return "", "", err
	}
	st := &plan.GitStore{Type: gc.Type, Connector: gc, RepoName: f.repo, Branch: f.branch}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	git := &gitstore.Fetcher{Secrets: &secrets.Store{}, CacheDir: filepath.Join(base, "gantry", "git")}
	if st.Commit, err = git.Head(ctx, st); err != nil {
		return "", "", err
	}
	snap, commit, err := git.Snapshot(ctx, st)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(snap, "files"), fmt.Sprintf("%s@%s:", st.Repo(), commit[:12]), nil
}
