package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/promtest"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// verifyPipeline deploys a canary, verifies it for two minutes against its monitored service,
// then rolls the primary out; a failure rolls the canary back.
const verifyPipeline = `pipeline:
  name: Verified canary
  identifier: verified_canary
  stages:
    - stage:
        name: Deploy dev
        identifier: deploy_dev
        type: Deployment
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment:
            environmentRef: dev
            infrastructureDefinitions: [{identifier: dev_cluster}]
          execution:
            steps:
              - step:
                  type: K8sCanaryDeploy
                  name: Canary
                  identifier: canary_deploy
                  timeout: 2m
                  spec: {instanceSelection: {type: Count, spec: {count: 1}}}
              - step:
                  type: Verify
                  name: Verify
                  identifier: verify
                  timeout: 10m
                  spec:
                    isMultiServicesOrEnvs: false
                    type: Canary
                    monitoredService: {type: Default, spec: {}}
                    spec:
                      sensitivity: MEDIUM
                      duration: 2m
                      deploymentTag: <+artifact.tag>
                      failOnNoAnalysis: true
              - step: {type: K8sCanaryDelete, name: Delete canary, identifier: canary_delete, timeout: 2m, spec: {}}
              - step: {type: K8sRollingDeploy, name: Rolling deploy, identifier: rolling, timeout: 2m, spec: {skipDryRun: false}}
            rollbackSteps:
              - step: {type: K8sCanaryDelete, name: Delete canary, identifier: rollback_canary, timeout: 2m, spec: {}}
              - step: {type: K8sRollingRollback, name: Rollback, identifier: rollback, timeout: 2m, spec: {}}
        failureStrategies:
          - onFailure:
              errors: [AllErrors]
              action: {type: StageRollback}
`

// monitoredFiles are the Prometheus connector and the monitored service of web in dev.
func monitoredFiles(t *testing.T, dir, promURL string) {
	writeFile(t, filepath.Join(dir, "prometheus.yaml"), fmt.Sprintf(`connector:
  name: Prometheus
  identifier: prometheus
  type: Prometheus
  spec: {url: %s}
`, promURL))
	writeFile(t, filepath.Join(dir, "web-dev-monitored.yaml"), `monitoredService:
  name: web dev
  identifier: web_dev
  type: Application
  serviceRef: web
  environmentRef: dev
  sources:
    healthSources:
      - name: Prometheus
        identifier: prometheus
        type: Prometheus
        spec:
          connectorRef: prometheus
          metricDefinitions:
            - identifier: errors
              metricName: Errors per second
              groupName: web
              query: sum by (pod) (rate(http_requests_total{job="web",code="500"}[5s]))
              analysis:
                deploymentVerification: {enabled: true, serviceInstanceFieldName: pod}
                riskProfile: {riskCategory: Errors, thresholdTypes: [ACT_WHEN_HIGHER]}
`)
}

// A canary verified against a real Prometheus: a healthy one passes after its duration and the
// primary rolls out; one whose error rate triples fails the Verify step, and the stage's
// failure strategy deletes the canary and rolls back, on the local control plane.
func TestVerifyCanaryOnPrometheus(t *testing.T) {
	_, cs := cluster(t)
	for _, c := range []struct {
		name   string
		errors float64 // the canary's error ratio; the old instance fails 2% of requests
		want   status.Status
	}{
		{"healthy", 0.02, status.Succeeded},
		{"errors tripled", 0.06, status.Failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			suffix := "e2e-verify-" + map[status.Status]string{status.Succeeded: "ok", status.Failed: "bad"}[c.want]
			dir := k8sExample(t, suffix)
			// The two cases deploy the same service to the same infrastructure: let them overlap.
			infra := filepath.Join(dir, "infra-dev.yaml")
			writeFile(t, infra, strings.Replace(readFile(infra), "  deploymentType: Kubernetes\n", "  deploymentType: Kubernetes\n  allowSimultaneousDeployments: true\n", 1))
			old, err := promtest.NewInstance("web-7c9d-old", 50, 0.02)
			if err != nil {
				t.Fatal(err)
			}
			canary, err := promtest.NewInstance("web-canary-new", 50, c.errors)
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			defer canary.Close()
			old.Start()
			prom, err := promtest.Start(t.TempDir(), old, canary)
			if err != nil {
				t.Fatal(err)
			}
			defer prom.Stop()
			monitoredFiles(t, dir, prom.URL)
			file := filepath.Join(dir, "verified.yaml")
			writeFile(t, file, verifyPipeline)
			time.Sleep(10 * time.Second) // the old instance's history before the deployment

			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			exec, err := env.starter.Start(ctx, loadRun(t, file, "pipeline.variables.tag=1.27"), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			// The canary's pods report once they run.
			waitFor(t, ctx, env.starter, exec.ID, "deploy_dev.canary_deploy", status.Succeeded)
			canary.Start()
			res, err := env.starter.Result(ctx, exec.ID)
			if err != nil {
				t.Fatal(err)
			}
			n := res.Tree.Find("deploy_dev.verify")
			result, _ := n.Outputs["result"].(map[string]any)
			if n.Status != c.want {
				t.Fatalf("verify %s (%+v), want %s; result %v", n.Status, n.Failure, c.want, result)
			}
			metric := result["metrics"].([]any)[0].(map[string]any)
			if metric["compared"] != "canary" || fmt.Sprint(metric["testInstances"]) != "[web-canary-new]" || fmt.Sprint(metric["controlInstances"]) != "[web-7c9d-old]" {
				t.Errorf("compared %v: test %v, control %v", metric["compared"], metric["testInstances"], metric["controlInstances"])
			}
			if n.Outputs["analysedMinutes"] != float64(2) {
				t.Errorf("analysed %v minutes, want 2", n.Outputs["analysedMinutes"])
			}
			ns := suffix + "-dev"
			_, err = cs.AppsV1().Deployments(ns).Get(ctx, "web-canary", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("the canary deployment is still there: %v", err)
			}
			if c.want == status.Succeeded {
				conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
				return
			}
			conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy_dev.rolling": status.NotStarted,
				"deploy_dev.rollbackSteps.rollback_canary": status.Succeeded})
			if !strings.Contains(n.Failure.Message, "metric Errors per second (errors) of prometheus regressed: higher than the control") || n.Failure.Category != "Verification" {
				t.Errorf("failure %+v", n.Failure)
			}
		})
	}
}
