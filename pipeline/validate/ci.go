package validate

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/steps"
)

// ciStage checks a CI stage (spec 22.1): where its steps run, the codebase it clones, and the
// vendor-hosted features Gantry does not have.
func (c *checker) ciStage(s *pipeline.Stage, spec *pipeline.CIStageSpec) {
	if ex := spec.Execution; ex != nil && pipeline.Field(ex.Node, "rollbackSteps") != nil {
		c.diags.Errorf(c.pos(pipeline.Key(ex.Node, "rollbackSteps")), "stage-spec", "CI stages have no rollback section").
			SetHint("a failed build has nothing to roll back; use a failure strategy")
	}
	c.ciClone(s, spec)
	switch {
	case spec.Infrastructure != nil:
		c.ciInfrastructure(s, spec.Infrastructure)
	case spec.Runtime != nil && spec.OnMachine:
		c.ciMachine(s, spec)
	case spec.Runtime != nil:
		typ := scalarValue(pipeline.Field(spec.Runtime, "type"))
		c.diags.Unsupportedf(c.pos(spec.Runtime), "unsupported-runtime",
			"stage %s runs on runtime %s, the reference's hosted or local build machines, and neither a build machine nor a build cluster is configured", s.Identifier, typ).
			SetHint("run it on build machines: workers started with --build-machine (gantry run and gantry server are build machines unless --build-machine=false); or on a cluster: --ci-connector K8S_CONNECTOR --ci-namespace NS [--ci-image DEFAULT_IMAGE] (env GANTRY_CI_CONNECTOR, GANTRY_CI_NAMESPACE, GANTRY_CI_IMAGE) on gantry run, validate and server")
	default:
		// The reference runs no build stage without a build infrastructure: it is where the
		// stage's shared workspace lives (its CI FAQ, "What is build infrastructure").
		c.diags.Errorf(c.pos(spec.Node), "missing-field", "CI stage %s has no infrastructure and no runtime: the reference, too, runs a build stage only on a build infrastructure, which holds the workspace its steps share", s.Identifier).
			SetHint("add `infrastructure: {type: KubernetesDirect, spec: {connectorRef: my_cluster, namespace: ci}}`, or `runtime: {type: Cloud, spec: {}}` with a build infrastructure given by --ci-connector")
	}
	if p := spec.Platform; p != nil && p.Kind == yaml.MappingNode {
		if os := scalarValue(pipeline.Field(p, "os")); os != "" && os != "Linux" && !dynamic(os) {
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(p, "os")), "unsupported-field", "platform os %s: Gantry runs CI steps on Linux only, in pods and on build machines", os)
		}
	}
	if n := spec.SharedPaths; n != nil && n.Kind == yaml.SequenceNode {
		for _, p := range n.Content {
			if p.Value != "" && !dynamic(p.Value) && p.Value[0] != '/' {
				c.diags.Errorf(c.pos(p), "shared-path", "shared path %q is not absolute", p.Value).SetHint("write it as a path in the containers, e.g. /root/.m2")
			}
		}
	}
	if n := spec.ServiceDependencies; n != nil && n.Kind == yaml.SequenceNode {
		var deps []pipeline.DependencyElement
		c.dec.Decode(n, &deps, "serviceDependencies")
		for _, d := range deps {
			c.identifier(d.Node, "identifier", d.Identifier, "service dependency")
			c.enum(d.Node, "type", d.Type, []string{"Service"}, "service dependency type")
			if d.Spec == nil || d.Spec.Image == "" {
				c.diags.Errorf(c.pos(d.Node), "missing-field", "service dependency %s names no image", d.Identifier).
					SetHint("spec: {image: postgres:16}")
				continue
			}
			c.boolean(d.Spec.Node, "privileged", d.Spec.Privileged)
			c.enum(d.Spec.Node, "imagePullPolicy", d.Spec.ImagePullPolicy, []string{"Always", "Never", "IfNotPresent"}, "imagePullPolicy")
			c.integer(d.Spec.Node, "runAsUser", d.Spec.RunAsUser, 0, false, "runAsUser")
			c.resources(d.Spec.Resources)
			if len(d.Spec.PortBindings) > 0 {
				c.diags.Warnf(c.pos(pipeline.ValueAt(d.Spec.Node, "portBindings")), "not-implemented",
					"portBindings is ignored: the containers of a pod share its network, so steps reach the service on localhost at its own port")
			}
		}
	}
	for key, why := range map[string]string{
		"caching":           "steps run without the reference's hosted cache",
		"buildIntelligence": "builds run in full; the reference's build cache is a hosted feature",
	} {
		if n := pipeline.Field(spec.Node, key); enabled(n) {
			c.diags.Warnf(c.pos(n), "not-implemented", "%s is ignored: %s", key, why)
		}
	}
	if n := spec.SlsaProvenance; enabled(n) {
		c.diags.Unsupportedf(c.pos(n), "unsupported-field", "slsa_provenance would attest the images the stage builds; Gantry does not generate provenance")
	}
}

