package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// stressPipeline fails a step into manual intervention, then waits for one approval.
func stressPipeline(id string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: a
                  identifier: a
                  timeout: 1m
                  spec: {shell: Sh, source: {type: Inline, spec: {script: exit 1}}}
                  failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: ManualIntervention, spec: {timeout: 1h, onTimeout: {action: {type: Abort}}}}}}]
              - step: {type: ShellScript, name: b, identifier: b, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: exit 0}}}}
    - stage:
        name: gate
        identifier: gate
        type: Approval
        spec:
          execution:
            steps:
              - step:
                  type: HarnessApproval
                  name: gate
                  identifier: gate
                  timeout: 1h
                  spec:
                    approvalMessage: ship?
                    includePipelineExecutionHistory: false
                    approvers: {userGroups: [release_managers], minimumCount: 1, disallowPipelineExecutor: false}
`
}

// burnCPU keeps every core busy with shell loops until the test ends, as a loaded CI machine
// would be.
func burnCPU(t *testing.T, n int) {
	for i := 0; i < n; i++ {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	}
}

// TestStressDecisionsUnderLoad sends an intervention and an approval to each of many
// executions while other processes saturate the CPU, and checks that every decision was
// reported applied and was applied exactly once. It is `make stress`, not part of `make test`.
func TestStressDecisionsUnderLoad(t *testing.T) {
	if os.Getenv("GANTRY_STRESS") == "" {
		t.Skip("stress test: run with make stress (GANTRY_STRESS=1)")
	}
	n := 40
	if v, err := strconv.Atoi(os.Getenv("GANTRY_STRESS_EXECUTIONS")); err == nil && v > 0 {
		n = v
	}
	burnCPU(t, 2*runtime.NumCPU())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	p := compile(t, "stress.yaml", []byte(stressPipeline("stress")), load.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	ids := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "executor"}, workflows.Settings{})
			if err != nil {
				errs <- err
				return
			}
			ids[i] = exec.ID
			waitFor(t, ctx, env.starter, exec.ID, "s1.a", status.InterventionWaiting)
			if _, err := env.starter.Intervene(ctx, exec.ID, workflows.InterventionRequest{Path: "s1.a", Action: "Ignore", User: "ops"}); err != nil {
				errs <- fmt.Errorf("%s: intervention reported failed: %w", exec.ID, err)
				return
			}
			waitFor(t, ctx, env.starter, exec.ID, "gate.gate", status.ApprovalWaiting)
			if _, err := env.starter.Approve(ctx, exec.ID, vote("alice", []string{"release_managers"}, "APPROVE", nil)); err != nil {
				errs <- fmt.Errorf("%s: approval reported failed: %w", exec.ID, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	t.Logf("%d executions; updates sent again after a transient refusal: %d", n, env.starter.Resent())
	for err := range errs {
		t.Error(err)
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		res, err := env.starter.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		conformance.Check(t, res.Tree, map[string]status.Status{"s1.a": status.IgnoreFailed, "s1.b": status.Succeeded, "gate.gate": status.Succeeded, "": status.IgnoreFailed})
		if acts, _ := res.Tree.Find("gate.gate").Outputs["approvalActivities"].([]any); len(acts) != 1 {
			t.Errorf("%s: %d approval activities, want 1", id, len(acts))
		}
		for _, wf := range []string{id + "/s1", id + "/gate"} {
			if got := acceptedUpdates(t, ctx, wf); got != 1 {
				t.Errorf("%s: %d updates accepted, want exactly 1", wf, got)
			}
		}
	}
}

// acceptedUpdates counts the updates a workflow's history accepted.
func acceptedUpdates(t *testing.T, ctx context.Context, id string) int {
	t.Helper()
	it := env.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED {
			n++
		}
	}
	return n
}
