package e2e

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
)

// ledgerEntities writes a service with an image artifact, a production environment and its
// infrastructure, named for one test so that no other test's deployments reach its ledger.
func ledgerEntities(t *testing.T, name string) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "connector.yaml"), `connector:
  name: Local cluster
  identifier: local_cluster
  type: K8sCluster
  spec: {credential: {type: InheritFromDelegate}}
`)
	writeFile(t, filepath.Join(dir, "service.yaml"), `service:
  name: Checkout
  identifier: `+name+`
  serviceDefinition:
    type: Kubernetes
    spec:
      artifacts:
        primary:
          primaryArtifactRef: image
          sources:
            - {identifier: image, type: DockerRegistry, spec: {imagePath: shop/checkout, tag: <+pipeline.variables.tag>}}
`)
	writeFile(t, filepath.Join(dir, "env.yaml"), `environment:
  name: Production
  identifier: `+name+`_prod
  type: Production
`)
	writeFile(t, filepath.Join(dir, "infra.yaml"), `infrastructureDefinition:
  name: Prod cluster
  identifier: `+name+`_cluster
  environmentRef: `+name+`_prod
  deploymentType: Kubernetes
  type: KubernetesDirect
  spec: {connectorRef: local_cluster, namespace: shop}
`)
	return dir
}

func ledgerPipeline(name string) string {
	return `pipeline:
  name: ` + name + `
  identifier: ` + name + `
  variables:
    - {name: tag, type: String, value: <+input>}
    - {name: fail, type: String, value: <+input>}
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: ` + name + `}
          environment: {environmentRef: ` + name + `_prod, infrastructureDefinitions: [{identifier: ` + name + `_cluster}]}
          execution:
            steps:
              - step: {type: ShellScript, name: roll out, identifier: roll, spec: {shell: Bash, source: {type: Inline, spec: {script: '[ "<+pipeline.variables.fail>" != yes ]'}}}}
            rollbackSteps:
              - step: {type: ShellScript, name: undo, identifier: undo, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
`
}

