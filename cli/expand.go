package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/templates"
)

// templatesFlag adds --templates; its default is GANTRY_TEMPLATES, a path list.
// strictFlag is --strict: unknown keys, which the reference ignores and Gantry warns about, are
// errors (default $GANTRY_STRICT).
func strictFlag(cmd *cobra.Command, strict *bool) {
	def, _ := strconv.ParseBool(os.Getenv("GANTRY_STRICT"))
	cmd.Flags().BoolVar(strict, "strict", def, "make every unknown key, and every expression path that names nothing the pipeline defines, an error instead of a warning (default $GANTRY_STRICT)")
}

// buildInfraFlags name the build infrastructure of CI stages that name a runtime (spec 22.1).
func buildInfraFlags(cmd *cobra.Command, b *pipeline.BuildInfra) {
	cmd.Flags().StringVar(&b.Connector, "ci-connector", os.Getenv("GANTRY_CI_CONNECTOR"),
		"K8sCluster connector that runs the CI stages naming a runtime (Cloud, Docker) instead of an infrastructure (env GANTRY_CI_CONNECTOR)")
	cmd.Flags().StringVar(&b.Namespace, "ci-namespace", envOr("GANTRY_CI_NAMESPACE", pipeline.DefaultNamespace),
		"namespace of those stages' pods (env GANTRY_CI_NAMESPACE)")
	cmd.Flags().StringVar(&b.Image, "ci-image", os.Getenv("GANTRY_CI_IMAGE"),
		"image of their container steps that name none, as the reference's hosted machines give one (env GANTRY_CI_IMAGE)")
	cmd.Flags().BoolVar(&b.Machines, "build-machine", os.Getenv("GANTRY_BUILD_MACHINE") != "false",
		"without --ci-connector, run those stages on build machines, their steps without an image on the machine itself; this process's worker is one (env GANTRY_BUILD_MACHINE=false turns it off)")
	cmd.Flags().StringVar(&b.Containerd, "containerd", os.Getenv("GANTRY_CONTAINERD"),
		"containerd socket through which build machines run the steps that name an image, in containers (e.g. /run/containerd/containerd.sock; env GANTRY_CONTAINERD); on validate, says the build machines have one")
}

func templatesFlag(cmd *cobra.Command, dirs *[]string) {
	var def []string
	if env := os.Getenv("GANTRY_TEMPLATES"); env != "" {
		def = filepath.SplitList(env)
	}
	cmd.Flags().StringArrayVar(dirs, "templates", def, "folder of template files, searched at any depth (repeatable; default $GANTRY_TEMPLATES); "+
		"the pipeline's templates/ folder and the template files beside it are always searched")
}

func expandCmd() *cobra.Command {
	var opts load.Options
	cmd := &cobra.Command{
		Use:   "expand PIPELINE.yaml [--templates DIR] [--input-set F] [--set FQN=V]",
		Short: "Print the pipeline with its templates expanded and its runtime inputs merged: what a run would run",
		Long: `Expands every template link of the pipeline (step, step group, stage and pipeline
templates, nested ones included), merges input sets and --set values, and prints the resulting
pipeline YAML. Runtime inputs that nothing fills stay <+input>. Problems are reported as
gantry validate reports them, and nothing is printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := load.File(args[0], opts)
			if err != nil {
				return usageErr("%v", err)
			}
			// What a run would run needs every template: one not found is an error here.
			for i := range r.Diags {
				if r.Diags[i].Code == templates.MissingTemplate {
					r.Diags[i].Severity = diag.Error
				}
			}
			if len(r.Diags) > 0 {
				fmt.Fprint(cmd.ErrOrStderr(), r.Diags.Render(r.Sources))
			}
			if !r.OK() || r.Merged == nil {
				if r.Merged == nil && r.OK() {
					return &exitError{code: ExitInvalid, err: fmt.Errorf("%s holds no pipeline", args[0])}
				}
				return &exitError{code: ExitInvalid}
			}
			enc := yaml.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent(2)
			defer enc.Close()
			return enc.Encode(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: "!!str", Value: "pipeline"}, plain(r.Merged.Node)}})
		},
	}
	cmd.Flags().StringArrayVar(&opts.InputSets, "input-set", nil, "input set or overlay file to merge (repeatable, in precedence order)")
	cmd.Flags().StringArrayVar(&opts.Sets, "set", nil, "runtime input value as FQN=VALUE (repeatable)")
	templatesFlag(cmd, &opts.TemplateDirs)
	return cmd
}

// plain copies a tree without positions and comments, so the encoder lays it out afresh.
func plain(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Style: n.Style &^ (yaml.FlowStyle)}
	if n.Kind == yaml.AliasNode {
		return plain(n.Alias)
	}
	for _, k := range n.Content {
		c.Content = append(c.Content, plain(k))
	}
	return c
}
