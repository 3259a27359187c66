package webui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"

	"github.com/gantry-cd/gantry/stepspec"
	"github.com/gantry-cd/gantry/workflows"
	"github.com/gantry-cd/gantry/workflows/verification"
)

// verificationPage serves a Verify step's page, ExecutionsPath/ID?verification=STEP: each
// metric's test and control values plotted over the window, with its verdict. People look at
// these rather than read them. A running step's page reloads every 15 seconds.
func verificationPage(w http.ResponseWriter, id string, tree *workflows.Node, path, user string) {
	n := tree.Find(path)
	if n == nil || n.Type != stepspec.Verify {
		http.Error(w, "execution "+id+" has no Verify step "+path, http.StatusNotFound)
		return
	}
	var out workflows.VerifyOutcome
	raw, _ := json.Marshal(n.Outputs)
	_ = json.Unmarshal(raw, &out)
	var charts []verifyChart
	for _, m := range out.Result.Metrics {
		charts = append(charts, chartOf(m))
	}
	failure := ""
	if n.Failure != nil {
		failure = string(n.Failure.Category) + ": " + n.Failure.Message
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = verificationTemplate.Execute(w, map[string]any{"Execution": id, "Step": path, "Status": n.Status, "User": user,
		"Running": !n.Status.Final(), "MinEffect": fmt.Sprintf("%.0f", 100*out.Sensitivity.MinEffect), "Outcome": out, "Charts": charts, "Failure": failure,
		"Back": ExecutionsPath + "/" + id})
}

// verifyChart is one metric drawn: its two series as SVG polylines on shared axes.
type verifyChart struct {
	verification.MetricResult
	TestPoints, ControlPoints string // SVG polyline points
	Width, Height             int
	YMax, XMax                string
}

const chartW, chartH = 560, 180

func chartOf(m verification.MetricResult) verifyChart {
	c := verifyChart{MetricResult: m, Width: chartW, Height: chartH}
	xMax, yMax := 60.0, 0.0
	for _, s := range [][][2]float64{m.TestSeries, m.ControlSeries} {
		for _, p := range s {
			xMax, yMax = math.Max(xMax, p[0]), math.Max(yMax, p[1])
		}
	}
	if yMax <= 0 {
		yMax = 1
	}
	yMax *= 1.1
	points := func(s [][2]float64) string {
		var b strings.Builder
		for _, p := range s {
			fmt.Fprintf(&b, "%.1f,%.1f ", p[0]/xMax*chartW, chartH-p[1]/yMax*chartH)
		}
		return strings.TrimSpace(b.String())
	}
	c.TestPoints, c.ControlPoints = points(m.TestSeries), points(m.ControlSeries)
	c.YMax, c.XMax = fmt.Sprintf("%.3g", yMax), fmt.Sprintf("%.0fs", xMax)
	return c
}

var verificationTemplate = template.Must(template.New("verification").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Verification {{.Step}} · {{.Execution}}</title>
{{if .Running}}<meta http-equiv="refresh" content="15">{{end}}
<style>body{font-family:sans-serif;margin:1em 2em;color:#222}.metric{margin:1.5em 0}.Passed{color:#17803d}.Failed{color:#b00}.NoData,.NoAnalysis{color:#8a6d00}
svg{border:1px solid #ccc;background:#fafafa}.test{stroke:#d9480f;fill:none;stroke-width:2}.control{stroke:#1c7ed6;fill:none;stroke-width:2;stroke-dasharray:5 3}
.legend span{margin-right:1.5em}.failure{border:1px solid #b00;background:#fee;padding:.6em}dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{color:#666}</style></head>
<body><p><a href="{{.Back}}">{{.Execution}}</a> · step <b>{{.Step}}</b> · {{.Status}} · signed in as {{.User}}</p>
<h1>Verification: <span id="verdict" class="{{.Outcome.Result.Verdict}}">{{if .Outcome.Result.Verdict}}{{.Outcome.Result.Verdict}}{{else}}starting{{end}}</span></h1>
<p id="reason">{{.Outcome.Result.Reason}}</p>
{{if .Failure}}<div class="failure">{{.Failure}}</div>{{end}}
<dl><dt>type</dt><dd>{{.Outcome.Type}}</dd><dt>monitored service</dt><dd>{{.Outcome.Monitored}}</dd>{{if .Outcome.DeploymentTag}}<dt>version</dt><dd>{{.Outcome.DeploymentTag}}</dd>{{end}}{{if .Outcome.Baseline}}<dt>baseline</dt><dd>the load test of {{.Outcome.Baseline}}</dd>{{end}}
<dt>sensitivity</dt><dd>{{.Outcome.Sensitivity.Name}} (α {{.Outcome.Sensitivity.Alpha}}, median change ≥ {{.MinEffect}}%)</dd>
<dt>minutes analysed</dt><dd>{{.Outcome.Analysed}} of {{.Outcome.Minutes}}</dd></dl>
{{range .Outcome.Notes}}<p class="note">{{.}}</p>{{end}}
<p class="legend"><span style="color:#d9480f">━ test (new instances)</span><span style="color:#1c7ed6">╍ control</span></p>
{{range .Charts}}<div class="metric" data-metric="{{.ID}}">
<h2>{{.Name}} <small>({{.Source}} · {{.ID}})</small> <span class="{{.Verdict}}">{{.Verdict}}</span></h2>
<p>{{.Reason}} · compared {{.Compared}} · median {{printf "%.4g" .Control.Median}} → {{printf "%.4g" .Test.Median}}{{if .ChangeText}} ({{.ChangeText}}){{end}} · p = {{printf "%.3g" .P}} · {{.Test.N}} test and {{.Control.N}} control values</p>
<svg width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Name}}: test and control over the window">
<polyline class="control" points="{{.ControlPoints}}"/><polyline class="test" points="{{.TestPoints}}"/>
<text x="4" y="12" font-size="11">{{.YMax}}</text><text x="{{.Width}}" y="{{.Height}}" dx="-30" dy="-4" font-size="11">{{.XMax}}</text></svg>
{{if .TestInstances}}<p><small>test: {{range .TestInstances}}{{.}} {{end}}· control: {{range .ControlInstances}}{{.}} {{end}}</small></p>{{end}}
</div>{{end}}
</body></html>`))