// ciMachine checks a CI stage that runs on a build machine: its command steps run there, on
// the machine without an image and in a container through containerd with one; the other
// container steps (plugins, builds) and service dependencies do not run there yet.
func (c *checker) ciMachine(s *pipeline.Stage, spec *pipeline.CIStageSpec) {
	const podHint = "run the stage in pods on a cluster: --ci-connector K8S_CONNECTOR (env GANTRY_CI_CONNECTOR)"
	const hint = "give the build machines containerd (--containerd SOCKET, env GANTRY_CONTAINERD, on gantry run, server and worker), drop the image to run the command on the machine with its own tools, or " + podHint
	if n := spec.ServiceDependencies; n != nil && n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
		c.diags.Unsupportedf(c.pos(n), "unsupported-on-build-machine",
			"stage %s runs on a build machine, and Gantry runs serviceDependencies only in pods", s.Identifier).
			SetHint("make each service a Background step, which runs on build machines and is reached by its identifier; or " + podHint)
	}
	if spec.Execution == nil {
		return
	}
	pipeline.WalkSteps(spec.Execution.Steps, false, nil, nil, func(v pipeline.StepVisit) {
		st := v.Step
		if st == nil || steps.Traits(st.Type).Container == "" {
			return
		}
		for _, g := range v.Groups {
			if g.StepGroupInfra != nil {
				return // the group's own pod
			}
		}
		on := steps.OnMachine(st.Type)
		switch {
		case on == steps.OnMachineBuild && !spec.MachineContainers:
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(st.Node, "type")), "unsupported-on-build-machine",
				"step %s (%s) builds with BuildKit in a container, and stage %s runs on a build machine that runs no containers: none was given containerd", st.Identifier, st.Type, s.Identifier).SetHint(hint)
		case on == steps.OnMachineBuild:
		case on == "":
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(st.Node, "type")), "unsupported-on-build-machine",
				"step %s (%s) runs in a container of its type's own, and stage %s runs on a build machine, where Gantry runs only Run, RunTests, Background, GitClone and BuildAndPush steps", st.Identifier, st.Type, s.Identifier).
				SetHint(podHint)
		case pipeline.Field(st.Spec, "image") != nil && !spec.MachineContainers:
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(st.Spec, "image")), "unsupported-on-build-machine",
				"step %s names an image, and stage %s runs on a build machine that runs no containers: none was given containerd", st.Identifier, s.Identifier).SetHint(hint)
		}
	})
}

// enabled reports whether a feature block (`{enabled: true, ...}`) is switched on.
func enabled(n *yaml.Node) bool {
	e := pipeline.Field(n, "enabled")
	return e != nil && (e.Value == "true" || dynamic(e.Value))
}

// ciInfrastructure checks where a CI stage's steps run, and records it for later stages'
// useFromStage.
func (c *checker) ciInfrastructure(s *pipeline.Stage, n *yaml.Node) {
	var inf pipeline.CIInfrastructure
	c.dec.Decode(n, &inf, "infrastructure")
	switch inf.Kind() {
	case "KubernetesDirect":
		if inf.Spec == nil {
			c.diags.Errorf(c.pos(n), "missing-field", "KubernetesDirect infrastructure needs `spec` (connectorRef, namespace)")
			return
		}
		c.podInfra(inf.Spec)
		c.ciInfras[s.Identifier] = true
	case "UseFromStage":
		switch {
		case inf.UseFromStage == "":
			c.diags.Errorf(c.pos(n), "missing-field", "UseFromStage infrastructure needs `useFromStage`: an earlier CI stage")
		case !c.ciInfras[inf.UseFromStage]:
			c.diags.Errorf(c.pos(pipeline.ValueAt(n, "useFromStage")), "unknown-reference",
				"stage %s: useFromStage %q is not an earlier CI stage with KubernetesDirect infrastructure", s.Identifier, inf.UseFromStage)
		default:
			c.ciInfras[s.Identifier] = true
		}
	case "VM", "Docker", "HostedVm":
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(n, "type")), "unsupported-field",
			"stage %s runs on %s infrastructure; Gantry runs CI stages on Kubernetes (KubernetesDirect) only", s.Identifier, inf.Type)
	case "":
		c.diags.Errorf(c.pos(n), "missing-field", "stage %s: infrastructure needs `type` (KubernetesDirect), or `useFromStage` naming an earlier CI stage", s.Identifier)
	default:
		c.enum(n, "type", inf.Type, []string{"KubernetesDirect", "UseFromStage", "VM", "Docker", "HostedVm"}, "infrastructure type")
	}
}

