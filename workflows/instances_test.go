package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// The instance sync reads its target at once; a reading the sweep signals becomes its
// snapshot, a failed one keeping the instances read before and saying it failed (never zero
// instances); a deployment's signal re-targets it and reads at once; a reading that says the
// target is gone ends it.
func TestInstancesSyncKeepsTheReadings(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Instances, workflow.RegisterOptions{Name: contract.InstancesName})
	key := contract.DeploymentKey{Project: "default/default", Service: "checkout", Environment: "prod", Infra: "k8s"}
	pod := func(name, image string, ready bool) contract.Instance {
		return contract.Instance{Name: name, Artifact: image, Node: "node-1", Ready: ready}
	}
	// The cluster as the workflow's own reads find it, by the version the target was
	// deployed with.
	var reads []string
	env.RegisterActivityWithOptions(func(_ context.Context, tg contract.InstanceTarget) (contract.InstanceRead, error) {
		reads = append(reads, tg.Version)
		if tg.Version == "v2" {
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
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	checks := 0
	env.RegisterDelayedCallback(func() { // the first read, at the start
		s := query()
		if s == nil || s.Count != 2 || s.Ready != 1 || s.Error != "" || len(s.Artifacts) != 1 || s.Artifacts[0] != (contract.ArtifactCount{Artifact: "shop:v1", Count: 2}) {
			t.Errorf("first reading %+v", s)
		}
		checks++
		env.SignalWorkflow(contract.SignalInstancesReading, contract.InstanceReading{Error: "connector cluster: cannot reach the cluster: connection refused", At: t0})
	}, time.Minute)
	env.RegisterDelayedCallback(func() { // the sweep's failed read
		s := query()
		if s == nil || s.Count != 2 || !strings.Contains(s.Error, "connection refused") || !s.TriedAt.Equal(t0) || len(s.Instances) != 2 {
			t.Errorf("a failed read must keep the instances before and say it failed: %+v", s)
		}
		checks++
		env.SignalWorkflow(contract.SignalInstancesTarget, contract.InstanceTarget{Key: key, DeploymentType: "Kubernetes", Version: "v2", Execution: "e2"})
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() { // read at once for the new deployment
		s := query()
		if s == nil || s.Version != "v2" || s.Execution != "e2" || s.Count != 3 || s.Error != "" || len(s.Drift) != 1 ||
			s.Artifacts[0] != (contract.ArtifactCount{Artifact: "shop:v2", Count: 2}) {
			t.Errorf("after the deployment's signal %+v", s)
		}
		checks++
		env.SignalWorkflow(contract.SignalInstancesReading, contract.InstanceReading{Read: contract.InstanceRead{Gone: "namespace shop no longer exists"}, At: t0.Add(time.Hour)})
	}, 3*time.Minute)
	env.ExecuteWorkflow(contract.InstancesName, contract.InstanceSync{Target: contract.InstanceTarget{Key: key, DeploymentType: "Kubernetes", Version: "v1"}})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("the sync did not end when its target was gone: %v", env.GetWorkflowError())
	}
	if checks != 3 {
		t.Fatalf("%d of 3 checks ran", checks)
	}
	if got, want := strings.Join(reads, " "), "v1 v2"; got != want {
		t.Errorf("reads %s, want %s: the sync reads itself at the start and for a deployment only", got, want)
	}
}

// After instancesPerRun loops the sync continues as new with its target and last reading.
func TestInstancesSyncContinuesAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Instances, workflow.RegisterOptions{Name: contract.InstancesName})
	defer func(n int) { instancesPerRun = n }(instancesPerRun)
	instancesPerRun = 3
	env.RegisterActivityWithOptions(func(context.Context, contract.InstanceTarget) (contract.InstanceRead, error) {
		return contract.ReadOf([]contract.Instance{{Name: "web-1", Artifact: "web:1", Ready: true}}, nil), nil
	}, activity.RegisterOptions{Name: contract.ReadInstances})
	for i := range 3 {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInstancesSync, nil) }, time.Duration(i+1)*time.Minute)
	}
	target := contract.InstanceTarget{Key: contract.DeploymentKey{Service: "web"}, DeploymentType: "Ssh", Version: "1"}
	env.ExecuteWorkflow(contract.InstancesName, contract.InstanceSync{Target: target})
	var can *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &can) {
		t.Fatalf("want continue-as-new, got %v", env.GetWorkflowError())
	}
	var next contract.InstanceSync
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Target.Version != "1" || next.Snapshot == nil || next.Snapshot.Count != 1 {
		t.Errorf("carried over %+v", next)
	}
}

// The sweep runs at once, then on its timer; a new interval takes effect for the next wait;
// its memo holds the interval and the last completed sweep; a failed sweep waits for the next.
func TestInstanceSweepRunsOnItsTimer(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(InstanceSweep, workflow.RegisterOptions{Name: contract.SweepName})
	defer func(n int) { sweepsPerRun = n }(sweepsPerRun)
	sweepsPerRun = 4
	var at []time.Time
	env.RegisterActivityWithOptions(func(ctx context.Context) (contract.SweepResult, error) {
		at = append(at, env.Now())
		if len(at) == 2 {
			return contract.SweepResult{}, temporal.NewNonRetryableApplicationError("visibility is down", "Unknown", nil)
		}
		return contract.SweepResult{Targets: 1000, Changed: len(at)}, nil
	}, activity.RegisterOptions{Name: contract.SweepInstances})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalSweepEvery, 5*time.Minute) }, 15*time.Minute)
	env.ExecuteWorkflow(contract.SweepName, contract.InstanceSweepState{Every: 10 * time.Minute})
	var can *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &can) {
		t.Fatalf("want continue-as-new, got %v", env.GetWorkflowError())
	}
	var next contract.InstanceSweepState
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	// At 0 and 10 minutes (failed); the signal at 15 cuts that wait short; then every 5.
	var gaps []string
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]).Round(time.Minute).String())
	}
	if got, want := strings.Join(gaps, " "), "10m0s 5m0s 5m0s"; got != want {
		t.Errorf("sweeps %d apart %s, want %s", len(at), got, want)
	}
	if next.Every != 5*time.Minute || next.Last == nil || next.Last.Changed != 4 || next.Last.Targets != 1000 || next.Last.Ended.Before(next.Last.Started) {
		t.Errorf("carried over %+v %+v", next, next.Last)
	}
}
