package webui

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// ServicesPath lists the services the deployments ledger knows, each environment and
// infrastructure with the version it runs and its last deployment; ServicesPath/SERVICE is one
// service's page with its newest deployments. Signed-in users see the deployments of the
// pipelines they may view.
const ServicesPath = "/gantry/services"

// servicesHistory is how many of a service's newest deployments its page shows.
const servicesHistory = 50

// targetRow is one target (service, environment, infrastructure) as the pages show it.
type targetRow struct {
	Service, ServiceName, Environment, EnvType, Infra string
	Version, Deployed                                 string
	Last                                              *deploymentRow
	// Instances says the last instance reading (ledger.InstancesText); Drift and ReadFailed
	// mark it.
	Instances         string
	Drift, ReadFailed bool
	// CanRollBack says the target's last success may be rolled back (its deployment type).
	CanRollBack bool
}

// deploymentRow is one deployment as the pages show it.
type deploymentRow struct {
	contract.DeploymentRecord
	Version, By, Ended string
}

// doraDays is the window of a service page's DORA figures and chart.
const doraDays = 30

// doraView is the DORA figures as the service's page shows them, with a bar per day.
type doraView struct {
	Frequency, Lead, Failure, Restore string
	Deployments, Failed               int
	Bars                              []doraBar
	Width, Height                     int
}

// doraBar is one day's bar: its successes below its failures, heights in pixels.
type doraBar struct {
	Day                       string
	Succeeded, Failed         int
	X, OkY, OkH, FailY, FailH int
}

const doraBarWidth, doraChartHeight = 14, 80

func doraOf(d ledger.DORA) doraView {
	v := doraView{Frequency: fmt.Sprintf("%.2f per day", d.FrequencyPerDay), Lead: "-", Failure: "-", Restore: "-",
		Deployments: d.Deployments, Failed: d.Failed, Height: doraChartHeight, Width: len(d.Daily) * doraBarWidth}
	mean := func(s *float64) string { return (time.Duration(*s) * time.Second).Round(time.Second).String() }
	if d.LeadTimeSeconds != nil {
		v.Lead = mean(d.LeadTimeSeconds)
	}
	if d.RestoreSeconds != nil {
		v.Restore = mean(d.RestoreSeconds)
	}
	if d.ChangeFailureRate != nil {
		v.Failure = fmt.Sprintf("%.1f%%", *d.ChangeFailureRate*100)
	}
	most := 1
	for _, day := range d.Daily {
		most = max(most, day.Succeeded+day.Failed)
	}
	for i, day := range d.Daily {
		b := doraBar{Day: day.Day, Succeeded: day.Succeeded, Failed: day.Failed, X: i * doraBarWidth,
			OkH: day.Succeeded * doraChartHeight / most, FailH: day.Failed * doraChartHeight / most}
		b.OkY = doraChartHeight - b.OkH
		b.FailY = b.OkY - b.FailH
		v.Bars = append(v.Bars, b)
	}
	return v
}