// ciClone checks a CI stage's cloneCodebase: the pipeline's codebase must name a repository
// Gantry reaches, and no step of the stage may take the clone step's identifier.
func (c *checker) ciClone(s *pipeline.Stage, spec *pipeline.CIStageSpec) {
	c.boolean(spec.Node, "cloneCodebase", spec.CloneCodebase)
	if spec.CloneCodebase == "true" && c.codebase == nil {
		c.diags.Errorf(c.pos(pipeline.ValueAt(spec.Node, "cloneCodebase")), "missing-codebase",
			"stage %s clones the codebase, but the pipeline has none", s.Identifier).
			SetHint("add `properties: {ci: {codebase: {connectorRef: my_git, repoName: app, build: <+input>}}}` to the pipeline, or set cloneCodebase: false")
	}
	if cb := c.codebase; spec.CloneCodebase == "true" && cb != nil && cb.ConnectorRef == "" && cb.RepoName != "" {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(spec.Node, "cloneCodebase")), "unsupported-codebase",
			"stage %s clones repository %s, which the codebase names without a connectorRef: a repository of the vendor's own Git hosting (Code Repository), which Gantry cannot reach", s.Identifier, cb.RepoName).
			SetHint("mirror the repository to a Git server and name its connector in the codebase's connectorRef, or set cloneCodebase: false")
	}
	if spec.CloneCodebase == "true" && spec.Execution != nil {
		pipeline.WalkSteps(spec.Execution.Steps, false, nil, nil, func(v pipeline.StepVisit) {
			if v.Step != nil && len(v.Groups) == 0 && v.Step.Identifier == steps.CloneStepID {
				c.diags.Errorf(c.pos(pipeline.ValueAt(v.Step.Node, "identifier")), "duplicate-identifier",
					"step identifier %s is the codebase clone's in a stage with cloneCodebase", steps.CloneStepID).SetHint("rename the step")
			}
		})
	}
}

// codebaseOf checks the pipeline's CI codebase (spec 22.3) and returns it.
func (c *checker) codebaseOf(p *pipeline.Pipeline) *pipeline.Codebase {
	cb := p.Codebase
	if cb == nil {
		return nil
	}
	if cb.ConnectorRef == "" && cb.RepoName == "" {
		c.diags.Errorf(c.pos(cb.Node), "missing-field", "codebase is missing required field \"connectorRef\"").
			SetHint("name the Git connector of the repository to clone, and its repoName when the connector is an account's")
	}
	c.integer(cb.Node, "depth", cb.Depth, 0, false, "codebase depth")
	c.boolean(cb.Node, "sslVerify", cb.SslVerify)
	c.enum(cb.Node, "prCloneStrategy", cb.PrCloneStrategy, []string{"MergeCommit", "SourceBranch"}, "prCloneStrategy")
	if b := cb.Build; b != nil && b.Kind == yaml.MappingNode {
		var build pipeline.CodebaseBuild
		c.dec.Decode(b, &build, "codebase build")
		c.enum(build.Node, "type", build.Type, []string{"branch", "tag", "PR", "commitSha"}, "build type")
		if build.Spec != nil {
			key := map[string]string{"branch": "branch", "tag": "tag", "PR": "number", "commitSha": "commitSha"}[build.Type]
			if key != "" && pipeline.Field(build.Spec.Node, key) == nil {
				c.diags.Errorf(c.pos(build.Spec.Node), "missing-field", "a %s build needs spec.%s", build.Type, key)
			}
		}
	}
	return cb
}
