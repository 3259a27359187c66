package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// approvalRuns is how many executions BenchmarkApprovals approves in each round.
var approvalRuns = envInt("GANTRY_APPROVAL_RUNS", 2000)

// rawApprovalName is the baseline of BenchmarkApprovals: a hand-written workflow that waits
// for one update and completes.
const rawApprovalName = "bench.RawApproval"

func rawApproval(ctx workflow.Context) (string, error) {
	var by string
	if err := workflow.SetUpdateHandler(ctx, "approve", func(ctx workflow.Context, user string) (string, error) {
		by = user
		return "approved by " + user, nil
	}); err != nil {
		return "", err
	}
	err := workflow.Await(ctx, func() bool { return by != "" })
	return by, err
}

// rawStagedApprovalName is the second baseline: Gantry's shape hand-written, a parent workflow
// whose one child (ID parent + "/gate", as a stage's) waits for the update; the parent ends
// when the child does. What an approval costs in this shape is the floor of a pipeline whose
// stages are child workflows.
const rawStagedApprovalName = "bench.RawStagedApproval"

func rawStagedApproval(ctx workflow.Context) (string, error) {
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID + "/gate"})
	var by string
	err := workflow.ExecuteChildWorkflow(ctx, rawApprovalName).Get(ctx, &by)
	return by, err
}

// rawApprovalAPI drives rawApproval over HTTP the way Gantry's API drives pipelines: POST
// /start starts one on queue and answers its ID, POST /approve/{id} sends the update and
// answers when the workflow has applied it. With ?staged both act on rawStagedApproval: the
// start starts the parent, the update goes to its child.
func rawApprovalAPI(c client.Client, queue string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		name := rawApprovalName
		if r.URL.Query().Has("staged") {
			name = rawStagedApprovalName
		}
		run, err := c.ExecuteWorkflow(r.Context(), client.StartWorkflowOptions{TaskQueue: queue}, name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"executionId": run.GetID()})
	})
	mux.HandleFunc("POST /approve/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if r.URL.Query().Has("staged") {
			id += "/gate"
		}
		h, err := c.UpdateWorkflow(r.Context(), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "approve",
			Args: []any{"releaser"}, WaitForStage: client.WorkflowUpdateStageCompleted})
		var msg string
		if err == nil {
			err = h.Get(r.Context(), &msg)
		}
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound): // a staged child not started yet: asked again
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
	})
	return mux
}

// BenchmarkApprovalsEmbedded starts GANTRY_APPROVAL_RUNS (2,000) executions that wait for
// one approval each on the embedded server, through the HTTP API from 8 clients, and
// approves them all 3 s after the last start, again from 8 clients (retrying the few not yet
// waiting). Baselines: the hand-written rawApproval workflow (raw-) and rawStagedApproval,
// the same wait in a child workflow as a stage's (staged-), on the same server and worker,
// driven the same way through a minimal HTTP API of the same client. Rounds alternate,
// baselines first. GANTRY_APPROVAL_PROFILE=FILE writes a CPU profile of each approval phase
// (FILE.raw, FILE.staged, FILE.gantry) and of each start phase (FILE.raw.starts, ...).
func BenchmarkApprovalsEmbedded(b *testing.B) {
	api, token := releaserAPI(b)
	raw := httptest.NewServer(rawApprovalAPI(env.client, workflows.TaskQueue))
	defer raw.Close()
	benchApprovals(b, api, token, raw.URL, env.client)
}

// BenchmarkApprovalsTopology does the same on the production topology as processes
// (PostgreSQL, `gantry temporal`, two workers, `gantry server`); the baseline workflow runs on
// a worker in this process, on its own task queue of the same Temporal server.
func BenchmarkApprovalsTopology(b *testing.B) {
	topo, token, c := releaserTopology(b)
	const queue = "bench-raw-approvals"
	// Pollers that scale as a gantry worker's do, so both sides fetch their tasks alike.
	w := worker.New(c, queue, worker.Options{WorkflowTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})})
	w.RegisterWorkflowWithOptions(rawApproval, workflow.RegisterOptions{Name: rawApprovalName})
	w.RegisterWorkflowWithOptions(rawStagedApproval, workflow.RegisterOptions{Name: rawStagedApprovalName})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	raw := httptest.NewServer(rawApprovalAPI(c, queue))
	defer raw.Close()
	benchApprovals(b, topo.API, token, raw.URL, c)
}