// instancesRow is one target's last instance reading as the service's page shows it.
type instancesRow struct {
	contract.InstanceSnapshot
	Text, Synced, Tried string
	More                int // instances counted but not listed
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func deploymentOf(d *contract.DeploymentRecord) *deploymentRow {
	if d == nil {
		return nil
	}
	r := &deploymentRow{DeploymentRecord: *d, Version: "-", By: strings.ToLower(d.Trigger), Ended: d.Ended.UTC().Format("2006-01-02 15:04:05")}
	if d.Artifact != nil && d.Artifact.Version != "" {
		r.Version = d.Artifact.Version
	}
	if d.StartedBy != "" {
		r.By = d.StartedBy
	}
	return r
}

func targetOf(t contract.LedgerSummary) targetRow {
	r := targetRow{Service: t.Key.Service, ServiceName: t.ServiceName, Environment: t.Key.Environment, EnvType: t.EnvironmentType,
		Infra: t.Key.Infra, Version: "-", Deployed: "-", Last: deploymentOf(t.Last)}
	if c := deploymentOf(t.Current); c != nil {
		r.Version, r.Deployed = c.Version, c.Ended
	}
	r.CanRollBack = t.Current != nil && starter.CanRollBack(t.DeploymentType)
	r.Instances = ledger.InstancesText(t.Instances)
	if i := t.Instances; i != nil {
		r.Drift, r.ReadFailed = len(i.Drift) > 0, i.Error != ""
	}
	return r
}

// Rollbacks starts post-deployment rollbacks (the starter).
type Rollbacks interface {
	PlanRollback(ctx context.Context, f ledger.Filter) (*starter.Rollback, error)
	StartRollback(ctx context.Context, r *starter.Rollback, trig workflows.Trigger) (starter.Execution, error)
}

// rollbackSuffix ends the path a service page's rollback buttons post to.
const rollbackSuffix = "/rollback"

// services serves the services list and one service's page, and the rollbacks its buttons
// post.
func services(lv ledger.View, userOf func(string) (*identity.User, error), acc Access, rbs Rollbacks) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && rbs != nil && strings.HasSuffix(r.URL.Path, rollbackSuffix) {
			rollback(w, r, rbs, userOf, acc)
			return
		}
		user := pageUser(w, r, userOf)
		if user == nil {
			return
		}
		// A target or deployment shows to those who may view the pipeline that deployed it.
		viewable := func(ds ...*contract.DeploymentRecord) bool {
			for _, d := range ds {
				if d != nil && (acc == nil || acc.AllowPipeline(user, identity.View, d.Pipeline) == nil) {
					return true
				}
			}
			return false
		}
		service, _ := url.PathUnescape(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, ServicesPath), "/"))
		f := ledger.Filter{Service: service, Environment: r.URL.Query().Get("env")}
		targets, err := lv.Targets(r.Context(), f)
		if err != nil {
			http.Error(w, "read the deployments ledger: "+err.Error(), http.StatusBadGateway)
			return
		}
		var rows []targetRow
		for _, t := range targets {
			if viewable(t.Last, t.Current) {
				rows = append(rows, targetOf(t))
			}
		}
		data := map[string]any{"User": user.Name, "Path": ServicesPath, "Executions": ExecutionsPath, "Targets": rows, "Filter": f, "Rollbacks": rbs != nil}
		page := servicesPage
		if service != "" {
			if len(rows) == 0 {
				http.Error(w, "service "+service+" has no deployment recorded that you may view", http.StatusNotFound)
				return
			}
			deps, err := lv.Deployments(r.Context(), f, servicesHistory)
			if err != nil {
				http.Error(w, "read the deployments ledger: "+err.Error(), http.StatusBadGateway)
				return
			}
			var history []*deploymentRow
			for i := range deps {
				if viewable(&deps[i]) {
					history = append(history, deploymentOf(&deps[i]))
				}
			}
			read, err := lv.Instances(r.Context(), f)
			if err != nil {
				http.Error(w, "read the services' instances: "+err.Error(), http.StatusBadGateway)
				return
			}
			shown := map[contract.DeploymentKey]bool{}
			for _, t := range targets {
				shown[t.Key] = viewable(t.Last, t.Current)
			}
			var instances []instancesRow
			for _, s := range read {
				if shown[s.Key] {
					instances = append(instances, instancesRow{InstanceSnapshot: s, Text: ledger.InstancesText(&s),
						Synced: stamp(s.SyncedAt), Tried: stamp(s.TriedAt), More: s.Count - len(s.Instances)})
				}
			}
			to := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
			d, err := lv.DORA(r.Context(), ledger.Filter{Service: service, EnvironmentType: "Production"}, to.AddDate(0, 0, -doraDays), to)
			if err != nil {
				http.Error(w, "read the DORA figures: "+err.Error(), http.StatusBadGateway)
				return
			}
			data["Service"], data["History"], data["Instances"], data["DORA"], page = service, history, instances, doraOf(d), servicePage
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = page.Execute(w, data)
	})
}

