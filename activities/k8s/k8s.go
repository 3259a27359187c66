// Package k8s runs the Kubernetes steps (spec 15.2) with client-go: manifests rendered and
// server-side applied, steady state watched (never polled with sleeps), release history kept in
// the cluster, canary and blue-green workloads, scaling, deletion and pruning. API errors map
// to the failure categories of spec 5.2; cancellation stops the step at once.
package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/manifests"
)

// Activity runs Kubernetes steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
}

// stepRun is one run of one step.
type stepRun struct {
	ctx context.Context
	// steadyCtx ends when the step timeout does; waiting for steady state uses it.
	steadyCtx context.Context
	timeout   time.Duration
	in        *contract.DeployInput
	exec      string
	path      string
	spec      map[string]any
	c         *client
	mask      *secrets.Masker
	secrets   secrets.Resolver
	log       *logs.Writer

	expanded bool // secrets in manifests resolved

	// side is the Helm release a canary or blue-green step deploys beside the stage's own, with
	// the objects it holds (nil: the stage's release, rendered by Helm).
	side *sideRelease

	mu       sync.Mutex
	progress func(string)
}

// Run is the activity: it connects to the infrastructure's cluster and runs the step type.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	if in.Deploy == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s step %s has no deployment target; Kubernetes steps run in Deployment stages", in.Type, in.StepPath)
	}
	s := &stepRun{ctx: ctx, in: in.Deploy, exec: in.ExecutionID, path: in.StepPath, mask: &secrets.Masker{}, timeout: in.Timeout, secrets: a.Secrets}
	if err := json.Unmarshal(in.Spec, &s.spec); err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s spec: %v", in.Type, err)
	}
	log, err := a.Logs.Open(in.ExecutionID, in.StepPath)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "open step log: %v", err)
	}
	defer log.Close()
	s.log = log
	s.steadyCtx = ctx
	if in.Timeout > 0 {
		var cancel context.CancelFunc
		s.steadyCtx, cancel = context.WithTimeout(ctx, in.Timeout)
		defer cancel()
	}
	s.progress = heartbeater(ctx)

	cfg, err := restConfig(ctx, in.Deploy.Connector, a.Secrets, s.mask)
	if err != nil {
		return contract.StepResult{}, err
	}
	if s.c, err = newClient(cfg); err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "connector %s: %v", in.Deploy.Connector.ID, err)
	}
	s.logf("%s: release %s in namespace %s (connector %s)", in.Type, s.in.ReleaseName, s.in.Namespace, in.Deploy.Connector.ID)
	switch in.Type {
	case "K8sRollingDeploy", "K8sCanaryDeploy", "K8sBlueGreenDeploy", "K8sApply", "HelmDeploy", "HelmBGDeploy", "HelmCanaryDeploy":
		if err := s.ensureNamespace(); err != nil {
			return contract.StepResult{}, err
		}
	}
	var out map[string]any
	switch in.Type {
	case "K8sRollingDeploy":
		out, err = s.rollingDeploy()
	case "K8sRollingRollback":
		out, err = s.rollingRollback()
	case "K8sCanaryDeploy":
		out, err = s.canaryDeploy()
	case "K8sCanaryDelete":
		out, err = s.canaryDelete()
	case "K8sBlueGreenDeploy":
		out, err = s.blueGreenDeploy()
	case "K8sBGSwapServices":
		out, err = s.swapServices()
	case "K8sApply":
		out, err = s.applyFiles()
	case "K8sScale":
		out, err = s.scale()
	case "K8sDelete":
		out, err = s.delete()
	case "K8sPatch":
		out, err = s.patch()
	case "K8sRollout":
		out, err = s.rollout()
	case "K8sDiff":
		out, err = s.diff()
	case "K8sBlueGreenStageScaleDown":
		out, err = s.stageScaleDown()
	case "K8sTrafficRouting":
		out, err = s.trafficRouting()
	case "K8sDryRun":
		out, err = s.dryRun()
	case "HelmDeploy":
		out, err = s.helmDeploy()
	case "HelmRollback":
		out, err = s.helmRollback()
	case "HelmDelete":
		out, err = s.helmDelete()
	case "HelmBGDeploy":
		out, err = s.helmBlueGreenDeploy()
	case "HelmBlueGreenSwapStep":
		out, err = s.swapServices()
	case "HelmCanaryDeploy":
		out, err = s.helmCanaryDeploy()
	case "HelmCanaryDelete":
		out, err = s.helmCanaryDelete()
	default:
		err = contract.Fail(contract.Unknown, "step type %s is not a Kubernetes step", in.Type)
	}
	if err != nil {
		if ctx.Err() != nil {
			return contract.StepResult{}, ctx.Err() // aborted: the workflow decides
		}
		f := contract.Classify(err)
		s.logf("failed (%s): %s", f.Category, f.Message)
		return contract.StepResult{}, contract.Fail(f.Category, "%s", s.mask.Apply(f.Message))
	}
	return contract.StepResult{Outputs: out}, nil
}

// heartbeater heartbeats every second with the latest progress message as details, so a
// lost worker is noticed and cancellation reaches the step.
func heartbeater(ctx context.Context) func(string) {
	if !activity.IsActivity(ctx) {
		return func(string) {}
	}
	var mu sync.Mutex
	last := ""
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				mu.Lock()
				msg := last
				mu.Unlock()
				activity.RecordHeartbeat(ctx, msg)
			}
		}
	}()
	return func(msg string) {
		mu.Lock()
		last = msg
		mu.Unlock()
	}
}

func (s *stepRun) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.Line(s.mask.Apply(fmt.Sprintf(format, args...)))
}

func (s *stepRun) bool(key string) bool {
	switch v := s.spec[key].(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

func manifestsObject(file string, u *unstructured.Unstructured) manifests.Object {
	return manifests.Object{File: file, Unstructured: u}
}

// ensureNamespace creates the infrastructure's namespace if it does not exist, as deploying
// to a fresh namespace is the common first run.
func (s *stepRun) ensureNamespace() error {
	_, err := s.c.cs.CoreV1().Namespaces().Get(s.ctx, s.in.Namespace, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return classify(s.ctx, err, "read namespace %s", s.in.Namespace)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.in.Namespace}}
	if _, err := s.c.cs.CoreV1().Namespaces().Create(s.ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return classify(s.ctx, err, "create namespace %s", s.in.Namespace)
	}
	s.logf("created namespace %s", s.in.Namespace)
	return nil
}
