package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// The instance sync reads its target at once and then on its timer; a failed read keeps the
// instances read before and says it failed (never zero instances); a deployment's signal
// re-targets it and reads at once; after instancesPerRun readings it continues as new; when
// the target is gone it ends.
func TestInstancesSyncReadsOnItsTimer(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Instances, workflow.RegisterOptions{Name: contract.InstancesName})
	defer func(n int) { instancesPerRun = n }(instancesPerRun)
	instancesPerRun = 50
	key := contract.DeploymentKey{Project: "default/default", Service: "checkout", Environment: "prod", Infra: "k8s"}
	pod := func(name, image string, ready bool) contract.Instance {
		return contract.Instance{Name: name, Artifact: image, Node: "node-1", Ready: ready}
	}
	// The cluster as each read finds it: down (unreachable), gone, or running the version the
	// target was deployed with.
	var reads []string
	down, gone := false, false
	env.RegisterActivityWithOptions(func(_ context.Context, tg contract.InstanceTarget) (contract.InstanceRead, error) {
		reads = append(reads, tg.Version)
		switch {
		case down:
			return contract.InstanceRead{}, errors.New("connector cluster: cannot reach the cluster: connection refused")
		case gone:
			return contract.InstanceRead{Gone: "namespace shop no longer exists"}, nil
		case tg.Version == "v2":
			return contract.ReadOf([]contract.Instance{pod("a", "shop:v2", true), pod("b", "shop:v2", true), pod("c", "shop:v1", false)},
				[]string{"Deployment checkout was scaled to 3 outside Gantry; it was deployed with 2"}), nil
		}
		return contract.ReadOf([]contract.Instance{pod("a", "shop:v1", true), pod("b", "shop:v1", false)}, nil), nil
	}, activity.RegisterOptions{Name: contract.ReadInstances})

	query := func() *contract.InstanceSnapshot {
		v, err := env.QueryWorkflow(contract.QueryInstances)
		if err != nil {
			t.Fatal(err)
		}
		var s *contract.InstanceSnapshot
		if err := v.Get(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	every := 10 * time.Minute
	checks := 0
	env.RegisterDelayedCallback(func() { // the first read, at the start
		s := query()
		if s == nil || s.Count != 2 || s.Ready != 1 || s.Error != "" || len(s.Artifacts) != 1 || s.Artifacts[0] != (contract.ArtifactCount{Artifact: "shop:v1", Count: 2}) {
			t.Errorf("first reading %+v", s)
		}
		checks++
		down = true
	}, time.Minute)
	env.RegisterDelayedCallback(func() { // the second, on the timer, failed
		s := query()
		if s == nil || s.Count != 2 || s.Error == "" || !strings.Contains(s.Error, "connection refused") || !s.TriedAt.After(s.SyncedAt) || len(s.Instances) != 2 {
			t.Errorf("a failed read must keep the instances before and say it failed: %+v", s)
		}
		checks++
		down = false
		env.SignalWorkflow(contract.SignalInstancesTarget, contract.InstanceTarget{Key: key, DeploymentType: "Kubernetes", Version: "v2", Execution: "e2"})
	}, every+time.Minute)
	env.RegisterDelayedCallback(func() { // read at once for the new deployment
		s := query()
		if s == nil || s.Version != "v2" || s.Execution != "e2" || s.Count != 3 || s.Error != "" || len(s.Drift) != 1 ||
			s.Artifacts[0] != (contract.ArtifactCount{Artifact: "shop:v2", Count: 2}) {
			t.Errorf("after the deployment's signal %+v", s)
		}
		checks++
		gone = true
		env.SignalWorkflow(contract.SignalInstancesSync, nil)
	}, every+2*time.Minute)
	env.ExecuteWorkflow(contract.InstancesName, contract.InstanceSync{Target: contract.InstanceTarget{Key: key, DeploymentType: "Kubernetes", Version: "v1"}, Every: every})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("the sync did not end when its target was gone: %v", env.GetWorkflowError())
	}
	if checks != 3 {
		t.Fatalf("%d of 3 checks ran", checks)
	}
	// v1 at the start, v1 on the timer (three attempts, all failed), v2 on the deployment's
	// signal, v2 on the sync signal (gone).
	if got, want := strings.Join(reads, " "), "v1 v1 v1 v1 v2 v2"; got != want {
		t.Errorf("reads %s, want %s", got, want)
	}
}

// After instancesPerRun readings the sync continues as new with its target, timer and last
// reading.
func TestInstancesSyncContinuesAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Instances, workflow.RegisterOptions{Name: contract.InstancesName})
	defer func(n int) { instancesPerRun = n }(instancesPerRun)
	instancesPerRun = 3
	env.RegisterActivityWithOptions(func(context.Context, contract.InstanceTarget) (contract.InstanceRead, error) {
		return contract.ReadOf([]contract.Instance{{Name: "web-1", Artifact: "web:1", Ready: true}}, nil), nil
	}, activity.RegisterOptions{Name: contract.ReadInstances})
	target := contract.InstanceTarget{Key: contract.DeploymentKey{Service: "web"}, DeploymentType: "Ssh", Version: "1"}
	env.ExecuteWorkflow(contract.InstancesName, contract.InstanceSync{Target: target, Every: time.Hour})
	var can *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &can) {
		t.Fatalf("want continue-as-new, got %v", env.GetWorkflowError())
	}
	var next contract.InstanceSync
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Target.Version != "1" || next.Every != time.Hour || next.Snapshot == nil || next.Snapshot.Count != 1 {
		t.Errorf("carried over %+v", next)
	}
}
