package k8s

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// K8sTrafficRouting writes the service mesh's routing for the release: an Istio VirtualService,
// or an SMI TrafficSplit (with an HTTPRouteGroup for its rules). `type: config` creates or
// replaces the resources; `type: inherit` changes the destinations and weights of the ones the
// release already has. The mesh's resource kinds must be served by the cluster: without them
// the step fails naming the mesh, since nothing would route by the resource.

// trafficRoute and trafficRule are the spec's routes and their rules.
type (
	trafficRoute = stepspec.TrafficRoute
	trafficRule  = stepspec.TrafficRule
)

// destination is one weighted backend, its host resolved.
type destination struct {
	host   string
	port   int64
	weight int64
}

// meshKinds are the mesh resources, in the API versions tried, newest first.
var meshKinds = map[string]struct {
	group, resource, kind string
	versions              []string
	what                  string
}{
	"istio":          {"networking.istio.io", "virtualservices", "VirtualService", []string{"v1", "v1beta1", "v1alpha3"}, "Istio (VirtualService, networking.istio.io)"},
	"smi":            {"split.smi-spec.io", "trafficsplits", "TrafficSplit", []string{"v1alpha4", "v1alpha3"}, "an SMI mesh (TrafficSplit, split.smi-spec.io v1alpha3 or v1alpha4)"},
	"smi-routegroup": {"specs.smi-spec.io", "httproutegroups", "HTTPRouteGroup", []string{"v1alpha4", "v1alpha3"}, "an SMI mesh (HTTPRouteGroup, specs.smi-spec.io v1alpha3 or v1alpha4)"},
}

// meshResource finds the version of a mesh kind the cluster serves.
func (s *stepRun) meshResource(kind string) (schema.GroupVersionResource, error) {
	k := meshKinds[kind]
	for _, v := range k.versions {
		list, err := s.c.disc.ServerResourcesForGroupVersion(k.group + "/" + v)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == k.resource {
				return schema.GroupVersionResource{Group: k.group, Version: v, Resource: k.resource}, nil
			}
		}
	}
	return schema.GroupVersionResource{}, contract.Fail(contract.Verification,
		"K8sTrafficRouting: the cluster has no %s; install the mesh, or route traffic with the Services the deploy steps manage", k.what)
}

func (s *stepRun) trafficRouting(sp stepspec.K8sTrafficRoutingSpec) (map[string]any, error) {
	if sp.TrafficRouting == nil {
		return nil, contract.Fail(contract.Unknown, "K8sTrafficRouting needs trafficRouting")
	}
	if sp.Type == "inherit" {
		return s.inheritTraffic(sp.TrafficRouting.Routes)
	}
	return s.configTraffic(sp.TrafficRouting)
}

// configTraffic writes the mesh resources of a new config (`type: config`, or the
// trafficRouting of K8sBlueGreenDeploy).
func (s *stepRun) configTraffic(tr *stepspec.TrafficRoutingConfig) (map[string]any, error) {
	provider := tr.Provider
	if _, ok := meshKinds[provider]; !ok || provider == "smi-routegroup" {
		return nil, contract.Fail(contract.Unknown, "K8sTrafficRouting provider %q is not smi or istio", provider)
	}
	spec := tr.Spec
	if spec.Name == "" {
		return nil, contract.Fail(contract.Unknown, "K8sTrafficRouting needs trafficRouting.spec.name, the mesh resource's name")
	}
	if len(spec.Routes) == 0 {
		return nil, contract.Fail(contract.Unknown, "K8sTrafficRouting needs at least one route in trafficRouting.spec.routes")
	}
	gvr, err := s.meshResource(provider)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	if provider == "istio" {
		vs, err := s.virtualService(gvr, spec.Name, spec.Hosts, spec.Gateways, spec.Routes)
		if err != nil {
			return nil, err
		}
		objs = append(objs, vs)
	} else {
		if objs, err = s.trafficSplit(gvr, spec.Name, spec.RootService, spec.Routes); err != nil {
			return nil, err
		}
	}
	var names []any
	for _, o := range objs {
		if err := s.applyMesh(o); err != nil {
			return nil, err
		}
		names = append(names, o.GetKind()+"/"+o.GetName())
		s.logf("applied %s/%s", o.GetKind(), o.GetName())
	}
	return map[string]any{"provider": provider, "resources": names}, nil
}

