package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chromedp/chromedp"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/promtest"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

// verifyMinute is the analysis minute of the Verify tests: the analysis is the one of real
// minutes (the same windows and values per minute), in a quarter of the time.
const verifyMinute = 15 * time.Second

// devDeployment is a pipeline of one Deployment stage of web to dev that rolls back on any
// failure, running steps (its execution's steps list, rollback steps included).
func devDeployment(name, id, steps string) string {
	return strings.NewReplacer("NAME", name, "ID", id).Replace(`pipeline:
  name: NAME
  identifier: ID
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
`) + steps + `        failureStrategies:
          - onFailure:
              errors: [AllErrors]
              action: {type: StageRollback}
`
}

// verifyPipeline deploys a canary, verifies it for two minutes against its monitored service,
// then rolls the primary out; a failure rolls the canary back.
var verifyPipeline = devDeployment("Verified canary", "verified_canary", `              - step:
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
`)

// monitoredFiles are the Prometheus connector and the monitored service of web in dev.
func monitoredFiles(t testing.TB, dir, promURL string) {
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
          metricPacks:
            - identifier: Custom
              metricThresholds:
                - type: FailImmediately
                  spec: {action: FailImmediately}
                  criteria: {type: Absolute, spec: {greaterThan: 10}}
                  metricIdentifier: errors
`)
}

// A canary verified against a real Prometheus: a healthy one passes after its duration and the
// primary rolls out; one whose error rate triples fails the Verify step, and the stage's
// failure strategy deletes the canary and rolls back, on the local control plane; one failing
// more than 10 requests a second crosses the fail-fast threshold and fails in its first minute.
func TestVerifyCanaryOnPrometheus(t *testing.T) {
	t.Parallel()
	_, cs := cluster(t)
	for _, c := range []struct {
		name, suffix string
		errors       float64 // the canary's error ratio of 50 requests a second; the old instance fails 2%
		want         status.Status
		minutes      float64 // analysed
		failure      string
	}{
		{"healthy", "ok", 0.02, status.Succeeded, 2, ""},
		{"errors tripled", "bad", 0.06, status.Failed, 2, "verification failed: metric Errors per second (errors) of prometheus regressed: higher than the control"},
		{"fail fast", "fast", 0.4, status.Failed, 1, "verification failed early: metric Errors per second (errors): fail-fast threshold, value above 10, crossed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			suffix := "e2e-verify-" + c.suffix
			dir := k8sExample(t, suffix)
			// The cases deploy the same service to the same infrastructure: let them overlap.
			allowSimultaneous(t, dir)
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
			exec, err := env.starter.Start(ctx, loadRun(t, file, "pipeline.variables.tag=1.27"), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{VerifyMinute: verifyMinute})
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
			if n.Outputs["analysedMinutes"] != c.minutes {
				t.Errorf("analysed %v minutes, want %v", n.Outputs["analysedMinutes"], c.minutes)
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
			if !strings.Contains(n.Failure.Message, c.failure) || n.Failure.Category != "Verification" {
				t.Errorf("failure %+v, want %q", n.Failure, c.failure)
			}
			if c.minutes == 2 {
				verificationInBrowser(t, ctx, exec.ID)
			}
		})
	}
}

// verificationInBrowser opens the failed verification's page in Chromium, through the sign-in:
// the verdict, and both series of the metric drawn.
func verificationInBrowser(t *testing.T, ctx context.Context, executionID string) {
	ui, dev := devUI(t, ctx)
	b := browser(t, ctx)
	pageText(t, b, ui.URL+webui.ExecutionsPath+"/"+executionID+"?verification=deploy_dev.verify", "Sign in to Gantry")
	if err := chromedp.Run(b, chromedp.SendKeys("#token", dev, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery)); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	waitText(t, b, "Verification: Failed", "Errors per second", "compared canary", "test: web-canary-new")
	var points []int
	if err := chromedp.Run(b, chromedp.Evaluate(`[...document.querySelectorAll("polyline")].map(p => p.points.numberOfItems)`, &points)); err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 || points[0] < 6 || points[1] < 6 {
		t.Errorf("the chart's control and test lines have %v points, want two lines of 6 or more", points)
	}
	screenshot(t, b, "verification-failed")
}

// rollingPipeline verifies a deployment before/after for two minutes, and nothing else.
var rollingPipeline = devDeployment("Verified rolling", "verified_rolling_SUFFIX", `              - step:
                  type: Verify
                  name: Verify
                  identifier: verify
                  timeout: 10m
                  spec:
                    type: Rolling
                    monitoredService: {type: Default, spec: {}}
                    spec: {sensitivity: HIGH, duration: 2m, failOnNoAnalysis: FAIL}
`)

// rollingSetup writes a folder where web deploys to dev with its monitored service on a fresh
// Prometheus scraping one instance (the service before and after), and returns the pipeline.
func rollingSetup(t testing.TB, suffix string, failOnNoAnalysis bool) (string, *promtest.Instance, *promtest.Server) {
	t.Helper()
	cluster(t)
	dir := k8sExample(t, suffix)
	allowSimultaneous(t, dir)
	web, err := promtest.NewInstance("web-1", 50, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(web.Close)
	web.Start()
	prom, err := promtest.Start(t.TempDir(), web)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prom.Stop)
	monitoredFiles(t, dir, prom.URL)
	file := filepath.Join(dir, "rolling.yaml")
	writeFile(t, file, strings.NewReplacer("SUFFIX", strings.ReplaceAll(suffix, "-", "_"), "FAIL", fmt.Sprint(failOnNoAnalysis)).Replace(rollingPipeline))
	time.Sleep(verifyMinute) // the service's history before the deployment: four values or more
	return file, web, prom
}

// Prometheus stopped once the step read the window before the deployment: no minute of the
// analysis has data, which fails the step with failOnNoAnalysis and passes it, said so,
// without.
func TestVerifyPrometheusStops(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprint("failOnNoAnalysis=", fail), func(t *testing.T) {
			t.Parallel()
			file, _, prom := rollingSetup(t, fmt.Sprintf("e2e-verify-stop-%v", fail), fail)
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{VerifyMinute: verifyMinute})
			if err != nil {
				t.Fatal(err)
			}
			for {
				tree := waitFor(t, ctx, env.starter, exec.ID, "deploy_dev.verify", status.Running)
				if tree.Find("deploy_dev.verify").Outputs["before"] != nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			prom.Stop()
			res, err := env.starter.Result(ctx, exec.ID)
			if err != nil {
				t.Fatal(err)
			}
			n := res.Tree.Find("deploy_dev.verify")
			if n.Outputs["result"].(map[string]any)["verdict"] != "NoAnalysis" || n.Outputs["missingAnswers"] != float64(2) {
				t.Errorf("outcome %v, want NoAnalysis with 2 missing answers", n.Outputs)
			}
			if fail {
				if n.Status != status.Failed || n.Failure.Category != "Verification" || !strings.Contains(n.Failure.Message, "the monitoring system did not answer 2 times") {
					t.Fatalf("with failOnNoAnalysis: %s %+v", n.Status, n.Failure)
				}
				return
			}
			if n.Status != status.Succeeded || !strings.Contains(strings.Join(n.Notes, "\n"), "passed without analysis: the monitoring system did not answer 2 times") {
				t.Fatalf("without failOnNoAnalysis: %s %q", n.Status, n.Notes)
			}
		})
	}
}

// A worker SIGKILLed in the middle of an analysis: the next worker resumes it from the answers
// already recorded (the first minute's values are the same ones) and reaches the verdict the
// data calls for, here a regression once the error rate tripled.
func TestVerifySurvivesWorkerKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	file, web, _ := rollingSetup(t, "e2e-verify-kill", true)
	queue := "verify-kill"
	data := filepath.Join(t.TempDir(), "data")
	first := gantryWorker(t, bin, queue, data)
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	exec, err := s.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{HeartbeatTimeout: 2 * time.Second, VerifyMinute: verifyMinute})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, exec.ID, "deploy_dev.verify", status.Running)
	web.Set(50, 0.06) // the new version fails three times as often
	var firstMinute any
	for firstMinute == nil {
		tree, err := s.Tree(ctx, exec.ID)
		if err == nil {
			if out := tree.Find("deploy_dev.verify").Outputs; out != nil && out["analysedMinutes"] == float64(1) {
				firstMinute = out["result"].(map[string]any)["metrics"].([]any)[0].(map[string]any)["testSeries"]
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the first minute was never analysed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	second := gantryWorker(t, bin, queue, data)
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	res, err := s.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := res.Tree.Find("deploy_dev.verify")
	metric := n.Outputs["result"].(map[string]any)["metrics"].([]any)[0].(map[string]any)
	if n.Status != status.Failed || n.Failure.Category != "Verification" || metric["compared"] != "before/after" || n.Outputs["analysedMinutes"] != float64(2) {
		t.Fatalf("after the kill: %s %+v, %v", n.Status, n.Failure, n.Outputs)
	}
	series := metric["testSeries"].([]any)
	first4 := fmt.Sprint(series[:len(firstMinute.([]any))])
	if first4 != fmt.Sprint(firstMinute) {
		t.Errorf("the first minute's values changed across the kill:\n%s\n%v", first4, firstMinute)
	}
}
