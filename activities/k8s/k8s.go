// Package k8s runs the Kubernetes steps (spec 15.2) with client-go: manifests rendered and
// server-side applied, steady state watched (never polled with sleeps), release history kept in
// the cluster, canary and blue-green workloads, scaling, deletion and pruning. API errors map
// to the failure categories of spec 5.2; cancellation stops the step at once.
package k8s

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	"github.com/gantry-cd/gantry/stepspec"
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

// handler runs one step type: bind decodes the rendered spec into the type's spec and returns
// the run; createsNamespace says the step may be the first to deploy into the release's
// namespace, so it creates the namespace when missing.
type handler struct {
	bind             func(spec []byte) (func(*stepRun) (map[string]any, error), error)
	createsNamespace bool
}

// with makes a handler's bind of a method over the step type's spec S.
func with[S any](run func(*stepRun, S) (map[string]any, error)) func([]byte) (func(*stepRun) (map[string]any, error), error) {
	return func(raw []byte) (func(*stepRun) (map[string]any, error), error) {
		sp, err := stepspec.Decode[S](raw)
		if err != nil {
			return nil, err
		}
		return func(s *stepRun) (map[string]any, error) { return run(s, sp) }, nil
	}
}

// settingsOnly makes a handler's bind of a method for a step type whose spec S holds nothing the
// family reads (where it runs, kubectl's or helm's flags); the spec is still decoded as S.
func settingsOnly[S any](run func(*stepRun) (map[string]any, error)) func([]byte) (func(*stepRun) (map[string]any, error), error) {
	return with(func(s *stepRun, _ S) (map[string]any, error) { return run(s) })
}

// handlers are the family's step types, one handler each.
var handlers = map[string]handler{
	stepspec.K8sRollingDeploy:           {bind: with((*stepRun).rollingDeploy), createsNamespace: true},
	stepspec.K8sRollingRollback:         {bind: with((*stepRun).rollingRollback)},
	stepspec.K8sCanaryDeploy:            {bind: with((*stepRun).canaryDeploy), createsNamespace: true},
	stepspec.K8sCanaryDelete:            {bind: settingsOnly[stepspec.K8sSimpleSpec]((*stepRun).canaryDelete)},
	stepspec.K8sBlueGreenDeploy:         {bind: with((*stepRun).blueGreenDeploy), createsNamespace: true},
	stepspec.K8sBGSwapServices:          {bind: settingsOnly[stepspec.K8sSimpleSpec]((*stepRun).swapServices)},
	stepspec.K8sApply:                   {bind: with((*stepRun).applyFiles), createsNamespace: true},
	stepspec.K8sScale:                   {bind: with((*stepRun).scale)},
	stepspec.K8sDelete:                  {bind: with((*stepRun).delete)},
	stepspec.K8sPatch:                   {bind: with((*stepRun).patch)},
	stepspec.K8sRollout:                 {bind: with((*stepRun).rollout)},
	stepspec.K8sDiff:                    {bind: settingsOnly[stepspec.K8sDiffSpec]((*stepRun).diff)},
	stepspec.K8sBlueGreenStageScaleDown: {bind: settingsOnly[stepspec.K8sBlueGreenStageScaleDownSpec]((*stepRun).stageScaleDown)},
	stepspec.K8sTrafficRouting:          {bind: with((*stepRun).trafficRouting)},
	stepspec.K8sDryRun:                  {bind: settingsOnly[stepspec.K8sSimpleSpec]((*stepRun).dryRun)},
	stepspec.HelmDeploy:                 {bind: with((*stepRun).helmDeploy), createsNamespace: true},
	stepspec.HelmRollback:               {bind: with((*stepRun).helmRollback)},
	stepspec.HelmDelete:                 {bind: with((*stepRun).helmDelete)},
	stepspec.HelmBGDeploy:               {bind: with((*stepRun).helmBlueGreenDeploy), createsNamespace: true},
	stepspec.HelmBlueGreenSwapStep:      {bind: settingsOnly[stepspec.HelmSettings]((*stepRun).swapServices)},
	stepspec.HelmCanaryDeploy:           {bind: with((*stepRun).helmCanaryDeploy), createsNamespace: true},
	stepspec.HelmCanaryDelete:           {bind: settingsOnly[stepspec.HelmSettings]((*stepRun).helmCanaryDelete)},
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

// Run is the activity: it connects to the infrastructure's cluster and runs the step type.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	if in.Deploy == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s step %s has no deployment target; Kubernetes steps run in Deployment stages", in.Type, in.StepPath)
	}
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "step type %s is not a Kubernetes step", in.Type)
	}
	run, err := h.bind(in.Spec)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s spec: %v", in.Type, err)
	}
	s := &stepRun{ctx: ctx, in: in.Deploy, exec: in.ExecutionID, path: in.StepPath, mask: &secrets.Masker{}, timeout: in.Timeout, secrets: a.Secrets}
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
	if h.createsNamespace {
		if err := s.ensureNamespace(); err != nil {
			return contract.StepResult{}, err
		}
	}
	out, err := run(s)
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