// applyMesh server-side applies a mesh resource in the step's namespace, labelled with the
// release so that `type: inherit` finds it.
func (s *stepRun) applyMesh(o *unstructured.Unstructured) error {
	o.SetNamespace(s.in.Namespace)
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelRelease] = s.in.ReleaseName
	o.SetLabels(labels)
	gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
	gvr := schema.GroupVersionResource{Group: gv.Group, Version: gv.Version}
	for _, k := range meshKinds {
		if k.kind == o.GetKind() {
			gvr.Resource = k.resource
		}
	}
	body, _ := json.Marshal(o.Object)
	force := true
	_, err := s.c.dyn.Resource(gvr).Namespace(s.in.Namespace).Patch(s.ctx, o.GetName(), types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return classify(s.ctx, shortInvalid(err), "apply %s/%s", o.GetKind(), o.GetName())
	}
	return nil
}

// destinations resolves a route's hosts (the placeholders stable, stage and canary name the
// Services of the release's blue-green or canary deployment) and normalises its weights to
// percentages, as the reference does, with a warning in the log.
func (s *stepRun) destinations(r trafficRoute) ([]destination, error) {
	var out []destination
	var total int64
	for _, d := range r.Route.Destinations {
		host, err := s.placeholderHost(d.Destination.Host)
		if err != nil {
			return nil, err
		}
		w, err := number(d.Destination.Weight, "weight")
		if err != nil {
			return nil, err
		}
		p, err := number(d.Destination.Port, "port")
		if err != nil {
			return nil, err
		}
		total += w
		out = append(out, destination{host: host, port: p, weight: w})
	}
	if len(out) == 0 {
		return nil, contract.Fail(contract.Unknown, "route %s has no destinations", r.Route.Name)
	}
	if total != 100 && total > 0 {
		s.logf("warning: the weights of route %s add up to %d, not 100: normalised to percentages", r.Route.Name, total)
		var sum int64
		for i := range out {
			out[i].weight = int64(math.Round(float64(out[i].weight) * 100 / float64(total)))
			sum += out[i].weight
		}
		out[len(out)-1].weight += 100 - sum
	}
	return out, nil
}

// placeholderHost resolves the reference's host placeholders against the release's manifests.
func (s *stepRun) placeholderHost(host string) (string, error) {
	switch host {
	case "stable", "stage":
		objs, err := s.render(renderOptions{revision: 0})
		if err != nil {
			return "", err
		}
		primary, stage, err := bgServices(objs)
		if err != nil {
			return "", err
		}
		if host == "stable" {
			return primary.GetName(), nil
		}
		return stage.GetName(), nil
	case "canary":
		return "", contract.Fail(contract.Unknown, "destination host `canary`: Gantry's canary shares the release's Service and has none of its own to route to; name a Service")
	}
	return host, nil
}

func number(v stepspec.Text, what string) (int64, error) {
	x := strings.TrimSpace(string(v))
	if x == "" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(x, 64)
	if err != nil {
		return 0, contract.Fail(contract.Unknown, "destination %s %q is not a whole number", what, x)
	}
	return int64(n), nil
}

