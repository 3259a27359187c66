package cli

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
)

//go:embed scaffolds
var scaffolds embed.FS

// Strategies are the execution strategies offered when a Deployment stage is created, each
// with its rollback steps (spec 15.2).
var Strategies = []string{"rolling", "canary", "bluegreen"}

// Scaffold is what `gantry init` fills in.
type Scaffold struct {
	Strategy, Name, ID, Service, Environment, Infrastructure string
}

// Render returns the pipeline YAML of a scaffold.
func (s Scaffold) Render() ([]byte, error) {
	exec, err := scaffolds.ReadFile("scaffolds/" + s.Strategy + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("unknown strategy %q; choose one of %s", s.Strategy, strings.Join(Strategies, ", "))
	}
	t, err := template.ParseFS(scaffolds, "scaffolds/stage.yaml.tmpl")
	if err != nil {
		return nil, err
	}
	data := struct {
		Scaffold
		Execution string
	}{s, strings.TrimRight(string(exec), "\n")}
	var buf bytes.Buffer
	err = t.Execute(&buf, data)
	return buf.Bytes(), err
}

func initCmd() *cobra.Command {
	s := Scaffold{}
	var out string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a Deployment pipeline for an execution strategy (rolling, canary, bluegreen)",
		Long: `Writes a pipeline with one Kubernetes Deployment stage using an execution strategy and its
rollback steps, as the reference offers when a stage is created:

  rolling    K8sRollingDeploy; rollback K8sRollingRollback
  canary     K8sCanaryDeploy + K8sCanaryDelete, then K8sRollingDeploy; rollback deletes the
             canary and rolls back the release
  bluegreen  K8sBlueGreenDeploy + K8sBGSwapServices; rollback swaps the services back

The stage refers to a service, an environment and an infrastructure definition by identifier;
put their files beside the pipeline (see examples/k8s). Without --output the YAML is printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s.ID == "" {
				s.ID = s.Service + "_" + s.Strategy
			}
			if s.Name == "" {
				s.Name = s.Service + " " + s.Strategy
			}
			b, err := s.Render()
			if err != nil {
				return usageErr("%v", err)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if _, err := os.Stat(out); err == nil {
				return usageErr("%s exists; gantry init does not overwrite files", out)
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return usageErr("%v", err)
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s strategy); check it with: gantry validate %s\n", out, s.Strategy, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.Strategy, "strategy", "rolling", "execution strategy: "+strings.Join(Strategies, ", "))
	f.StringVar(&s.Service, "service", "web", "service identifier (serviceRef)")
	f.StringVar(&s.Environment, "environment", "dev", "environment identifier (environmentRef)")
	f.StringVar(&s.Infrastructure, "infrastructure", "dev_cluster", "infrastructure definition identifier")
	f.StringVar(&s.ID, "identifier", "", "pipeline identifier (default SERVICE_STRATEGY)")
	f.StringVar(&s.Name, "name", "", "pipeline name (default \"SERVICE STRATEGY\")")
	f.StringVarP(&out, "output", "o", "", "file to write (default: print)")
	return cmd
}