func benchApprovals(b *testing.B, api, token, rawAPI string, c client.Client) {
	var rr, sr, gr []approvalRound
	for i := 0; i < b.N; i++ {
		for _, base := range []struct {
			name, query string
			rounds      *[]approvalRound
		}{{"raw", "", &rr}, {"staged", "?staged", &sr}} {
			*base.rounds = append(*base.rounds, approvalsRound(b, base.name, func() (string, error) {
				var out struct{ ExecutionID string }
				err := call(rawAPI, "", "POST", "/start"+base.query, nil, http.StatusCreated, &out)
				return out.ExecutionID, err
			}, func(id string) error {
				return call(rawAPI, "", "POST", "/approve/"+id+base.query, nil, http.StatusOK, nil)
			}, func(ctx context.Context, id string) error {
				return c.GetWorkflow(ctx, id, "").Get(ctx, nil)
			}))
		}
		yaml := scalePipeline(fmt.Sprintf("approvals_%d_%d", time.Now().UnixNano(), i))
		gr = append(gr, approvalsRound(b, "gantry", func() (string, error) {
			var out struct{ ExecutionID string }
			err := call(api, token, "POST", "/api/v1/executions", map[string]any{"yaml": yaml}, http.StatusCreated, &out)
			return out.ExecutionID, err
		}, func(id string) error {
			return call(api, token, "POST", "/api/v1/executions/"+id+"/approve", map[string]any{"path": "gate.gate"}, http.StatusOK, nil)
		}, func(ctx context.Context, id string) error {
			var res workflows.PipelineResult
			if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
				return err
			}
			if res.Status != status.Succeeded {
				return fmt.Errorf("ended %s", res.Status)
			}
			return nil
		}))
	}
	report := func(prefix string, rs []approvalRound) {
		med := func(f func(approvalRound) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			slices.Sort(v)
			return v[(len(v)-1)/2]
		}
		b.ReportMetric(med(func(r approvalRound) float64 { return r.startsPerS }), prefix+"starts/s")
		b.ReportMetric(med(func(r approvalRound) float64 { return r.approvalsPerS }), prefix+"approvals/s")
		b.ReportMetric(med(func(r approvalRound) float64 { return r.p50 }), prefix+"approval-p50-ms")
		b.ReportMetric(med(func(r approvalRound) float64 { return r.p99 }), prefix+"approval-p99-ms")
		b.ReportMetric(med(func(r approvalRound) float64 { return r.allDone }), prefix+"s-until-all-succeeded")
		b.ReportMetric(med(func(r approvalRound) float64 { return r.cpuMs }), prefix+"cpu-ms/approval")
	}
	report("", gr)
	report("raw-", rr)
	report("staged-", sr)
}

// approvalRound is what one round of starts and approvals measured.
type approvalRound struct {
	startsPerS, approvalsPerS, p50, p99, allDone float64
	// cpuMs is the machine's busy CPU time from the first approval until every execution
	// succeeded, per approval: what an approval costs, all processes together.
	cpuMs float64
}

// approvalsRound starts approvalRuns executions from 8 clients, waits 3 s
// (GANTRY_APPROVAL_SETTLE: longer lets every execution reach its approval first, which
// measures the approval path alone), approves each from 8 clients (an approval that finds its execution not yet waiting is sent again 100 ms later)
// and waits until every execution succeeded.
func approvalsRound(b *testing.B, name string, start func() (string, error), approve func(id string) error, succeeded func(ctx context.Context, id string) error) approvalRound {
	ids := make([]string, approvalRuns)
	stop := cpuProfile(b, name+".starts")
	t0 := time.Now()
	parallel(b, approvalRuns, func(j int) (err error) {
		ids[j], err = start()
		return err
	})
	started := time.Since(t0)
	stop()
	time.Sleep(time.Duration(envInt("GANTRY_APPROVAL_SETTLE", 3)) * time.Second)
	lat := make([]time.Duration, approvalRuns)
	defer cpuProfile(b, name)()
	t1, cpu1 := time.Now(), machineCPU()
	parallel(b, approvalRuns, func(j int) error {
		s := time.Now()
		for {
			err := approve(ids[j])
			if err == nil {
				lat[j] = time.Since(s)
				return nil
			}
			// Not waiting yet: the stage has not started (404) or not reached the step (409).
			if !strings.Contains(err.Error(), "404") && !strings.Contains(err.Error(), "409") || time.Since(s) > 2*time.Minute {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	approved := time.Since(t1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, id := range ids {
		if err := succeeded(ctx, id); err != nil {
			b.Fatalf("%s: %v", id, err)
		}
	}
	done, cpu := time.Since(t1), machineCPU()-cpu1
	slices.Sort(lat)
	return approvalRound{
		startsPerS:    float64(approvalRuns) / started.Seconds(),
		approvalsPerS: float64(approvalRuns) / approved.Seconds(),
		p50:           float64(lat[len(lat)/2].Microseconds()) / 1000,
		p99:           float64(lat[len(lat)*99/100].Microseconds()) / 1000,
		allDone:       done.Seconds(),
		cpuMs:         float64(cpu.Milliseconds()) / float64(approvalRuns),
	}
}

// cpuProfile starts a CPU profile to GANTRY_APPROVAL_PROFILE + "." + part when that is set,
// and returns what stops it.
func cpuProfile(b *testing.B, part string) (stop func()) {
	f := os.Getenv("GANTRY_APPROVAL_PROFILE")
	if f == "" {
		return func() {}
	}
	fh, err := os.Create(f + "." + part)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(fh); err != nil {
		fh.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		fh.Close()
	}
}

// machineCPU is the CPU time every process of this machine has spent busy so far (user,
// system, interrupts; not idle or I/O wait), from /proc/stat.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal guest...
	var ticks int64
	for i, v := range f[1:min(len(f), 9)] { // guest time is already counted in user
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// userHZ is the unit of /proc/stat's times on Linux.
const userHZ = 100