// istioMatch turns the reference's rules into one Istio HTTPMatchRequest.
func istioMatch(rules []trafficRule) (map[string]any, error) {
	m := map[string]any{}
	str := func(r trafficRule) map[string]any {
		t := r.Spec.MatchType
		if t == "" {
			t = "exact"
		}
		return map[string]any{t: string(r.Spec.Value)}
	}
	for _, r := range rules {
		switch r.Type {
		case "uri", "scheme", "authority", "method":
			m[r.Type] = str(r)
		case "port":
			p, err := number(r.Spec.Value, "port")
			if err != nil {
				return nil, err
			}
			m["port"] = p
		case "headers":
			h := map[string]any{}
			for _, v := range r.Spec.Values {
				t := v.MatchType
				if t == "" {
					t = "exact"
				}
				h[v.Key] = map[string]any{t: v.Value}
			}
			m["headers"] = h
		default:
			return nil, contract.Fail(contract.Unknown, "route rule type %q is not uri, method, headers, port, scheme or authority", r.Type)
		}
	}
	return m, nil
}

// istioRoute is a route's weighted destinations as an Istio HTTP route lists them.
func (s *stepRun) istioRoute(r trafficRoute) ([]any, error) {
	ds, err := s.destinations(r)
	if err != nil {
		return nil, err
	}
	var dest []any
	for _, d := range ds {
		to := map[string]any{"host": d.host}
		if d.port > 0 {
			to["port"] = map[string]any{"number": d.port}
		}
		dest = append(dest, map[string]any{"destination": to, "weight": d.weight})
	}
	return dest, nil
}

func (s *stepRun) virtualService(gvr schema.GroupVersionResource, name string, hosts, gateways []string, routes []trafficRoute) (*unstructured.Unstructured, error) {
	var http []any
	for _, r := range routes {
		dest, err := s.istioRoute(r)
		if err != nil {
			return nil, err
		}
		h := map[string]any{"route": dest}
		if r.Route.Name != "" {
			h["name"] = r.Route.Name
		}
		var rules []trafficRule
		for _, x := range r.Route.Rules {
			rules = append(rules, x.Rule)
		}
		if len(rules) > 0 {
			m, err := istioMatch(rules)
			if err != nil {
				return nil, err
			}
			h["match"] = []any{m}
		}
		http = append(http, h)
	}
	if len(hosts) == 0 {
		// The first route's first destination is the Service the routing is for.
		ds, err := s.destinations(routes[0])
		if err != nil {
			return nil, err
		}
		hosts = []string{ds[0].host}
	}
	spec := map[string]any{"hosts": toAny(hosts), "http": http}
	if len(gateways) > 0 {
		spec["gateways"] = toAny(gateways)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "VirtualService",
		"metadata": map[string]any{"name": name}, "spec": spec}}, nil
}

func toAny(l []string) []any {
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = v
	}
	return out
}

// smiPath turns a uri rule into the path regex an HTTPRouteGroup matches.
func smiPath(r trafficRule) string {
	v := string(r.Spec.Value)
	switch r.Spec.MatchType {
	case "regex":
		return v
	case "prefix":
		return "^" + regexp.QuoteMeta(v) + ".*"
	}
	return "^" + regexp.QuoteMeta(v) + "$"
}

