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
// with its rollback steps (spec 15.2); the helm ones are NativeHelm stages.
var Strategies = []string{"rolling", "canary", "bluegreen", "helm", "helm-canary", "helm-bluegreen"}

// Scaffold is what `gantry init` fills in. With ChartRepo, it also writes the service (a Helm
// chart in that Git repository, at ChartPath on Branch) and its Git connector.
type Scaffold struct {
	Strategy, Name, ID, Service, Environment, Infrastructure string
	ChartRepo, ChartPath, Branch                             string
}

// DeploymentType is the stage's and the service's deployment type.
func (s Scaffold) DeploymentType() string {
	if strings.HasPrefix(s.Strategy, "helm") {
		return "NativeHelm"
	}
	return "Kubernetes"
}

// Render returns the pipeline YAML of a scaffold.
func (s Scaffold) Render() ([]byte, error) {
	exec, err := scaffolds.ReadFile("scaffolds/" + s.Strategy + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("unknown strategy %q; choose one of %s", s.Strategy, strings.Join(Strategies, ", "))
	}
	data := struct {
		Scaffold
		Execution string
	}{s, strings.TrimRight(string(exec), "\n")}
	return s.execute("stage.yaml.tmpl", data)
}

// RenderChartService returns the service file and the Git connector file of a scaffold with
// a ChartRepo.
func (s Scaffold) RenderChartService() (service, connector []byte, err error) {
	if service, err = s.execute("service.yaml.tmpl", s); err == nil {
		connector, err = s.execute("connector.yaml.tmpl", s)
	}
	return service, connector, err
}

func (s Scaffold) execute(name string, data any) ([]byte, error) {
	t, err := template.New(name).Funcs(template.FuncMap{"upper": strings.ToUpper}).ParseFS(scaffolds, "scaffolds/"+name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = t.Execute(&buf, data)
	return buf.Bytes(), err
}

func initCmd() *cobra.Command {
	s := Scaffold{}
	var out string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a Deployment pipeline for an execution strategy (rolling, canary, bluegreen, helm...)",
		Long: `Writes a pipeline with one Kubernetes Deployment stage using an execution strategy and its
rollback steps, as the reference offers when a stage is created:

  rolling    K8sRollingDeploy; rollback K8sRollingRollback
  canary     K8sCanaryDeploy + K8sCanaryDelete, then K8sRollingDeploy; rollback deletes the
             canary and rolls back the release
  bluegreen  K8sBlueGreenDeploy + K8sBGSwapServices; rollback swaps the services back
  helm       a NativeHelm stage: HelmDeploy; rollback HelmRollback
  helm-canary     a NativeHelm stage: HelmCanaryDeploy + HelmCanaryDelete, then HelmDeploy;
                  rollback HelmRollback (the canary release too)
  helm-bluegreen  a NativeHelm stage: HelmBGDeploy + HelmBlueGreenSwapStep; rollback
                  HelmRollback (swaps back, then rolls the colour's release back)

The stage refers to a service, an environment and an infrastructure definition by identifier;
put their files beside the pipeline (see examples/k8s). Without --output the YAML is printed.
With --chart-repo (and --output), the service is also written beside the pipeline, as a Helm
chart kept in that Git repository (--chart-path, --branch), with its Git connector.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s.ID == "" {
				s.ID = s.Service + "_" + strings.ReplaceAll(s.Strategy, "-", "_")
			}
			s.ChartPath = strings.ReplaceAll(s.ChartPath, "SERVICE", s.Service)
			if s.Name == "" {
				s.Name = s.Service + " " + s.Strategy
			}
			if s.ChartRepo != "" && out == "" {
				return usageErr("--chart-repo writes a service and a connector beside the pipeline: give --output")
			}
			b, err := s.Render()
			if err != nil {
				return usageErr("%v", err)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			files := map[string][]byte{out: b}
			order := []string{out}
			if s.ChartRepo != "" {
				svc, conn, err := s.RenderChartService()
				if err != nil {
					return usageErr("%v", err)
				}
				dir := filepath.Dir(out)
				sf, cf := filepath.Join(dir, "service-"+s.Service+".yaml"), filepath.Join(dir, "connector-"+s.Service+"-charts.yaml")
				files[sf], files[cf] = svc, conn
				order = append(order, sf, cf)
			}
			for _, f := range order {
				if _, err := os.Stat(f); err == nil {
					return usageErr("%s exists; gantry init does not overwrite files", f)
				}
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return usageErr("%v", err)
			}
			for _, f := range order {
				if err := os.WriteFile(f, files[f], 0o644); err != nil {
					return usageErr("%v", err)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s strategy); check it with: gantry validate %s\n", strings.Join(order, ", "), s.Strategy, out)
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
	f.StringVar(&s.ChartRepo, "chart-repo", "", "also write the service as a Helm chart in this Git repository (HTTPS URL), and its connector")
	f.StringVar(&s.ChartPath, "chart-path", "charts/SERVICE", "the chart's folder in --chart-repo")
	f.StringVar(&s.Branch, "branch", "main", "the branch of --chart-repo")
	return cmd
}
