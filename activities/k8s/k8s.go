// Package k8s runs the Kubernetes steps (spec 15.2) with client-go: manifests rendered and
// server-side applied, steady state watched (never polled with sleeps), release history kept in
// the cluster, canary and blue-green workloads, scaling, deletion and pruning. API errors map
// to the failure categories of spec 5.2; cancellation stops the step at once.
package k8s

import (
	"context"
	"encoding/json"
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

// handler runs one step type; createsNamespace says the step may be the first to deploy
// into the release's namespace, so it creates the namespace when missing.
type handler struct {
	run              func(*stepRun) (map[string]any, error)
	createsNamespace bool
}

// handlers are the family's step types, one handler each.
var handlers = map[string]handler{
	stepspec.K8sRollingDeploy:           {run: (*stepRun).rollingDeploy, createsNamespace: true},
	stepspec.K8sRollingRollback:         {run: (*stepRun).rollingRollback},
	stepspec.K8sCanaryDeploy:            {run: (*stepRun).canaryDeploy, createsNamespace: true},
	stepspec.K8sCanaryDelete:            {run: (*stepRun).canaryDelete},
	stepspec.K8sBlueGreenDeploy:         {run: (*stepRun).blueGreenDeploy, createsNamespace: true},
	stepspec.K8sBGSwapServices:          {run: (*stepRun).swapServices},
	stepspec.K8sApply:                   {run: (*stepRun).applyFiles, createsNamespace: true},
	stepspec.K8sScale:                   {run: (*stepRun).scale},
	stepspec.K8sDelete:                  {run: (*stepRun).delete},
	stepspec.K8sPatch:                   {run: (*stepRun).patch},
	stepspec.K8sRollout:                 {run: (*stepRun).rollout},
	stepspec.K8sDiff:                    {run: (*stepRun).diff},
	stepspec.K8sBlueGreenStageScaleDown: {run: (*stepRun).stageScaleDown},
	stepspec.K8sTrafficRouting:          {run: (*stepRun).trafficRouting},
	stepspec.K8sDryRun:                  {run: (*stepRun).dryRun},
	stepspec.HelmDeploy:                 {run: (*stepRun).helmDeploy, createsNamespace: true},
	stepspec.HelmRollback:               {run: (*stepRun).helmRollback},
	stepspec.HelmDelete:                 {run: (*stepRun).helmDelete},
	stepspec.HelmBGDeploy:               {run: (*stepRun).helmBlueGreenDeploy, createsNamespace: true},
	stepspec.HelmBlueGreenSwapStep:      {run: (*stepRun).swapServices},
	stepspec.HelmCanaryDeploy:           {run: (*stepRun).helmCanaryDeploy, createsNamespace: true},
	stepspec.HelmCanaryDelete:           {run: (*stepRun).helmCanaryDelete},
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

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
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "step type %s is not a Kubernetes step", in.Type)
	}
	if h.createsNamespace {
		if err := s.ensureNamespace(); err != nil {
			return contract.StepResult{}, err
		}
	}
	out, err := h.run(s)
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
