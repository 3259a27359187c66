package k8s_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gantry-cd/gantry/contract"
)

// installCRD serves a namespaced kind with any fields, as a mesh's CRDs make the API server
// serve its resources, and waits until it is established.
func installCRD(t *testing.T, dyn dynamic.Interface, group, version, kind, plural string) {
	t.Helper()
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}
	if _, err := crds.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s not served: %v", plural, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// K8sTrafficRouting writes an Istio VirtualService (rules as HTTP matches, the placeholders
// stable and stage as the blue-green Services, weights normalised) or an SMI TrafficSplit with
// its HTTPRouteGroup; inherit changes the weights of the release's one; K8sBlueGreenDeploy's
// trafficRouting writes one after the deploy; a cluster without the mesh fails the step naming
// it.
func TestTrafficRouting(t *testing.T) {
	h := newHarness(t, "traffic")
	h.ok("K8sBlueGreenDeploy", `{}`, app("1.27", 1))
	istio := `{"type": "config", "trafficRouting": {"provider": "istio", "spec": {"name": "web", "hosts": ["web.example.com"], "gateways": ["public"],
		"routes": [{"route": {"type": "http", "name": "main", "rules": [{"rule": {"type": "uri", "spec": {"matchType": "prefix", "value": "/api"}}},
			{"rule": {"type": "headers", "spec": {"values": [{"key": "x-canary", "value": "1", "matchType": "exact"}]}}}],
			"destinations": [{"destination": {"host": "stable", "weight": 3}}, {"destination": {"host": "stage", "weight": 1, "port": 80}}]}}]}}}`
	_, f := h.run("K8sTrafficRouting", istio, app("1.27", 1), false, time.Minute)
	if f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, "the cluster has no Istio") {
		t.Fatalf("without Istio: %+v", f)
	}
	for _, spec := range []string{`{"type": "config", "trafficRouting": {"provider": "istio", "spec": {"name": "x", "routes": []}}}`, `{"type": "inherit", "trafficRouting": {"routes": []}}`} {
		if _, f := h.run("K8sTrafficRouting", spec, app("1.27", 1), false, time.Minute); f == nil || !strings.Contains(f.Message, "at least one route") {
			t.Errorf("no routes (%s): %+v", spec, f)
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	installCRD(t, dyn, "networking.istio.io", "v1beta1", "VirtualService", "virtualservices")
	installCRD(t, dyn, "split.smi-spec.io", "v1alpha3", "TrafficSplit", "trafficsplits")
	installCRD(t, dyn, "specs.smi-spec.io", "v1alpha3", "HTTPRouteGroup", "httproutegroups")

	h.ok("K8sTrafficRouting", istio, app("1.27", 1))
	vsGVR := schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "virtualservices"}
	get := func(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
		t.Helper()
		o, err := dyn.Resource(gvr).Namespace(h.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	vs := get(vsGVR, "web")
	http, _, _ := unstructured.NestedSlice(vs.Object, "spec", "http")
	got := fmt.Sprint(http)
	for _, want := range []string{"uri:map[prefix:/api]", "x-canary:map[exact:1]", "host:app] weight:75", "host:app-stage port:map[number:80]] weight:25", "name:main"} {
		if !strings.Contains(got, want) {
			t.Errorf("VirtualService http %s lacks %s", got, want)
		}
	}
	if gw, _, _ := unstructured.NestedStringSlice(vs.Object, "spec", "gateways"); fmt.Sprint(gw) != "[public]" {
		t.Errorf("gateways %v", gw)
	}

	inherit := `{"type": "inherit", "trafficRouting": {"routes": [{"route": {"name": "main", "destinations": [{"destination": {"host": "stable", "weight": 0}}, {"destination": {"host": "stage", "weight": 100}}]}}]}}`
	h.ok("K8sTrafficRouting", inherit, app("1.27", 1))
	http, _, _ = unstructured.NestedSlice(get(vsGVR, "web").Object, "spec", "http")
	if got := fmt.Sprint(http); !strings.Contains(got, "host:app] weight:0") || !strings.Contains(got, "host:app-stage] weight:100") || !strings.Contains(got, "uri:map[prefix:/api]") {
		t.Errorf("after inherit: %s", got)
	}

	smi := `{"type": "config", "trafficRouting": {"provider": "smi", "spec": {"name": "split", "rootService": "app",
		"routes": [{"route": {"type": "http", "name": "r", "rules": [{"rule": {"type": "method", "spec": {"value": "GET"}}}],
			"destinations": [{"destination": {"host": "app-v1", "weight": 90}}, {"destination": {"host": "app-v2", "weight": 10}}]}}]}}}`
	h.ok("K8sTrafficRouting", smi, app("1.27", 1))
	ts := get(schema.GroupVersionResource{Group: "split.smi-spec.io", Version: "v1alpha3", Resource: "trafficsplits"}, "split")
	if got := fmt.Sprint(ts.Object["spec"]); !strings.Contains(got, "service:app-v1 weight:90") || !strings.Contains(got, "kind:HTTPRouteGroup name:split-routes") {
		t.Errorf("TrafficSplit spec %s", got)
	}
	rg := get(schema.GroupVersionResource{Group: "specs.smi-spec.io", Version: "v1alpha3", Resource: "httproutegroups"}, "split-routes")
	if got := fmt.Sprint(rg.Object["spec"]); !strings.Contains(got, "methods:[GET]") {
		t.Errorf("HTTPRouteGroup spec %s", got)
	}

	// K8sBlueGreenDeploy's own trafficRouting is a new config written after the deploy.
	bg := `{"trafficRouting": {"provider": "istio", "spec": {"name": "bg", "routes": [{"route": {"type": "http", "name": "all",
		"destinations": [{"destination": {"host": "stable", "weight": 100}}, {"destination": {"host": "stage", "weight": 0}}]}}]}}}`
	if out := h.ok("K8sBlueGreenDeploy", bg, app("1.28", 1)); out["trafficRouting"] == nil {
		t.Errorf("blue-green outputs %v", out)
	}
	bgVS := get(vsGVR, "bg")
	if hosts, _, _ := unstructured.NestedStringSlice(bgVS.Object, "spec", "hosts"); fmt.Sprint(hosts) != "[app]" {
		t.Errorf("the blue-green VirtualService's hosts %v, want the primary Service", hosts)
	}

	_, f = h.run("K8sTrafficRouting", strings.Replace(istio, `"stage"`, `"canary"`, 1), app("1.27", 1), false, time.Minute)
	if f == nil || !strings.Contains(f.Message, "has none of its own") {
		t.Errorf("the canary placeholder: %+v", f)
	}
}
