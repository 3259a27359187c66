package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/ledger"
)

// The services list names what runs (the last success) apart from the last deployment, and a
// DORA figure without a sample reads "-", never zero.
func TestServicesOutput(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ok := &contract.DeploymentRecord{Execution: "shop-7", Outcome: contract.OutcomeSucceeded, Ended: at, StartedBy: "ann", Artifact: &contract.LedgerArtifact{Version: "3.0"}}
	bad := &contract.DeploymentRecord{Execution: "shop-8", Outcome: contract.OutcomeFailed, Ended: at.Add(time.Hour), Trigger: "WEBHOOK", Artifact: &contract.LedgerArtifact{Version: "3.1"}}
	var out bytes.Buffer
	read := &contract.InstanceSnapshot{SyncedAt: at, Count: 3, Ready: 2, Drift: []string{"Deployment checkout was scaled to 3 outside Gantry"}, Error: "cannot reach the cluster"}
	if err := printTargets(&out, []contract.LedgerSummary{{Key: contract.DeploymentKey{Service: "checkout", Environment: "prod", Infra: "k8s"},
		EnvironmentType: "Production", Current: ok, Last: bad}, {Key: contract.DeploymentKey{Service: "checkout", Environment: "qa", Infra: "k8s"},
		Current: ok, Last: ok, Instances: read}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	row := strings.Fields(lines[1])
	if got := strings.Join([]string{row[0], row[1], row[2], row[3], row[4], row[5], row[8], row[11], row[12]}, " "); got != "checkout prod (prod) k8s 3.0 - failed webhook shop-8" {
		t.Errorf("row %q (a target whose instances are not read shows -)", out.String())
	}
	if !strings.Contains(lines[2], " 3 (2 ready), drift, read failed ") {
		t.Errorf("instances cell of %q", lines[2])
	}
	out.Reset()
	read.Key, read.TriedAt = contract.DeploymentKey{Environment: "qa", Infra: "k8s"}, at.Add(time.Minute)
	read.Instances = []contract.Instance{{Name: "checkout-1", Artifact: "shop/checkout:3.0", Node: "n1", Ready: true}, {Name: "checkout-2", Artifact: "shop/checkout:3.0"}}
	if err := printInstances(&out, []contract.InstanceSnapshot{*read}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Instances in qa/k8s: 3 (2 ready), drift, read failed", "failed: cannot reach the cluster", "drift: Deployment checkout was scaled",
		"checkout-1  shop/checkout:3.0  n1     true", "checkout-2  shop/checkout:3.0  -      false", "and 1 more"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("instances output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	rate := 0.25
	printDORA(&out, ledger.DORA{From: at, To: at.AddDate(0, 0, 7), Days: 7, Deployments: 4, Succeeded: 3, Failed: 1, FrequencyPerDay: 3.0 / 7, ChangeFailureRate: &rate})
	for _, want := range []string{"0.43 per day", "lead time for changes  - (no deployment whose commit time is known)", "change failure rate    25.0%", "time to restore        - (no restore)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("DORA output lacks %q:\n%s", want, out.String())
		}
	}
}
