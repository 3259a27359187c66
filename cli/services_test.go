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
	if err := printTargets(&out, []contract.LedgerSummary{{Key: contract.DeploymentKey{Service: "checkout", Environment: "prod", Infra: "k8s"},
		EnvironmentType: "Production", Current: ok, Last: bad}}); err != nil {
		t.Fatal(err)
	}
	row := strings.Fields(strings.Split(out.String(), "\n")[1])
	if got := strings.Join([]string{row[0], row[1], row[2], row[3], row[4], row[7], row[10], row[11]}, " "); got != "checkout prod (prod) k8s 3.0 failed webhook shop-8" {
		t.Errorf("row %q", out.String())
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
