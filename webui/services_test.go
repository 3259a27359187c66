package webui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// fixedLedger is a ledger.View of fixed targets and deployments.
type fixedLedger struct {
	ledger.View
	targets   []contract.LedgerSummary
	deps      []contract.DeploymentRecord
	instances []contract.InstanceSnapshot
}

// DORA is four days of production deployments of checkout: 3 and 1 failed, none, 2, 1.
func (l fixedLedger) DORA(_ context.Context, f ledger.Filter, from, to time.Time) (ledger.DORA, error) {
	rate, lead := 1.0/7, 5400.0
	d := ledger.DORA{From: from, To: to, Days: 4, Deployments: 7, Succeeded: 6, Failed: 1, FrequencyPerDay: 1.5, ChangeFailureRate: &rate, LeadTimeSeconds: &lead, LeadSamples: 6,
		Daily: []ledger.DORADay{{Day: "2026-03-01", Succeeded: 3, Failed: 1}, {Day: "2026-03-02"}, {Day: "2026-03-03", Succeeded: 2}, {Day: "2026-03-04", Succeeded: 1}}}
	if f.Service != "checkout" || f.EnvironmentType != "Production" || to.Sub(from) != 30*24*time.Hour {
		return ledger.DORA{}, fmt.Errorf("DORA of %+v over %s to %s", f, from, to)
	}
	return d, nil
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
	srv := httptest.NewServer(services(lv, users, viewOnly{pipeline: "checkout_deploy"}, nil))
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
	for _, want := range []string{`7 deployments, 1 failed · deployment frequency <b>1.50 per day</b> · lead time for changes <b>1h30m0s</b> · change failure rate <b>14.3%</b> · time to restore <b>-</b>`,
		// The busiest day (4) is the chart's full height: 3 succeeded (60 px) under 1 failed (20 px).
		`<title>2026-03-01: 3 succeeded, 1 failed</title><rect class="ok" x="0" y="20" width="12" height="60"/><rect class="failed" x="0" y="0" width="12" height="20"/>`,
		`<title>2026-03-02: 0 succeeded, 0 failed</title></g>`, `<rect class="ok" x="28" y="40" width="12" height="40"/>`} {
		if !strings.Contains(body, want) {
			t.Errorf("service page's DORA: no %q in\n%s", want, body)
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

// fixedRollbacks plans a rollback of checkout in prod only, by pipeline checkout_deploy.
type fixedRollbacks struct{ started *[]string }

func (f fixedRollbacks) PlanRollback(_ context.Context, flt ledger.Filter) (*starter.Rollback, error) {
	if flt.Service != "checkout" || flt.Environment != "prod" {
		return nil, fmt.Errorf("%w: service %s in environment %s has no earlier successful deployment to roll back to", starter.ErrCannotRollBack, flt.Service, flt.Environment)
	}
	return &starter.Rollback{Plan: &plan.Plan{Identifier: "checkout_deploy"}}, nil
}

func (f fixedRollbacks) StartRollback(_ context.Context, r *starter.Rollback, trig workflows.Trigger) (starter.Execution, error) {
	*f.started = append(*f.started, r.Plan.Identifier+" by "+trig.User)
	return starter.Execution{ID: "checkout_deploy-9"}, nil
}

// A service's page has a rollback button on each target whose deployment type can be rolled
// back; posting it starts the rollback as the signed-in user and sends the browser to the new
// execution, audited. A target that cannot be rolled back is refused with the reason, a user
// who may not run the pipeline is refused, and a form from another site is refused.
func TestServicesPageRollsBack(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	rec := func(env string) *contract.DeploymentRecord {
		return &contract.DeploymentRecord{Key: contract.DeploymentKey{Service: "checkout", Environment: env, Infra: env + "_k8s"}, Pipeline: "checkout_deploy",
			Execution: "checkout_deploy-7", Outcome: "succeeded", Ended: at, Artifact: &contract.LedgerArtifact{Version: "3.0"}}
	}
	lv := fixedLedger{targets: []contract.LedgerSummary{
		{Key: rec("prod").Key, DeploymentType: "Kubernetes", Current: rec("prod"), Last: rec("prod"), Total: 2},
		{Key: rec("qa").Key, DeploymentType: "AwsLambda", Current: rec("qa"), Last: rec("qa"), Total: 2},
	}}
	users := func(token string) (*identity.User, error) {
		switch token {
		case "ann":
			return &identity.User{Name: "ann"}, nil
		case "bob":
			return &identity.User{Name: "bob"}, nil
		}
		return nil, identity.ErrUnauthenticated
	}
	var started []string
	var audit []workflows.AuditRecord
	acc := &planAccessByUser{ok: "ann", audit: &audit}
	srv := httptest.NewServer(services(lv, users, acc, fixedRollbacks{&started}))
	defer srv.Close()
	_, _, body := getPage(t, srv.URL+ServicesPath+"/checkout", "ann")
	if !strings.Contains(body, `<form method="post" action="/gantry/services/checkout/rollback" class="rollback"><input type="hidden" name="env" value="prod"><input type="hidden" name="infra" value="prod_k8s">`) ||
		strings.Count(body, `class="rollback"`) != 1 {
		t.Errorf("want one rollback button, for the Kubernetes target:\n%s", body)
	}
	post := func(token, origin, env string) (int, string, string) {
		t.Helper()
		form := url.Values{"env": {env}, "infra": {env + "_k8s"}}
		req, _ := http.NewRequest("POST", srv.URL+ServicesPath+"/checkout/rollback", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+token)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	if code, loc, _ := post("ann", srv.URL, "prod"); code != http.StatusSeeOther || loc != ExecutionsPath+"/checkout_deploy-9" {
		t.Errorf("rollback: %d to %q", code, loc)
	}
	if code, _, body := post("ann", "", "qa"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "no earlier successful deployment") {
		t.Errorf("a target that cannot be rolled back: %d %s", code, body)
	}
	if code, _, _ := post("bob", "", "prod"); code != http.StatusForbidden {
		t.Errorf("a user who may not run the pipeline: %d", code)
	}
	if code, _, _ := post("ann", "https://evil.example", "prod"); code != http.StatusForbidden {
		t.Errorf("a form from another site: %d", code)
	}
	if len(started) != 1 || started[0] != "checkout_deploy by ann" {
		t.Errorf("started %q, want one rollback by ann", started)
	}
	var outcomes []string
	for _, r := range audit {
		outcomes = append(outcomes, r.User+":"+r.Outcome+":"+r.Execution)
	}
	if got := strings.Join(outcomes, " "); got != "ann:ok:checkout_deploy-9 ann:failed: bob:refused:" {
		t.Errorf("audit %s", got)
	}
}

// planAccessByUser lets one user view and run everything, and keeps the audit lines.
type planAccessByUser struct {
	Access
	ok    string
	audit *[]workflows.AuditRecord
}

func (a *planAccessByUser) AllowPipeline(u *identity.User, _ identity.Action, _ string) error {
	if u.Name == a.ok {
		return nil
	}
	return errors.New("forbidden: " + u.Name + " may not run pipeline checkout_deploy")
}

func (a *planAccessByUser) AllowPlan(u *identity.User, p *plan.Plan) error {
	return a.AllowPipeline(u, identity.Execute, p.Identifier)
}

func (a *planAccessByUser) Audit(_ context.Context, r workflows.AuditRecord) {
	*a.audit = append(*a.audit, r)
}
