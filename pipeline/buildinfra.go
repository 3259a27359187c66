package pipeline

import (
	"gopkg.in/yaml.v3"
)

// BuildInfra is the build infrastructure an operator configures for CI stages that name a
// `runtime` (the reference's hosted or local build machines) instead of an `infrastructure`
// (spec 22.1, Decision): a Kubernetes cluster connector, a namespace, and the image of the
// container steps that name none.
type BuildInfra struct {
	Connector string // a K8sCluster connector's identifier, found with the other connectors
	Namespace string
	Image     string // "": steps must name their image
	// Machines runs those stages on build machines (workers started with --build-machine)
	// when no cluster is named: their steps without an image run on the machine itself.
	Machines bool
	// Containerd is the containerd socket the build machines run steps that name an image
	// through ("": they run none, and such steps are unsupported there).
	Containerd string
}

// Configured says whether an operator named a build infrastructure.
func (b *BuildInfra) Configured() bool { return b != nil && b.Connector != "" }

// ApplyBuildInfra places the CI stages of p that name a runtime and no infrastructure on b:
// each gets `infrastructure: {type: KubernetesDirect, spec: {connectorRef, namespace}}`, and
// its container steps without an image get b's image. The new nodes carry the runtime's
// position, so that what is said about them points at the runtime.
//
// Without a cluster but with build machines, those stages are marked OnMachine instead.
// defaultImage says which step types take b's image (the catalog's DefaultImage).
func ApplyBuildInfra(p *Pipeline, b *BuildInfra, defaultImage func(stepType string) bool) {
	if p == nil || b == nil {
		return
	}
	if !b.Configured() {
		for _, s := range p.AllStages() {
			if spec := s.CI; spec != nil && spec.Runtime != nil && spec.Infrastructure == nil {
				spec.OnMachine = b.Machines
				spec.MachineContainers = b.Machines && b.Containerd != ""
			}
		}
		return
	}
	for _, s := range p.AllStages() {
		spec := s.CI
		if spec == nil || spec.Runtime == nil || spec.Infrastructure != nil || spec.Node == nil {
			continue
		}
		at := spec.Runtime
		scalar := func(v string) *yaml.Node {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: at.Line, Column: at.Column}
		}
		mapping := func(kv ...*yaml.Node) *yaml.Node {
			return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv, Line: at.Line, Column: at.Column}
		}
		podSpec := mapping(scalar("connectorRef"), scalar(b.Connector))
		if b.Namespace != "" {
			podSpec.Content = append(podSpec.Content, scalar("namespace"), scalar(b.Namespace))
		}
		infra := mapping(scalar("type"), scalar("KubernetesDirect"), scalar("spec"), podSpec)
		spec.Node.Content = append(spec.Node.Content, scalar("infrastructure"), infra)
		spec.Infrastructure = infra
		if b.Image == "" || spec.Execution == nil {
			continue
		}
		WalkSteps(spec.Execution.Steps, false, nil, nil, func(v StepVisit) {
			st := v.Step
			if st == nil || !defaultImage(st.Type) || st.Spec == nil || st.Spec.Kind != yaml.MappingNode {
				return
			}
			if Field(st.Spec, "image") == nil && Field(st.Spec, "uses") == nil {
				st.Spec.Content = append(st.Spec.Content, scalar("image"), scalar(b.Image))
			}
		})
	}
}
