package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/internal/jiratest"
	"github.com/gantry-cd/gantry/internal/snowtest"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// ticketWaitPipeline waits on one Jira issue (or, as the baseline, on a timer of the same
// length: an execution that waits and reads nothing).
const ticketWaitPipeline = `pipeline:
  name: Ticket wait
  identifier: ID
  variables:
    - {name: key, type: String, value: <+input>}
  stages:
    - stage:
        name: Gate
        identifier: gate
        type: Custom
        spec:
          execution:
            steps:
              - step:
STEP
`

const ticketWaitStep = `                  type: JiraApproval
                  name: Wait
                  identifier: wait
                  timeout: 2h
                  spec:
                    connectorRef: jira
                    issueKey: <+pipeline.variables.key>
                    retryInterval: 30s
                    approvalCriteria:
                      type: KeyValues
                      spec: {conditions: [{key: Status, operator: equals, value: Approved}]}`

const timerWaitStep = `                  type: Wait
                  name: Wait
                  identifier: wait
                  spec: {duration: 2h}`

// BenchmarkTicketWait1000 starts 1,000 executions that each wait on a Jira issue read every
// 30s, and reports the reads per minute the fake Jira answers while they wait, the memory per
// waiting execution (Go heap of this process: server and worker) against 1,000 executions that
// wait on a timer instead, and, once every issue is approved at the same moment, the longest
// time a read took to see the approval (target: within one retry interval, 30s), and the
// longest and median times an execution took to go on (that read, then the completions of
// 1,000 executions at once).
func BenchmarkTicketWait1000(b *testing.B) {
	const n, interval = 1000, 30 * time.Second
	for i := range b.N {
		jira, snow := jiratest.Start(), snowtest.Start()
		dir := b.TempDir()
		tag := fmt.Sprintf("bench%d", i)
		ticketConnectors(b, dir, tag, jira, snow, jira.Token)
		keys := jira.Open(n)
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)

		start := func(kind, step string) []string {
			file := filepath.Join(dir, kind+".yaml")
			writeFile(b, file, strings.NewReplacer("ID", fmt.Sprintf("%s_%s_%d", kind, tag, time.Now().UnixNano()), "STEP", step).Replace(ticketWaitPipeline))
			ids := make([]string, n)
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for j := range n {
				p := loadRun(b, file, "pipeline.variables.key="+keys[j])
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
					if err != nil {
						b.Error(err)
						return
					}
					ids[j] = exec.ID
				}()
			}
			wg.Wait()
			return ids
		}
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}

		before := heap()
		timers := start("timer", timerWaitStep)
		time.Sleep(20 * time.Second)
		timerBytes := float64(heap()-before) / n
		for _, id := range timers {
			_ = env.client.TerminateWorkflow(ctx, id, "", "benchmark baseline done")
		}
		time.Sleep(5 * time.Second)

		before = heap()
		waits := start("ticket", ticketWaitStep)
		for jira.Requests()["GET issue"] < n {
			if ctx.Err() != nil {
				b.Fatalf("only %d reads", jira.Requests()["GET issue"])
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(interval)
		ticketBytes := float64(heap()-before) / n
		r0 := jira.Requests()["GET issue"]
		time.Sleep(time.Minute)
		perMinute := jira.Requests()["GET issue"] - r0

		approved := time.Now()
		for _, k := range keys {
			jira.SetStatus(k, "Approved")
		}
		var took []time.Duration
		var seen, read, reacted time.Duration
		for j, id := range waits {
			res, err := env.starter.Result(ctx, id)
			if err != nil || res.Status != status.Succeeded {
				b.Fatalf("%s: %v %v", id, res, err)
			}
			took = append(took, res.Tree.Find("gate.wait").EndedAt.Sub(approved))
			// The wait (the stage's TicketWait child) ended when a read saw the approval.
			d, err := env.client.DescribeWorkflowExecution(ctx, id+"/gate/wait/gate.wait/1", "")
			if err != nil {
				b.Fatal(err)
			}
			seen = max(seen, d.GetWorkflowExecutionInfo().GetCloseTime().AsTime().Sub(approved))
			// Polling splits the time to go on: until the first read after the approval (one
			// interval at most, plus how late that read came), and from that read on.
			r := jira.ReadSinceMoved(keys[j])
			read = max(read, r.Sub(approved))
			reacted = max(reacted, res.Tree.Find("gate.wait").EndedAt.Sub(r))
		}
		slices.Sort(took)
		cancel()
		jira.Close()
		snow.Close()
		b.ReportMetric(float64(perMinute), "reads/min")
		b.ReportMetric(ticketBytes/1024, "KiB/waiting")
		b.ReportMetric(timerBytes/1024, "KiB/timer-waiting")
		b.ReportMetric(ticketBytes/timerBytes, "x-memory-vs-timer")
		b.ReportMetric(seen.Seconds(), "s-slowest-to-see")
		b.ReportMetric(took[len(took)/2].Seconds(), "s-median-to-continue")
		b.ReportMetric(took[len(took)-1].Seconds(), "s-slowest-to-continue")
		b.ReportMetric(read.Seconds(), "s-slowest-first-read")
		b.ReportMetric(reacted.Seconds(), "s-slowest-from-read")
	}
}