// trafficSplit builds an SMI TrafficSplit over the first route's destinations, and an
// HTTPRouteGroup for the routes' rules.
func (s *stepRun) trafficSplit(gvr schema.GroupVersionResource, name, root string, routes []trafficRoute) ([]*unstructured.Unstructured, error) {
	ds, err := s.destinations(routes[0])
	if err != nil {
		return nil, err
	}
	if root, err = s.placeholderHost(root); err != nil {
		return nil, err
	}
	if root == "" {
		return nil, contract.Fail(contract.Unknown, "the smi provider needs trafficRouting.spec.rootService, the Service clients call")
	}
	var backends []any
	for _, d := range ds {
		backends = append(backends, map[string]any{"service": d.host, "weight": d.weight})
	}
	spec := map[string]any{"service": root, "backends": backends}
	var matches []any
	for i, r := range routes {
		if len(r.Route.Rules) == 0 {
			continue
		}
		m := map[string]any{"name": fmt.Sprintf("%s-%d", name, i)}
		for _, x := range r.Route.Rules {
			switch x.Rule.Type {
			case "uri":
				m["pathRegex"] = smiPath(x.Rule)
			case "method":
				m["methods"] = []any{string(x.Rule.Spec.Value)}
			case "headers":
				h := map[string]any{}
				for _, v := range x.Rule.Spec.Values {
					h[v.Key] = v.Value
				}
				m["headers"] = h
			default:
				return nil, contract.Fail(contract.Unknown, "the smi provider matches uri, method and headers rules, not %s (Istio matches it)", x.Rule.Type)
			}
		}
		matches = append(matches, m)
	}
	out := []*unstructured.Unstructured{}
	if len(matches) > 0 {
		rg, err := s.meshResource("smi-routegroup")
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": rg.GroupVersion().String(), "kind": "HTTPRouteGroup",
			"metadata": map[string]any{"name": name + "-routes"}, "spec": map[string]any{"matches": matches}}})
		spec["matches"] = []any{map[string]any{"kind": "HTTPRouteGroup", "name": name + "-routes"}}
	}
	out = append(out, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "TrafficSplit",
		"metadata": map[string]any{"name": name}, "spec": spec}})
	return out, nil
}

// inheritTraffic changes the weights of the release's mesh routing (the newest VirtualService
// or TrafficSplit labelled with the release): route i takes the destinations of routes[i].
func (s *stepRun) inheritTraffic(routes []trafficRoute) (map[string]any, error) {
	if len(routes) == 0 {
		return nil, contract.Fail(contract.Unknown, "K8sTrafficRouting (inherit) needs at least one route in trafficRouting.routes")
	}
	sel := LabelRelease + "=" + s.in.ReleaseName
	for _, provider := range []string{"istio", "smi"} {
		gvr, err := s.meshResource(provider)
		if err != nil {
			continue
		}
		list, err := s.c.dyn.Resource(gvr).Namespace(s.in.Namespace).List(s.ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, classify(s.ctx, err, "list %s resources", provider)
		}
		if len(list.Items) == 0 {
			continue
		}
		items := list.Items
		sort.Slice(items, func(i, j int) bool {
			return items[i].GetCreationTimestamp().After(items[j].GetCreationTimestamp().Time)
		})
		o := &items[0]
		if provider == "istio" {
			http, _, _ := unstructured.NestedSlice(o.Object, "spec", "http")
			for i, r := range routes {
				if i >= len(http) {
					return nil, contract.Fail(contract.Unknown, "VirtualService %s has %d routes; route %d has nothing to inherit", o.GetName(), len(http), i+1)
				}
				dest, err := s.istioRoute(r)
				if err != nil {
					return nil, err
				}
				http[i].(map[string]any)["route"] = dest
			}
			_ = unstructured.SetNestedSlice(o.Object, http, "spec", "http")
		} else {
			ds, err := s.destinations(routes[0])
			if err != nil {
				return nil, err
			}
			var backends []any
			for _, d := range ds {
				backends = append(backends, map[string]any{"service": d.host, "weight": d.weight})
			}
			_ = unstructured.SetNestedSlice(o.Object, backends, "spec", "backends")
		}
		if _, err := s.c.dyn.Resource(gvr).Namespace(s.in.Namespace).Update(s.ctx, o, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return nil, classify(s.ctx, shortInvalid(err), "update %s/%s", o.GetKind(), o.GetName())
		}
		s.logf("updated the routes of %s/%s", o.GetKind(), o.GetName())
		return map[string]any{"provider": provider, "resources": []any{o.GetKind() + "/" + o.GetName()}}, nil
	}
	return nil, contract.Fail(contract.Verification, "K8sTrafficRouting (inherit): release %s has no VirtualService or TrafficSplit in namespace %s to inherit; a K8sTrafficRouting step with type: config creates one", s.in.ReleaseName, s.in.Namespace)
}
