package webui

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/ledger"
)

// fixedLedger is a ledger.View of fixed targets and deployments.
type fixedLedger struct {
	ledger.View
	targets   []contract.LedgerSummary
	deps      []contract.DeploymentRecord
	instances []contract.InstanceSnapshot
}

func (l fixedLedger) Instances(_ context.Context, f ledger.Filter) ([]contract.InstanceSnapshot, error) {
	var out []contract.InstanceSnapshot
	for _, t := range f.Keep(l.targets) {
		for _, s := range l.instances {
			if s.Key == t.Key {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func (l fixedLedger) Targets(_ context.Context, f ledger.Filter) ([]contract.LedgerSummary, error) {
	return f.Keep(l.targets), nil
}

func (l fixedLedger) Deployments(_ context.Context, f ledger.Filter, limit int) ([]contract.DeploymentRecord, error) {
	var out []contract.DeploymentRecord
	for _, d := range l.deps {
		if d.Key.Service == f.Service && len(out) < limit {
			out = append(out, d)
		}
	}
	return out, nil
}

// viewOnly lets its user view one pipeline.
type viewOnly struct {
	Access
	pipeline string
}

func (v viewOnly) AllowPipeline(u *identity.User, a identity.Action, pipeline string) error {
	if pipeline == v.pipeline {
		return nil
	}
	return errors.New("forbidden")
}

// The services page lists each target with the version the last success deployed and the last
// deployment (outcome, who, a link to its execution); a service's page adds its newest
// deployments. Only deployments of pipelines the viewer may view show; a visitor who is not
// signed in is sent to sign in.
func TestServicesPages(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	rec := func(env, pipeline, exec, outcome, version string, at time.Time) *contract.DeploymentRecord {
		return &contract.DeploymentRecord{Key: contract.DeploymentKey{Service: "checkout", Environment: env, Infra: env + "_k8s"}, Pipeline: pipeline,
			Execution: exec, Outcome: outcome, StartedBy: "ann", Stage: "deploy", Ended: at, Commit: "0123456789abcdef0123",
			Artifact: &contract.LedgerArtifact{Version: version}}
	}
	prodOK := rec("prod", "checkout_deploy", "checkout_deploy-7", "succeeded", "3.0", t0)
	prodFailed := rec("prod", "checkout_deploy", "checkout_deploy-8", "rolledBack", "3.1", t0.Add(time.Hour))
	secret := rec("audit", "hidden", "hidden-1", "succeeded", "9.9", t0)
	read := contract.InstanceSnapshot{Key: prodOK.Key, SyncedAt: t0, TriedAt: t0.Add(10 * time.Minute), Error: "cannot reach the cluster", Count: 3, Ready: 2,
		Drift:     []string{"Deployment checkout was scaled to 3 outside Gantry; it was deployed with 2"},
		Instances: []contract.Instance{{Name: "checkout-a", Artifact: "shop/checkout:3.0", Node: "n1", Ready: true}, {Name: "checkout-b", Artifact: "shop/checkout:3.0"}}}
	summary := read
	summary.Instances = nil
	hiddenRead := contract.InstanceSnapshot{Key: secret.Key, SyncedAt: t0, Count: 1, Instances: []contract.Instance{{Name: "hidden-pod"}}}
	lv := fixedLedger{
		instances: []contract.InstanceSnapshot{read, hiddenRead},
		targets: []contract.LedgerSummary{
			{Key: prodOK.Key, EnvironmentType: "Production", Current: prodOK, Last: prodFailed, Total: 2, Instances: &summary},
			{Key: secret.Key, EnvironmentType: "PreProduction", Current: secret, Last: secret, Total: 1},
		},
		deps: []contract.DeploymentRecord{*prodFailed, *prodOK, *secret},
	}
	users := func(token string) (*identity.User, error) {
		if token == "good" {
			return &identity.User{Name: "ann"}, nil
		}
		return nil, identity.ErrUnauthenticated
	}
	srv := httptest.NewServer(services(lv, users, viewOnly{pipeline: "checkout_deploy"}))
	defer srv.Close()
	get := func(token, path string) (int, string, string) { return getPage(t, srv.URL+path, token) }
	if code, loc, _ := get("", ServicesPath); code != http.StatusSeeOther || loc != SignInPath+"?next=%2Fgantry%2Fservices" {
		t.Fatalf("not signed in: %d to %q", code, loc)
	}
	code, _, body := get("good", ServicesPath)
	for _, want := range []string{
		`data-service="checkout" data-env="prod" data-infra="prod_k8s"`, `<small>(Production)</small>`, `<td class="version">3.0</td>`,
		`<td>2026-03-04 05:06:07</td>`, `class="last o-rolledBack">rolledBack 2026-03-04 06:06:07</td><td>ann</td>`,
		`<a href="/gantry/executions/checkout_deploy-8">checkout_deploy-8</a>`, `<a href="/gantry/services/checkout">checkout</a>`,
		`<td class="instances drift read-failed">3 (2 ready), drift, read failed</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("services page: %d, no %q in\n%s", code, want, body)
		}
	}
	if strings.Contains(body, "hidden") || strings.Contains(body, "audit") {
		t.Errorf("the page shows a deployment of a pipeline the viewer may not view:\n%s", body)
	}
	code, _, body = get("good", ServicesPath+"/checkout")
	history := body[strings.Index(body, `id="history"`):]
	for _, want := range []string{`data-execution="checkout_deploy-8"`, `o-rolledBack">rolledBack</td><td>3.1</td>`, `<code>0123456789ab</code>`, `data-execution="checkout_deploy-7"`} {
		if !strings.Contains(history, want) {
			t.Errorf("service page: %d, no %q in\n%s", code, want, body)
		}
	}
	for _, want := range []string{`<h3>prod / prod_k8s: 3 (2 ready), drift, read failed</h3>`, `the read at 2026-03-04 05:16:07 UTC failed: cannot reach the cluster`,
		`<p class="drift">Drift: Deployment checkout was scaled to 3 outside Gantry; it was deployed with 2</p>`,
		`<tr class="instance"><td>checkout-a</td><td><code>shop/checkout:3.0</code></td><td>n1</td><td>yes</td></tr>`, `<td>checkout-b</td>`, `and 1 more`} {
		if !strings.Contains(body, want) {
			t.Errorf("service page: no %q in\n%s", want, body)
		}
	}
	if strings.Contains(body, "hidden-pod") {
		t.Errorf("the service page shows the instances of a target the viewer may not view:\n%s", body)
	}
	if strings.Index(history, "checkout_deploy-8") > strings.Index(history, "checkout_deploy-7") || strings.Contains(history, "hidden-1") {
		t.Errorf("history not newest first, or shows a hidden deployment:\n%s", history)
	}
	if code, _, _ := get("good", ServicesPath+"/nothing"); code != http.StatusNotFound {
		t.Errorf("an unknown service: %d", code)
	}
}
