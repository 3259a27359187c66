package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkLockHandoff: 20 executions queued at once on one key (a Queue step, then one
// marked step); handoff-ms is the median time from one execution's mark of its end to the
// next one's mark of its start. The baseline, sequential-ms, is the same gap when a client
// starts the same pipeline without the Queue step as soon as the previous run's result is in.
func BenchmarkLockHandoff(b *testing.B) {
	const runs = 20
	r := newLockRig(b, false)
	var queued, sequential []float64
	for i := range b.N {
		key := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
		file := r.markPipeline(b, fmt.Sprintf("handoff_%d", i), key, "Stage")
		ids := make([]string, runs)
		for k := range runs {
			ids[k] = r.start(b, file).ID
		}
		for _, id := range ids {
			waitSucceeded(b, id)
		}
		queued = append(queued, gaps(b, r, ids)...)

		plain := r.markPipeline(b, fmt.Sprintf("sequential_%d", i), "", "")
		ids = ids[:0]
		for range runs {
			id := r.start(b, plain).ID
			waitSucceeded(b, id)
			ids = append(ids, id)
		}
		sequential = append(sequential, gaps(b, r, ids)...)
	}
	b.ReportMetric(median(queued), "handoff-ms")
	b.ReportMetric(median(sequential), "sequential-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDeploymentConstraint: a Deployment stage of one short step, one run after
// another, holding its infrastructure's lock (ms/run) and with allowSimultaneousDeployments
// (unconstrained-ms/run); runs alternate.
func BenchmarkDeploymentConstraint(b *testing.B) {
	locked, free := newLockRig(b, false), newLockRig(b, true)
	lf, ff := locked.deployPipeline(b, "constrained", false), free.deployPipeline(b, "unconstrained", false)
	var with, without []float64
	for range b.N {
		for _, c := range []struct {
			r    *lockRig
			file string
			out  *[]float64
		}{{locked, lf, &with}, {free, ff, &without}} {
			start := time.Now()
			waitSucceeded(b, c.r.start(b, c.file).ID)
			*c.out = append(*c.out, float64(time.Since(start).Microseconds())/1000)
		}
	}
	b.ReportMetric(median(with), "ms/run")
	b.ReportMetric(median(without), "unconstrained-ms/run")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDeploymentConstraintRollout: the same comparison on a stage that deploys: a
// Kubernetes rolling deployment of a new image tag each run on the test control plane (kwok
// nodes), holding the infrastructure's lock (ms/run) and with allowSimultaneousDeployments
// (unconstrained-ms/run); runs alternate.
func BenchmarkDeploymentConstraintRollout(b *testing.B) {
	rollout := `              - step:
                  type: K8sRollingDeploy
                  name: Rolling deploy
                  identifier: rolling
                  timeout: 5m
                  spec: {skipDryRun: false, pruningEnabled: true}
`
	file := func(suffix string, free bool) string {
		dir := k8sExample(b, suffix)
		if free {
			allowSimultaneous(b, dir)
		}
		f := filepath.Join(dir, "rolling.yaml")
		writeFile(b, f, devDeployment("Rolling", strings.ReplaceAll(suffix, "-", "_"), rollout))
		return f
	}
	run := fmt.Sprintf("bench-lock-%d", time.Now().Unix())
	lf, ff := file(run+"-c", false), file(run+"-u", true)
	var with, without []float64
	for i := range b.N {
		for _, c := range []struct {
			file string
			out  *[]float64
		}{{lf, &with}, {ff, &without}} {
			p := loadRun(b, c.file, fmt.Sprintf("pipeline.variables.tag=1.%d", i+1))
			start := time.Now()
			exec, err := env.starter.Start(context.Background(), p, workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
			if err != nil {
				b.Fatal(err)
			}
			waitSucceeded(b, exec.ID)
			*c.out = append(*c.out, float64(time.Since(start).Microseconds())/1000)
		}
	}
	b.ReportMetric(median(with), "ms/run")
	b.ReportMetric(median(without), "unconstrained-ms/run")
	b.ReportMetric(0, "ns/op")
}

func waitSucceeded(b testing.TB, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := env.starter.Result(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != status.Succeeded {
		b.Fatalf("%s: %s", id, res.Status)
	}
}

// gaps are the milliseconds between one execution's end mark and the next one's start mark,
// in the order they held the key.
func gaps(b testing.TB, r *lockRig, ids []string) []float64 {
	iv := intervals(b, r.read(b))
	var list [][2]int64
	for _, id := range ids {
		list = append(list, iv[id])
	}
	slices.SortFunc(list, func(x, y [2]int64) int { return int(x[0] - y[0]) })
	var out []float64
	for i := 1; i < len(list); i++ {
		out = append(out, float64(list[i][0]-list[i-1][1])/1e6)
	}
	return out
}