// rollback starts a post-deployment rollback as the signed-in user, who needs execute on the
// deploying pipeline and the environment, and sends the browser to the new execution's page.
func rollback(w http.ResponseWriter, r *http.Request, rbs Rollbacks, userOf func(string) (*identity.User, error), acc Access) {
	// Only the service's page may start one: no form posted from another site.
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "a rollback from another origin", http.StatusForbidden)
			return
		}
	}
	user := signedIn(r, userOf)
	if user == nil {
		http.Error(w, "sign in to roll back", http.StatusUnauthorized)
		return
	}
	service, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, ServicesPath+"/"), rollbackSuffix))
	f := ledger.Filter{Service: service, Environment: r.PostFormValue("env"), Infra: r.PostFormValue("infra")}
	rec := workflows.AuditRecord{User: user.Name, Action: "rollback", Outcome: "ok",
		Detail: "of service " + f.Service + " in environment " + f.Environment + ", infrastructure " + f.Infra}
	var code int // the answer when the rollback does not start
	var exec starter.Execution
	rb, err := rbs.PlanRollback(r.Context(), f)
	switch {
	case errors.Is(err, starter.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, starter.ErrCannotRollBack):
		code = http.StatusUnprocessableEntity
	case err != nil:
		code = http.StatusBadGateway
	default:
		rec.Pipeline = rb.Plan.Identifier
		if acc != nil {
			err = acc.AllowPlan(user, rb.Plan)
		}
		if err != nil {
			code, rec.Outcome = http.StatusForbidden, "refused"
		} else if exec, err = rbs.StartRollback(r.Context(), rb, workflows.Trigger{Type: "MANUAL", User: user.Name}); err != nil {
			code = http.StatusBadGateway
		}
	}
	if err != nil && rec.Outcome == "ok" {
		rec.Outcome = "failed"
	}
	if err != nil {
		rec.Detail += "; " + err.Error()
	}
	rec.Execution = exec.ID
	if acc != nil {
		acc.Audit(r.Context(), rec)
	}
	if err != nil {
		http.Error(w, "the rollback did not start: "+err.Error(), code)
		return
	}
	http.Redirect(w, r, ExecutionsPath+"/"+url.PathEscape(exec.ID), http.StatusSeeOther)
}

const servicesStyle = `<meta name="color-scheme" content="light dark"><style>
body{font-family:sans-serif;margin:1em 2em}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #8884}
th{font-weight:600}a:focus{outline:2px solid #36f;outline-offset:1px}
.drift,.read-failed{color:#a60;font-weight:600}rect.ok{fill:#4a4}rect.failed{fill:#c33}#dora-chart{border-bottom:1px solid #8888}.o-succeeded{color:#070}.o-failed,.o-rolledBack,.o-blocked{color:#b00}.o-aborted{color:#a60}
@media (prefers-color-scheme: dark){.o-succeeded{color:#6d6}.o-failed,.o-rolledBack,.o-blocked{color:#f77}a{color:#8af}}
</style>`

// targetsTable is the table of targets both pages show.
const targetsTable = `{{define "targets"}}<table id="targets"><thead><tr><th>Service</th><th>Environment</th><th>Infrastructure</th><th>Version</th><th>Instances</th><th>Deployed (UTC)</th><th>Last deployment</th><th>By</th><th>Execution</th>{{if .Service}}{{if .Rollbacks}}<th>Rollback</th>{{end}}{{end}}</tr></thead><tbody>
{{range .Targets}}<tr class="target" data-service="{{.Service}}" data-env="{{.Environment}}" data-infra="{{.Infra}}">
<td><a href="{{$.Path}}/{{.Service}}">{{.Service}}</a></td><td>{{.Environment}}{{if .EnvType}} <small>({{.EnvType}})</small>{{end}}</td><td>{{.Infra}}</td>
<td class="version">{{.Version}}</td><td class="instances{{if .Drift}} drift{{end}}{{if .ReadFailed}} read-failed{{end}}">{{.Instances}}</td><td>{{.Deployed}}</td>
{{with .Last}}<td class="last o-{{.Outcome}}">{{.Outcome}} {{.Ended}}</td><td>{{.By}}</td><td><a href="{{$.Executions}}/{{.Execution}}">{{.Execution}}</a></td>{{else}}<td>-</td><td>-</td><td>-</td>{{end}}
{{if $.Service}}{{if $.Rollbacks}}<td>{{if .CanRollBack}}<form method="post" action="{{$.Path}}/{{.Service}}/rollback" class="rollback"><input type="hidden" name="env" value="{{.Environment}}"><input type="hidden" name="infra" value="{{.Infra}}"><button type="submit" title="run the rollback steps of the stage that deployed {{.Version}}, restoring the deployment before it">Roll back {{.Version}}</button></form>{{end}}</td>{{end}}{{end}}</tr>
{{end}}</tbody></table>{{end}}`

