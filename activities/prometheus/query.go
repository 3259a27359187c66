// Package prometheus reads a Prometheus health source's metrics for Verify steps: one range
// query per metric, its series grouped by the metric's instance label.
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Activity queries Prometheus servers.
type Activity struct {
	Secrets secrets.Resolver
	Client  *http.Client // nil uses http.DefaultClient's transport
}

// Query runs the range queries of a window. A server that cannot be reached, or answers with
// a server error, fails the call (the workflow retries it, then counts the minute as having no
// data); one that refuses a query answers it as Rejected; one that refuses the credentials
// fails it as an Authentication failure.
func (a *Activity) Query(ctx context.Context, in contract.MetricsRequest) (contract.MetricsAnswer, error) {
	mask := &secrets.Masker{}
	rt, err := a.transport(ctx, in.Source.Prometheus, mask)
	if err != nil {
		return contract.MetricsAnswer{}, err
	}
	c, err := api.NewClient(api.Config{Address: in.Source.Prometheus.URL, RoundTripper: rt})
	if err != nil {
		return contract.MetricsAnswer{}, contract.Fail(contract.Unknown, "Prometheus connector %s: %v", in.Source.Prometheus.ID, err)
	}
	prom := promv1.NewAPI(c)
	var out contract.MetricsAnswer
	for _, m := range in.Source.Metrics {
		if len(in.Metrics) > 0 && !slices.Contains(in.Metrics, m.ID) {
			continue
		}
		v, _, err := prom.QueryRange(ctx, m.Query, promv1.Range{Start: in.Start, End: in.End, Step: in.Step})
		var perr *promv1.Error
		switch {
		case errors.As(err, &perr) && (perr.Type == promv1.ErrBadData || perr.Type == promv1.ErrExec && strings.Contains(perr.Msg, "parse")):
			out.Metrics = append(out.Metrics, contract.MetricData{ID: m.ID, Rejected: mask.Apply(perr.Msg)})
			continue
		case errors.As(err, &perr) && perr.Type == promv1.ErrBadResponse && (strings.Contains(perr.Msg, "401") || strings.Contains(perr.Msg, "403")):
			return out, contract.Fail(contract.Authentication, "Prometheus %s refused the credentials of connector %s: %s", in.Source.Prometheus.URL, in.Source.Prometheus.ID, mask.Apply(err.Error()))
		case err != nil:
			return out, fmt.Errorf("query metric %s at Prometheus %s: %s", m.ID, in.Source.Prometheus.URL, mask.Apply(err.Error()))
		}
		out.Metrics = append(out.Metrics, contract.MetricData{ID: m.ID, Series: series(v, m.InstanceLabel)})
	}
	return out, nil
}

// series groups a matrix by the instance label; series of one instance (several label sets)
// are summed per timestamp, as one instance's total.
func series(v model.Value, label string) []contract.InstanceSeries {
	matrix, ok := v.(model.Matrix)
	if !ok {
		return nil
	}
	byInstance := map[string]map[int64]float64{}
	for _, s := range matrix {
		inst := ""
		if label != "" {
			inst = string(s.Metric[model.LabelName(label)])
		}
		pts := byInstance[inst]
		if pts == nil {
			pts = map[int64]float64{}
			byInstance[inst] = pts
		}
		for _, p := range s.Values {
			if f := float64(p.Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
				pts[p.Timestamp.Unix()] += f
			}
		}
	}
	var out []contract.InstanceSeries
	for _, inst := range slices.Sorted(maps.Keys(byInstance)) {
		pts := byInstance[inst]
		s := contract.InstanceSeries{Instance: inst}
		for _, t := range slices.Sorted(maps.Keys(pts)) {
			s.Points = append(s.Points, [2]float64{float64(t), pts[t]})
		}
		out = append(out, s)
	}
	return out
}

// transport adds the connector's basic auth and headers (secrets resolved here, masked in
// errors).
func (a *Activity) transport(ctx context.Context, c plan.PrometheusConnector, mask *secrets.Masker) (http.RoundTripper, error) {
	base := http.DefaultTransport
	if a.Client != nil && a.Client.Transport != nil {
		base = a.Client.Transport
	}
	t := &authTransport{base: base, headers: http.Header{}}
	for _, h := range c.Headers {
		t.headers.Set(h.Name, h.Value)
	}
	for _, h := range c.HeaderRefs {
		v, err := a.Secrets.Resolve(ctx, h.Value)
		if err != nil {
			return nil, contract.Fail(contract.Authentication, "Prometheus connector %s: header %s: %v", c.ID, h.Name, err)
		}
		mask.Add(v)
		t.headers.Set(h.Name, v)
	}
	if c.Username != "" {
		t.user = c.Username
		if c.PasswordRef != "" {
			v, err := a.Secrets.Resolve(ctx, c.PasswordRef)
			if err != nil {
				return nil, contract.Fail(contract.Authentication, "Prometheus connector %s: password: %v", c.ID, err)
			}
			mask.Add(v)
			t.password = v
		}
	}
	return t, nil
}

type authTransport struct {
	base           http.RoundTripper
	headers        http.Header
	user, password string
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	if t.user != "" {
		r.SetBasicAuth(t.user, t.password)
	}
	return t.base.RoundTrip(r)
}
