package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/activities/deployed"
	"github.com/gantry-cd/gantry/activities/k8s"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkInstanceSync measures the CPU this process (Temporal server, worker, client) spends
// on one sweep over 1,000 targets whose syncs run (the sweep's signal and timer, its listing
// of the targets, the 1,000 reads, nothing signalled since nothing changed) against the same
// 1,000 reads made directly with the same reader, eight at a time. All targets read one real
// release of the test control plane; the API server's own CPU is outside both figures. A
// sweep runs every ten minutes, so per hour both figures are six times these. The process's
// idle upkeep (measured before, per second) is taken off both for the time each took.
func BenchmarkInstanceSync(b *testing.B) {
	const targets = 1000
	c, _ := cluster(b)
	file := devExample(b, "bench-instances", "dev_bench_instances")
	r, err := load.File(file, load.Options{ForRun: true, Sets: []string{"pipeline.variables.tag=1.27"}})
	if err != nil || !r.OK() {
		b.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	_, res := runPlan(b, env.starter, r.Plan)
	conformance.Check(b, res.Tree, map[string]status.Status{"deploy_dev": status.Succeeded})
	ctx := context.Background()
	lv := env.starter.Ledger()
	deps, err := lv.Deployments(ctx, ledger.Filter{Service: "web", Infra: "dev_bench_instances"}, 1)
	if err != nil || len(deps) != 1 {
		b.Fatalf("deployments %v %v", deps, err)
	}
	conn := &plan.Connector{ID: "local_cluster", Type: "ManualConfig", MasterURL: c.Server, TokenRef: kubeTokenSecret, InsecureSkipTLSVerify: true}
	target := func(i int) contract.InstanceTarget {
		return contract.InstanceTarget{Key: contract.DeploymentKey{Project: "bench/instances", Service: fmt.Sprintf("svc_%04d", i), Environment: "dev", Infra: "k8s"},
			DeploymentType: "Kubernetes", Connector: conn, Namespace: deps[0].Namespace, Release: deps[0].Release, Version: "1.27"}
	}
	queue := workflows.SequenceQueue(workflows.TaskQueue)
	for i := range targets {
		t := target(i)
		id := contract.InstancesID(t.Key)
		if _, err := env.internal.SignalWithStartWorkflow(ctx, id, contract.SignalInstancesTarget, t, client.StartWorkflowOptions{ID: id, TaskQueue: queue},
			contract.InstancesName, contract.InstanceSync{Target: t}); err != nil {
			b.Fatal(err)
		}
	}
	// synced waits until every target's memo shows a reading after since.
	reads := ledger.Reader{Client: env.internal}
	synced := func(since time.Time) {
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
			read, err := reads.Readings(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, s := range read {
				if s.Key.Project == "bench/instances" && s.SyncedAt.After(since) && s.Count == 2 {
					n++
				}
			}
			if n == targets {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d targets read", n, targets)
			}
		}
	}
	synced(time.Time{}) // each sync's own first read
	// swept waits for a sweep that started after since to end.
	swept := func(since time.Time) {
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
			desc, err := env.internal.DescribeWorkflowExecution(ctx, contract.SweepID(queue), "")
			if err != nil {
				b.Fatal(err)
			}
			var st contract.InstanceSweepState
			if _, err := contract.MemoValue(desc.GetWorkflowExecutionInfo().GetMemo().GetFields(), contract.MemoSweep, &st); err != nil {
				b.Fatal(err)
			}
			if st.Last != nil && st.Last.Started.After(since) {
				if st.Last.Targets < targets || st.Last.Changed != 0 || st.Last.Failed != 0 {
					b.Fatalf("sweep %+v: want %d targets read, none changed", st.Last, targets)
				}
				return
			}
			if time.Now().After(deadline) {
				b.Fatal("no sweep ended")
			}
		}
	}
	reader := &deployed.Activity{Kubernetes: &k8s.Activity{Secrets: &secrets.Store{}}}
	// What the process spends doing nothing (the Temporal server's own upkeep), per second:
	// taken off both figures for the time each took, so that they say what the work costs.
	// The starts' and first reads' background work (visibility, task queues) settles first:
	// until a second costs less than a tenth of a core, or a minute has passed.
	for settle := time.Now().Add(time.Minute); time.Now().Before(settle); {
		c := processCPU()
		time.Sleep(time.Second)
		if processCPU()-c < 100*time.Millisecond {
			break
		}
	}
	idleFrom, idle0 := time.Now(), processCPU()
	time.Sleep(5 * time.Second)
	idleRate := float64(processCPU()-idle0) / float64(time.Since(idleFrom))
	net := func(cpu, wall time.Duration) time.Duration { return cpu - time.Duration(idleRate*float64(wall)) }
	var viaSync, direct time.Duration
	b.ResetTimer()
	for range b.N {
		since := time.Now().UTC()
		w0, c0 := time.Now(), processCPU()
		if err := env.internal.SignalWorkflow(ctx, contract.SweepID(queue), "", contract.SignalSweepEvery, contract.DefaultInstanceSync); err != nil {
			b.Fatal(err) // any signal starts a sweep at once
		}
		swept(since)
		viaSync += net(processCPU()-c0, time.Since(w0))
		w0, c0 = time.Now(), processCPU()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := range targets {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if r, err := reader.ReadInstances(ctx, target(i)); err != nil || r.Count != 2 {
					b.Errorf("direct read: %+v %v", r, err)
				}
			}()
		}
		wg.Wait()
		direct += net(processCPU()-c0, time.Since(w0))
	}
	n := float64(b.N)
	b.ReportMetric(float64(viaSync.Milliseconds())/n, "sweep-cpu-ms")
	b.ReportMetric(float64(direct.Milliseconds())/n, "direct-cpu-ms")
	b.ReportMetric(idleRate*1000, "idle-cpu-ms/s")
}
