package entities

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/plan"
)

// Pods resolves the connectors of every containerized step group of a pipeline: its cluster's,
// and the Docker registries' of its steps' images. The result is keyed by PodKey.
func (c *Catalog) Pods(src pipeline.Source, p *pipeline.Pipeline) (map[string]*plan.Pod, diag.List) {
	r := &resolver{c: c, file: src.File, src: src}
	out := map[string]*plan.Pod{}
	ciInfras := map[string]*pipeline.PodInfra{} // CI stages' KubernetesDirect infrastructure
	for _, s := range p.AllStages() {
		if s.Execution() == nil {
			continue
		}
		if s.CI != nil {
			if pod := r.ciPod(s, p, ciInfras); pod != nil {
				out[s.Identifier] = pod
			}
		}
		visit := func(v pipeline.StepVisit) {
			if g := v.Group; g != nil && g.StepGroupInfra != nil && g.StepGroupInfra.Type == "KubernetesDirect" && g.StepGroupInfra.Spec != nil {
				if pod := r.pod(g.Identifier, g.StepGroupInfra.Spec, g.SharedPaths, g.Steps); pod != nil {
					out[PodKey(s.Identifier, v.Groups, g.Identifier)] = pod
				}
			}
			if st := v.Step; st != nil && steps.Traits(st.Type).OwnPod && st.Spec != nil {
				var ct steps.Container
				(&pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &diag.List{}}).Decode(st.Spec, &ct, "Container spec") // checked by validate
				if inf := ct.Infrastructure; inf != nil && inf.Type == "KubernetesDirect" && inf.Spec != nil {
					own := []pipeline.StepElement{{Step: st}}
					if pod := r.pod(st.Identifier, inf.Spec, nil, own); pod != nil {
						out[PodKey(s.Identifier, v.Groups, st.Identifier)] = pod
					}
				}
			}
		}
		ex := s.Execution()
		pipeline.WalkSteps(ex.Steps, false, nil, nil, visit)
		pipeline.WalkSteps(ex.RollbackSteps, true, nil, nil, visit)
	}
	return out, r.diags
}

// ciPod resolves a CI stage's pod (spec 22.1): its infrastructure's, or an earlier CI
// stage's (UseFromStage), with the codebase's Git connector when the stage clones it.
func (r *resolver) ciPod(s *pipeline.Stage, p *pipeline.Pipeline, infras map[string]*pipeline.PodInfra) *plan.Pod {
	spec := s.CI
	if spec.OnMachine {
		return r.machinePod(s, p)
	}
	if spec.Infrastructure == nil {
		return nil
	}
	dec := &pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &diag.List{}} // checked by validate
	var inf pipeline.CIInfrastructure
	dec.Decode(spec.Infrastructure, &inf, "infrastructure")
	podInfra := inf.Spec
	switch inf.Kind() {
	case "KubernetesDirect":
	case "UseFromStage":
		podInfra = infras[inf.UseFromStage]
	default:
		return nil
	}
	if podInfra == nil {
		return nil
	}
	infras[s.Identifier] = podInfra
	return r.withCodebase(r.pod(s.Identifier, podInfra, spec.SharedPaths, spec.Execution.Steps), s, p)
}

