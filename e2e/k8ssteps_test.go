package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/status"
)

// K8sDiff, K8sPatch and K8sRollout through the engine after a rolling deployment, on the local
// control plane: the diff, the patched Deployment and its revision history.
func TestK8sDiffPatchRollout(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-k8ssteps")
	pipeline := strings.Replace(devPipeline, `              - step:
                  type: ShellScript`, `              - step:
                  type: K8sDiff
                  name: Diff
                  identifier: diff
                  spec: {}
              - step:
                  type: K8sPatch
                  name: Patch
                  identifier: patch
                  spec:
                    workload: Deployment/web
                    mergeStrategyType: Merge
                    recordChangeCause: true
                    source:
                      type: Inline
                      spec:
                        content: |
                          metadata:
                            labels: {patched: "<+pipeline.variables.tag>"}
              - step:
                  type: K8sRollout
                  name: History
                  identifier: history
                  spec:
                    command: history
                    resources: {type: ReleaseName, spec: {}}
              - step:
                  type: ShellScript`, 1)
	file := filepath.Join(dir, "dev.yaml")
	writeFile(t, file, pipeline)
	_, res := runPlan(t, env.starter, loadRun(t, file, "pipeline.variables.tag=1.27"))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.diff": status.Succeeded,
		"deploy_dev.patch": status.Succeeded, "deploy_dev.history": status.Succeeded})
	const ns = "e2e-k8ssteps-dev"
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || d.Labels["patched"] != "1.27" || !strings.Contains(d.Annotations["kubernetes.io/change-cause"], "K8sPatch") {
		t.Fatalf("patched deployment: %v %v", d.Labels, err)
	}
	hist := fmt.Sprint(res.Tree.Find("deploy_dev.history").Outputs["history"])
	if !strings.Contains(hist, ns+"/Deployment/web") || !strings.Contains(hist, "library/nginx:1.27") {
		t.Errorf("history output: %s", hist)
	}
	if diff := fmt.Sprint(res.Tree.Find("deploy_dev.diff").Outputs["changedResources"]); diff == "" {
		t.Errorf("diff outputs: %v", res.Tree.Find("deploy_dev.diff").Outputs)
	}
}