var servicesPage = template.Must(template.Must(template.New("services").Parse(targetsTable)).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Services · Gantry</title>` + servicesStyle + `</head>
<body><p><b>Services</b> · what runs where, as Gantry deployed it · signed in as {{.User}} · <a href="{{.Executions}}">executions</a></p>
{{if .Targets}}{{template "targets" .}}{{else}}<p id="none">No deployment is recorded{{if .Filter.Environment}} in environment {{.Filter.Environment}}{{end}} yet: every Deployment stage that ends records one.</p>{{end}}
</body></html>`))

var servicePage = template.Must(template.Must(template.New("service").Parse(targetsTable)).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Service}} · Services · Gantry</title>` + servicesStyle + `</head>
<body><p><a href="{{.Path}}">Services</a> › <b>{{.Service}}</b> · signed in as {{.User}}</p>
<h2>Where it runs</h2>
{{template "targets" .}}
{{if .Instances}}<h2>Instances</h2>
{{range .Instances}}<section class="instances" data-env="{{.Key.Environment}}" data-infra="{{.Key.Infra}}"><h3>{{.Key.Environment}} / {{.Key.Infra}}: {{.Text}}</h3>
<p>Read {{.Synced}} UTC{{if .Error}} · <span class="read-failed">the read at {{.Tried}} UTC failed: {{.Error}}</span>{{end}}</p>
{{range .Drift}}<p class="drift">Drift: {{.}}</p>{{end}}
{{if .Instances}}<table><thead><tr><th>Instance</th><th>Artifact</th><th title="a pod's node, a task's or instance's zone, a Lambda version's share of the traffic">Where</th><th>Ready</th></tr></thead><tbody>
{{range .Instances}}<tr class="instance"><td>{{.Name}}</td><td><code>{{.Artifact}}</code></td><td>{{or .Node "-"}}</td><td>{{if .Ready}}yes{{else}}no{{end}}</td></tr>
{{end}}</tbody></table>{{if .More}}<p>and {{.More}} more</p>{{end}}{{end}}</section>
{{end}}{{end}}
{{with .DORA}}<h2>DORA, production, the last 30 days</h2>
<p id="dora">{{.Deployments}} deployments, {{.Failed}} failed · deployment frequency <b>{{.Frequency}}</b> · lead time for changes <b>{{.Lead}}</b> · change failure rate <b>{{.Failure}}</b> · time to restore <b>{{.Restore}}</b></p>
<svg id="dora-chart" role="img" aria-label="production deployments per day, succeeded and failed" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Bars}}<g class="day"><title>{{.Day}}: {{.Succeeded}} succeeded, {{.Failed}} failed</title>{{if .OkH}}<rect class="ok" x="{{.X}}" y="{{.OkY}}" width="12" height="{{.OkH}}"/>{{end}}{{if .FailH}}<rect class="failed" x="{{.X}}" y="{{.FailY}}" width="12" height="{{.FailH}}"/>{{end}}</g>
{{end}}</svg>{{end}}
<h2>Deployments, newest first</h2>
<table id="history"><thead><tr><th>Ended (UTC)</th><th>Outcome</th><th>Version</th><th>Environment</th><th>Infrastructure</th><th>By</th><th>Execution</th><th>Stage</th><th>Commit</th></tr></thead><tbody>
{{range .History}}<tr class="deployment" data-execution="{{.Execution}}"><td>{{.Ended}}</td><td class="o-{{.Outcome}}">{{.Outcome}}</td><td>{{.Version}}</td>
<td>{{.Key.Environment}}</td><td>{{.Key.Infra}}</td><td>{{.By}}</td><td><a href="{{$.Executions}}/{{.Execution}}">{{.Execution}}</a></td><td>{{.Stage}}</td><td>{{if .Commit}}<code>{{printf "%.12s" .Commit}}</code>{{else}}-{{end}}</td></tr>
{{end}}</tbody></table>
</body></html>`))
