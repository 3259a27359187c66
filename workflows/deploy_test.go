package workflows_test

import (
	"strings"
	"testing"

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
