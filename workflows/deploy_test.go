package workflows_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/workflows"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
)

// A Deployment stage publishes its service, environment and infrastructure to its steps
// (spec 9.5), with service variables overridden per spec 10.3.
func TestDeploymentStageContext(t *testing.T) {
	src := `pipeline:
  name: cd context
  identifier: cd_context
  variables:
    - {name: tag, type: String, value: "2.0"}
  stages:
    - stage:
        name: prod
        identifier: prod
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment:
            environmentRef: prod
            infrastructureDefinitions: [{identifier: prod_cluster}]
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: show
                  identifier: show
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: 'echo "$ctx"'}}
                    environmentVariables:
                      - name: ctx
                        type: String
                        value: <+service.identifier>|<+service.tags.team>|<+env.name>|<+env.type>|<+infra.infraIdentifier>|<+infra.namespace>|<+infra.connectorRef>|<+artifact.image>|<+artifacts.primary.tag>|<+serviceVariables.replicas>|<+serviceVariables.greeting>|<+manifests.web.type>
                      - {name: key, type: String, value: <+INFRA_KEY_SHORT_ID>}
                      - {name: release, type: String, value: <+infra.releaseName>}
                    outputVariables:
                      - {name: ctx, type: String, value: ctx}
                      - {name: key, type: String, value: key}
                      - {name: release, type: String, value: release}
`
	r := load.Bytes("cd.yaml", []byte(src), load.Options{ForRun: true, EntityDirs: []string{"../examples/k8s"}})
	if !r.OK() {
		t.Fatal(r.Diags.Render(r.Sources))
	}
	res := run(t, r.Plan)
	conformance.Check(t, res.Tree, map[string]status.Status{"prod.show": status.Succeeded})
	if st := res.Tree.Find("prod"); st.Failure != nil {
		t.Fatalf("stage %s: %+v (notes %v)", st.Status, st.Failure, st.Notes)
	}
	out, _ := res.Tree.Find("prod.show").Outputs["outputVariables"].(map[string]any)
	want := "web|platform|Production|Production|prod_cluster|gantry-prod|local_cluster|library/nginx:2.0|2.0|4|hello from production|K8sManifest"
	if out["ctx"] != want {
		t.Errorf("context\n got %v\nwant %s", out["ctx"], want)
	}
	key, _ := out["key"].(string)
	if len(key) != 6 || out["release"] != "release-"+key {
		t.Errorf("INFRA_KEY_SHORT_ID %q, release name %v (default release-<+INFRA_KEY_SHORT_ID>)", key, out["release"])
	}
	if notes := strings.Join(res.Tree.Find("prod").Notes, " "); !strings.Contains(notes, "namespace gantry-prod") {
		t.Errorf("stage notes %q", notes)
	}
}

// Every Deployment stage that ends records its deployment in the ledger: the target, the
// artifact, who started it and how it ended; one that rolled back says so.
func TestDeploymentStagesRecordTheirDeployments(t *testing.T) {
	src := `pipeline:
  name: cd ledger
  identifier: cd_ledger
  variables:
    - {name: tag, type: String, value: "1.27"}
  stages:
    - stage:
        name: dev
        identifier: dev
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment: {environmentRef: dev, infrastructureDefinitions: [{identifier: dev_cluster}]}
          execution:
            steps:
              - step: {type: ShellScript, name: ok, identifier: ok, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
    - stage:
        name: prod
        identifier: prod
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: prod_cluster}]}
          execution:
            steps:
              - step: {type: ShellScript, name: fail, identifier: fail, spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 1"}}}}
            rollbackSteps:
              - step: {type: ShellScript, name: undo, identifier: undo, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
`
	r := load.Bytes("cd.yaml", []byte(src), load.Options{ForRun: true, EntityDirs: []string{"../examples/k8s"}})
	if !r.OK() {
		t.Fatal(r.Diags.Render(r.Sources))
	}
	var got []contract.DeploymentRecord
	var targets []*contract.InstanceTarget
	res := runPrepared(t, r.Plan, workflows.Settings{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(contract.RecordDeployment, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.RecordDeploymentInput) error {
			got, targets = append(got, in.DeploymentRecord), append(targets, in.Instances)
			return nil
		})
	})
	if res.Status != status.Failed {
		t.Fatalf("pipeline %s", res.Status)
	}
	if len(got) != 2 {
		t.Fatalf("%d records, want one per stage: %+v", len(got), got)
	}
	dev, prod, devAt := got[0], got[1], targets[0]
	if dev.Stage != "dev" || prod.Stage != "prod" {
		dev, prod, devAt = prod, dev, targets[1]
	}
	// Where the sync reads the instances: the stage's cluster, namespace and release.
	if devAt == nil || devAt.Key != dev.Key || devAt.Namespace != "gantry-dev" || devAt.Release != dev.Release || devAt.Connector == nil ||
		devAt.Connector.ID != "local_cluster" || devAt.Version != "1.27" || devAt.Execution != dev.Execution {
		t.Errorf("dev instances target %+v", devAt)
	}
	want := contract.DeploymentKey{Project: "default/default", Service: "web", Environment: "dev", Infra: "dev_cluster"}
	if dev.Key != want || dev.Outcome != contract.OutcomeSucceeded || dev.EnvironmentType != "PreProduction" || dev.DeploymentType != "Kubernetes" {
		t.Errorf("dev record %+v", dev)
	}
	if dev.Artifact == nil || dev.Artifact.Image != "library/nginx:1.27" || dev.Artifact.Version != "1.27" {
		t.Errorf("dev artifact %+v", dev.Artifact)
	}
	if dev.Pipeline != "cd_ledger" || dev.Trigger != "MANUAL" || dev.Sequence != 1 || dev.Namespace != "gantry-dev" || !strings.HasPrefix(dev.Release, "release-") {
		t.Errorf("dev record's run and target: %+v", dev)
	}
	if dev.Started.IsZero() || dev.Ended.Before(dev.Started) {
		t.Errorf("dev record's times %v to %v", dev.Started, dev.Ended)
	}
	if prod.Key.Environment != "prod" || prod.Outcome != contract.OutcomeRolledBack || prod.Status != string(status.Failed) || prod.EnvironmentType != "Production" {
		t.Errorf("prod record %+v", prod)
	}
}