// machinePod is the workspace of a CI stage on a build machine: the platform it asks for,
// and the Git connectors of its clones.
func (r *resolver) machinePod(s *pipeline.Stage, p *pipeline.Pipeline) *plan.Pod {
	spec := s.CI
	m := &plan.Machine{}
	if pf := spec.Platform; pf != nil {
		m.OS, m.Arch = scalar(pipeline.Field(pf, "os")), scalar(pipeline.Field(pf, "arch"))
	}
	// The stage's delegate selectors, and the pipeline's, choose its machine as its steps' worker.
	for _, n := range []*yaml.Node{p.DelegateSelectors, s.DelegateSelectors} {
		if n != nil && n.Kind == yaml.SequenceNode {
			for _, e := range n.Content {
				if e.Kind == yaml.ScalarNode && e.Value != "" && !slices.Contains(m.Selectors, e.Value) {
					m.Selectors = append(m.Selectors, e.Value)
				}
			}
		}
	}
	pod := &plan.Pod{Machine: m, Registries: map[string]plan.RegistryConnector{}}
	if spec.SharedPaths != nil {
		pod.SharedPaths = pipeline.Value(spec.SharedPaths)
	}
	pipeline.WalkSteps(spec.Execution.Steps, false, nil, nil, func(v pipeline.StepVisit) {
		st := v.Step
		if st == nil || st.Spec == nil || slices.ContainsFunc(v.Groups, func(g *pipeline.StepGroup) bool { return g.StepGroupInfra != nil }) {
			return
		}
		e, _ := steps.Lookup(st.Type)
		switch {
		case e.OnMachine == steps.OnMachineClone:
			keepConnector(&pod.Git, st.Spec, func(ref string) (plan.GitConnector, bool) {
				return r.gitConnector(r.file, st.Spec, ref, "a "+st.Type+" step")
			})
		case e.OnMachine == steps.OnMachineCommand && pipeline.Field(st.Spec, "image") != nil:
			// A step with an image runs in a container, pulled with its connector's credentials.
			m.Containers = true
			if ref := pipeline.Field(st.Spec, "connectorRef"); ref != nil {
				r.dockerConnector(pod, st.Spec, "connectorRef", ref.Value)
			}
		case e.OnMachine == steps.OnMachineBuild && e.Connector == "DockerRegistry":
			m.Containers = true
			if ref := pipeline.Field(st.Spec, "connectorRef"); ref != nil {
				r.dockerConnector(pod, st.Spec, "connectorRef", ref.Value)
			}
		case e.OnMachine == steps.OnMachineBuild && e.Connector == "Aws":
			m.Containers = true
			keepConnector(&pod.Aws, st.Spec, func(ref string) (plan.AwsConnector, bool) {
				return r.awsConnector(r.file, st.Spec, ref, "a "+st.Type+" step")
			})
		}
	})
	if len(pod.Registries) == 0 {
		pod.Registries = nil
	}
	return r.withCodebase(pod, s, p)
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// withCodebase adds the codebase's Git connector to a CI stage's pod when the stage clones it.
func (r *resolver) withCodebase(pod *plan.Pod, s *pipeline.Stage, p *pipeline.Pipeline) *plan.Pod {
	spec, cb := s.CI, p.Codebase
	if pod == nil || spec.CloneCodebase != "true" || cb == nil {
		return pod
	}
	if cb.ConnectorRef == "" || strings.Contains(cb.ConnectorRef, "<+") {
		return pod // the vendor's Git hosting (reported by validate), or resolved when the stage runs
	}
	if gc, ok := r.gitConnector(r.file, cb.Node, cb.ConnectorRef, "the codebase"); ok {
		if pod.Git == nil {
			pod.Git = map[string]plan.GitConnector{}
		}
		pod.Git[cb.ConnectorRef] = gc
	}
	return pod
}

// PodKey names a containerized step group or a Container step: its stage's identifier, its
// enclosing groups' and its own, slash-joined as plan.Walk paths are.
func PodKey(stage string, outer []*pipeline.StepGroup, id string) string {
	ids := []string{stage}
	for _, o := range outer {
		ids = append(ids, o.Identifier)
	}
	return strings.Join(append(ids, id), "/")
}

// pod resolves the connectors of a pod: its cluster's, and the registries' of its steps.
func (r *resolver) pod(id string, spec *pipeline.PodInfra, shared *yaml.Node, list []pipeline.StepElement) *plan.Pod {
	if pipeline.IsRuntimeInput(spec.ConnectorRef) || strings.Contains(spec.ConnectorRef, "<+") {
		r.diags.Unsupportedf(r.at(r.file, pipeline.ValueAt(spec.Node, "connectorRef")), "unsupported-expression",
			"%s: the cluster connector is an expression; Gantry resolves connectors before the run", id).
			SetHint("name the connector")
		return nil
	}
	k, ok := r.clusterConnector(r.file, spec.Node, spec.ConnectorRef, id+": ", "a pod of container steps")
	if !ok {
		return nil
	}
	pod := &plan.Pod{Connector: k, Infra: pipeline.Value(spec.Node), Registries: map[string]plan.RegistryConnector{}}
	if m, ok := pod.Infra.(map[string]any); ok && spec.Namespace == "" {
		m["namespace"] = pipeline.DefaultNamespace
	}
	if shared != nil {
		pod.SharedPaths = pipeline.Value(shared)
	}
	r.dockerConnector(pod, spec.Node, "harnessImageConnectorRef", spec.HarnessImageConnectorRef)
	pipeline.WalkSteps(list, false, nil, nil, func(v pipeline.StepVisit) {
		if v.Step == nil || v.Step.Spec == nil {
			return
		}
		switch e, _ := steps.Lookup(v.Step.Type); e.Connector {
		case "Git":
			keepConnector(&pod.Git, v.Step.Spec, func(ref string) (plan.GitConnector, bool) {
				return r.gitConnector(r.file, v.Step.Spec, ref, "a "+v.Step.Type+" step")
			})
		case "Aws":
			keepConnector(&pod.Aws, v.Step.Spec, func(ref string) (plan.AwsConnector, bool) {
				return r.awsConnector(r.file, v.Step.Spec, ref, "a "+v.Step.Type+" step")
			})
		case "DockerRegistry":
			if ref := pipeline.Field(v.Step.Spec, "connectorRef"); ref != nil {
				r.dockerConnector(pod, v.Step.Spec, "connectorRef", ref.Value)
			}
		}
	})
	return pod
}

// dockerConnector adds the DockerRegistry connector named at obj's key to the pod's.
func (r *resolver) dockerConnector(pod *plan.Pod, obj *yaml.Node, key, ref string) {
	if ref == "" || strings.Contains(ref, "<+") {
		return
	}
	pos := r.at(r.file, pipeline.ValueAt(obj, key))
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "connector", ref, "connector")
		return
	}
	k := cf.Connector
	if k.Docker == nil {
		r.diags.Errorf(pos, "connector", "connector %s is a %s connector; an image is pulled through a DockerRegistry connector", k.Identifier, k.Type)
		return
	}
	pod.Registries[ref] = *dockerRegistry(k)
}

// dockerRegistry is a DockerRegistry connector as the worker uses it.
func dockerRegistry(k *pipeline.Connector) *plan.RegistryConnector {
	out := &plan.RegistryConnector{ID: k.Identifier, URL: k.Docker.DockerRegistryURL}
	if a := k.Docker.Auth; a != nil && a.Type == "UsernamePassword" && a.Spec != nil {
		out.Username, out.UsernameRef, out.PasswordRef = a.Spec.Username, a.Spec.UsernameRef, a.Spec.PasswordRef
	}
	return out
}

// keepConnector resolves the connector a step's connectorRef names and keeps it in *m by that
// reference; a reference that is an expression is resolved by nobody before the run.
func keepConnector[C any](m *map[string]C, spec *yaml.Node, resolve func(ref string) (C, bool)) {
	ref := pipeline.Field(spec, "connectorRef")
	if ref == nil || strings.Contains(ref.Value, "<+") {
		return
	}
	if c, ok := resolve(ref.Value); ok {
		if *m == nil {
			*m = map[string]C{}
		}
		(*m)[ref.Value] = c
	}
}
