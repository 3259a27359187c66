package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkLedgerReads times the services list over 500 services (one production target
// each) against the bare visibility listing of the same workflows, the Web UI's services page
// of the same list (a whole GET), and the DORA figures over 100,000 recorded deployments (ten
// targets of 10,000, a year of days) against bare queries of the same ten ledgers.
func BenchmarkLedgerReads(b *testing.B) {
	ctx := context.Background()
	queue := workflows.SequenceQueue(workflows.TaskQueue)
	start := func(st contract.LedgerState) {
		id := contract.LedgerID(st.Key)
		if _, err := env.internal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, contract.LedgerName, st); err != nil {
			b.Fatal(err)
		}
	}
	base := time.Now().UTC().AddDate(-1, 0, 0)
	for i := range 500 {
		st := contract.LedgerState{}
		workflows.LedgerApply(&st, contract.DeploymentRecord{Key: contract.DeploymentKey{Project: "bench/ledger", Service: fmt.Sprintf("bench_svc_%03d", i), Environment: "bench_prod", Infra: "k8s"},
			EnvironmentType: "Production", Execution: "e", Stage: "deploy", Pipeline: "p", Outcome: contract.OutcomeSucceeded, Ended: base,
			Artifact: &contract.LedgerArtifact{Version: "1.0"}})
		start(st)
	}
	for i := range 10 {
		st := contract.LedgerState{}
		for k := range 10000 {
			ended := base.Add(time.Duration(k) * 52 * time.Minute)
			r := contract.DeploymentRecord{Key: contract.DeploymentKey{Project: "bench/ledger", Service: "bench_dora", Environment: "bench_prod", Infra: fmt.Sprint("k8s_", i)},
				EnvironmentType: "Production", Execution: fmt.Sprint("e", k), Stage: "deploy", Pipeline: "p", Outcome: contract.OutcomeSucceeded,
				Ended: ended, CommitTime: ended.Add(-time.Hour)}
			if k%10 == 9 {
				r.Outcome = contract.OutcomeFailed
			}
			workflows.LedgerApply(&st, r)
		}
		start(st)
	}
	lv := env.starter.Ledger()
	all := ledger.Filter{EnvironmentType: "Production"}
	for { // every memo visible
		t, err := lv.Targets(ctx, all)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, x := range t {
			if x.Key.Project == "bench/ledger" {
				n++
			}
		}
		if n == 510 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address, Namespace: env.srv.Namespace,
		User: func(string) (*identity.User, error) { return &identity.User{Name: "bench"}, nil }, Services: lv})
	if err != nil {
		b.Fatal(err)
	}
	defer ui.Stop()
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.LedgerName)
	var services, raw, dora, rawQueries, pageTime time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		req, _ := http.NewRequest("GET", ui.URL+webui.ServicesPath+"?env=bench_prod", nil)
		req.Header.Set("Authorization", "Bearer bench")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Count(string(body), `class="target"`) != 510 { // 500 services and the DORA service's 10 targets
			b.Fatalf("services page: %d, %d rows", resp.StatusCode, strings.Count(string(body), `class="target"`))
		}
		pageTime += time.Since(t0)
		t0 = time.Now()
		if _, err := lv.Targets(ctx, all); err != nil {
			b.Fatal(err)
		}
		services += time.Since(t0)
		t0 = time.Now()
		var token []byte
		for {
			resp, err := env.internal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1000, NextPageToken: token})
			if err != nil {
				b.Fatal(err)
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
		raw += time.Since(t0)
		t0 = time.Now()
		d, err := lv.DORA(ctx, ledger.Filter{Service: "bench_dora", EnvironmentType: "Production"}, base, base.AddDate(1, 0, 1))
		if err != nil || d.Deployments != 100000 {
			b.Fatalf("DORA %+v, %v", d, err)
		}
		dora += time.Since(t0)
		t0 = time.Now()
		for i := range 10 {
			if _, err := env.internal.QueryWorkflow(ctx, contract.LedgerID(contract.DeploymentKey{Project: "bench/ledger", Service: "bench_dora", Environment: "bench_prod", Infra: fmt.Sprint("k8s_", i)}), "", contract.QueryLedger); err != nil {
				b.Fatal(err)
			}
		}
		rawQueries += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(services.Microseconds())/1000/n, "services-ms")
	b.ReportMetric(float64(raw.Microseconds())/1000/n, "raw-list-ms")
	b.ReportMetric(float64(pageTime.Microseconds())/1000/n, "services-page-ms")
	b.ReportMetric(float64(dora.Microseconds())/1000/n, "dora-ms")
	b.ReportMetric(float64(rawQueries.Microseconds())/1000/n, "raw-queries-ms")
}