// Deployments recorded on a real Temporal server: v1, a v2 that fails and rolls back, v3;
// the services list says v3 runs and the last deployment was v3's, the service's history
// lists all three newest first, a delivery repeated by a retry counts once, and the DORA
// figures count them. The API and the starter read the same ledger.
func TestDeploymentsLedgerRecordsEveryDeployment(t *testing.T) {
	const name = "ledger_checkout"
	dir := ledgerEntities(t, name)
	src := []byte(ledgerPipeline(name))
	ctx := context.Background()
	var execs []string
	for _, run := range []struct{ tag, fail string }{{"1.0", "no"}, {"2.0", "yes"}, {"3.0", "no"}} {
		p := compile(t, name+".yaml", src, load.Options{EntityDirs: []string{dir}, Sets: []string{"pipeline.variables.tag=" + run.tag, "pipeline.variables.fail=" + run.fail}})
		exec, res := runPlan(t, env.starter, p)
		if want := map[string]status.Status{"no": status.Succeeded, "yes": status.Failed}[run.fail]; res.Status != want {
			t.Fatalf("%s: %s, want %s", run.tag, res.Status, want)
		}
		execs = append(execs, exec.ID)
	}
	key := contract.DeploymentKey{Project: "default/default", Service: name, Environment: name + "_prod", Infra: name + "_cluster"}
	lv := env.starter.Ledger()
	var targets []contract.LedgerSummary
	deadline := time.Now().Add(30 * time.Second)
	for { // visibility follows the memo within a moment
		var err error
		if targets, err = lv.Targets(ctx, ledger.Filter{Service: name}); err != nil {
			t.Fatal(err)
		}
		if len(targets) == 1 && targets[0].Total == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(targets) != 1 || targets[0].Key != key || targets[0].Total != 3 {
		t.Fatalf("targets %+v, want one with 3 deployments", targets)
	}
	tg := targets[0]
	if tg.Current == nil || tg.Current.Artifact.Version != "3.0" || tg.Current.Execution != execs[2] || tg.EnvironmentType != "Production" {
		t.Errorf("what runs: %+v", tg.Current)
	}
	if tg.Last == nil || tg.Last.Execution != execs[2] || tg.Last.StartedBy != "test" || tg.Last.Artifact.Image != "shop/checkout:3.0" {
		t.Errorf("last deployment: %+v", tg.Last)
	}

	// A retried delivery of v2's record is applied once.
	deps, err := lv.Deployments(ctx, ledger.Filter{Service: name}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.internal.SignalWorkflow(ctx, contract.LedgerID(key), "", contract.SignalLedger, deps[1]); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, d := range deps {
		outcomes = append(outcomes, d.Artifact.Version+":"+d.Outcome)
	}
	if got, want := strings.Join(outcomes, " "), "3.0:succeeded 2.0:rolledBack 1.0:succeeded"; got != want {
		t.Errorf("history %s, want %s", got, want)
	}

	// The API reads the same ledger.
	srv, tok, idFile := apiServer(t)
	var one struct {
		Service     server.Service              `json:"service"`
		Deployments []contract.DeploymentRecord `json:"deployments"`
	}
	if err := call(srv.URL, tok, "GET", "/api/v1/services/"+name, nil, http.StatusOK, &one); err != nil {
		t.Fatal(err)
	}
	if len(one.Deployments) != 3 || one.Service.Targets[0].Total != 3 {
		t.Errorf("API: %d deployments, targets %+v (a repeated record counted twice?)", len(one.Deployments), one.Service.Targets)
	}
	var dora struct {
		DORA ledger.DORA `json:"dora"`
	}
	if err := call(srv.URL, tok, "GET", "/api/v1/dora?service="+name+"&days=1", nil, http.StatusOK, &dora); err != nil {
		t.Fatal(err)
	}
	if got := dora.DORA; got.Deployments != 3 || got.Failed != 1 || got.RolledBack != 1 || got.Restores != 1 || got.ChangeFailureRate == nil || *got.ChangeFailureRate < 0.33 || *got.ChangeFailureRate > 0.34 {
		t.Errorf("DORA %+v", got)
	}
	if err := call(srv.URL, tok, "GET", "/api/v1/services/no_such_service", nil, http.StatusNotFound, nil); err != nil {
		t.Error(err)
	}

	// The services pages read it too: what runs (3.0, by the last execution), then its history.
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address, Namespace: env.srv.Namespace,
		SignIn: webui.UserName(userOf(idFile)), User: userOf(idFile), Services: lv})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	page := func(path string) string {
		req, _ := http.NewRequest("GET", ui.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if body := page(webui.ServicesPath); !strings.Contains(body, `data-service="`+name+`"`) || !strings.Contains(body, `<td class="version">3.0</td>`) ||
		!strings.Contains(body, webui.ExecutionsPath+"/"+execs[2]) {
		t.Errorf("the services page does not show %s at 3.0 by %s:\n%s", name, execs[2], body)
	}
	if body := page(webui.ServicesPath + "/" + name); strings.Count(body, `class="deployment"`) != 3 || !strings.Contains(body, "rolledBack") {
		t.Errorf("the service's page does not list its 3 deployments:\n%s", body)
	}
}

// TestRecordLedgerHistories records a Deployment stage that records its deployment
// (changeLedger), one that fails and rolls back, and the target's ledger workflow.
func TestRecordLedgerHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	const name = "ledger_record"
	dir := ledgerEntities(t, name)
	out := filepath.Join("..", "workflows", "testdata", "histories")
	for _, fail := range []string{"no", "yes"} {
		p := compile(t, name+".yaml", []byte(ledgerPipeline(name)), load.Options{EntityDirs: []string{dir}, Sets: []string{"pipeline.variables.tag=1.0", "pipeline.variables.fail=" + fail}})
		exec, _ := runPlan(t, env.starter, p)
		recordExecution(t, out, exec.ID)
	}
	id := contract.LedgerID(contract.DeploymentKey{Project: "default/default", Service: name, Environment: name + "_prod", Infra: name + "_cluster"})
	writeClientHistory(t, env.internal, id, "", filepath.Join(out, strings.ReplaceAll(id, "/", "__")+".json"))
}
