package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/workflows"
)

// A service's config files read by <+configFile.getAsString("id")> and getAsBase64 in a step,
// one kept beside the service and one in Git (fetched at the service phase, on a real Git
// server), with the expressions inside them rendered.
func TestConfigFileFunctions(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"environment.yaml", "infrastructure.yaml", "templates/hosts.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "custom", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), strings.ReplaceAll(string(b), "blue_pool", "cfg_pool"))
	}
	srv := gittest.Start(t)
	srv.NewRepo("config", map[string]string{"deploy/feature.flags": "beta=on\n"})
	t.Setenv(secrets.EnvName("cfg_git_user"), srv.Username)
	t.Setenv(secrets.EnvName("cfg_git_token"), srv.Password)
	writeFile(t, filepath.Join(dir, "connector.yaml"), fmt.Sprintf(`connector:
  name: Config repository
  identifier: config_repo
  type: Github
  spec:
    url: %s
    type: Account
    validationRepo: config.git
    authentication:
      type: Http
      spec:
        type: UsernameToken
        spec: {usernameRef: cfg_git_user, tokenRef: cfg_git_token}
`, srv.HTTPURL))
	writeFile(t, filepath.Join(dir, "config", "app.properties"), "service=<+service.name>\nversion=<+serviceVariables.version>\n")
	writeFile(t, filepath.Join(dir, "service.yaml"), `service:
  name: Shop
  identifier: shop
  serviceDefinition:
    type: CustomDeployment
    spec:
      customDeploymentRef: {templateRef: account.hosts_from_file, versionLabel: v1}
      variables:
        - {name: version, type: String, value: "1.4.2"}
      configFiles:
        - configFile:
            identifier: app
            spec:
              store: {type: Local, spec: {paths: [config/app.properties]}}
        - configFile:
            identifier: flags
            spec:
              store:
                type: Github
                spec: {connectorRef: config_repo, repoName: config.git, gitFetchType: Branch, branch: main, paths: [deploy/feature.flags]}
`)
	out := filepath.Join(dir, "out")
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), `pipeline:
  name: cfg
  identifier: cfg
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: CustomDeployment
          service: {serviceRef: shop}
          environment:
            environmentRef: staging
            infrastructureDefinitions: [{identifier: cfg_pool}]
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: read
                  identifier: read
                  timeout: 1m
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: |
                          cat > `+out+` <<'EOF'
                          <+configFile.getAsString("app")>
                          <+configFile.getAsString("flags")>
                          <+configFile.getAsBase64("flags")>
                          EOF
`)
	exec, err := env.starter.Start(context.Background(), loadRun(t, filepath.Join(dir, "pipeline.yaml")), workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	succeeded(t, exec.ID)
	if *updateHistories { // the stage publishing its config files (changeConfigFiles)
		recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := "service=Shop\nversion=1.4.2\n\nbeta=on\n\nYmV0YT1vbgo=\n"
	if string(b) != want {
		t.Errorf("the step read\n%q\nwant\n%q", b, want)
	}
}
