package validate

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/steps"
)

// podGroup checks a containerized step group's infrastructure and shared paths.
func (c *checker) podGroup(g *pipeline.StepGroup, groups []*pipeline.StepGroup) {
	inf := g.StepGroupInfra
	if inf == nil {
		if g.SharedPaths != nil {
			c.diags.Warnf(c.pos(pipeline.Key(g.Node, "sharedPaths")), "not-implemented",
				"sharedPaths is ignored: it shares folders between the containers of a containerized step group, and step group %s is not one", g.Identifier)
		}
		return
	}
	for _, outer := range groups {
		if outer.StepGroupInfra != nil {
			c.diags.Unsupportedf(c.pos(pipeline.Key(g.Node, "stepGroupInfra")), "unsupported-field",
				"step group %s is a containerized step group inside containerized step group %s; Gantry runs one pod per group and does not nest them", g.Identifier, outer.Identifier).
				SetHint("remove stepGroupInfra here: the group's container steps then run in %s's pod", outer.Identifier)
			return
		}
	}
	c.enum(inf.Node, "type", inf.Type, []string{"KubernetesDirect", "Delegate", "Noop", "VM", "ECSDirect"}, "stepGroupInfra type")
	if inf.Type != "KubernetesDirect" && inf.Type != "" && !dynamic(inf.Type) {
		if inf.Type == "Delegate" || inf.Type == "Noop" || inf.Type == "VM" || inf.Type == "ECSDirect" {
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(inf.Node, "type")), "unsupported-field",
				"step group %s runs on %s infrastructure; Gantry runs containerized step groups on Kubernetes (KubernetesDirect) only", g.Identifier, inf.Type)
		}
		return
	}
	if inf.Spec != nil {
		c.podInfra(inf.Spec)
	}
	if n := g.SharedPaths; n != nil && n.Kind == yaml.SequenceNode {
		for _, p := range n.Content {
			if p.Value != "" && !dynamic(p.Value) && p.Value[0] != '/' {
				c.diags.Errorf(c.pos(p), "shared-path", "shared path %q is not absolute", p.Value).SetHint("write it as a path in the containers, e.g. /root/.m2")
			}
		}
	}
}

// podInfra checks the settings of a pod.
func (c *checker) podInfra(s *pipeline.PodInfra) {
	if s.Namespace == "" {
		c.diags.Warnf(c.pos(s.Node), "default-namespace", "the pod's infrastructure names no namespace; it runs in namespace %s", pipeline.DefaultNamespace).
			SetHint("give `namespace:` to choose another")
	}
	c.boolean(s.Node, "automountServiceAccountToken", s.AutomountServiceAccountToken)
	c.duration(s.Node, "initTimeout", s.InitTimeout, "initTimeout")
	c.enum(s.Node, "os", s.OS, []string{"Linux", "MacOS", "Windows"}, "os")
	if s.OS == "MacOS" || s.OS == "Windows" {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "os")), "unsupported-field",
			"the pod's os is %s; Gantry's helper runs in Linux containers only", s.OS)
	}
	c.integer(s.Node, "runAsUser", s.RunAsUser, 0, false, "runAsUser")
	c.enum(s.Node, "imagePullPolicy", s.ImagePullPolicy, []string{"Always", "Never", "IfNotPresent"}, "imagePullPolicy")
	if o := s.PodSpecOverlay; o != "" && !strings.Contains(o, "<+") {
		var overlay yaml.Node
		if err := yaml.Unmarshal([]byte(o), &overlay); err != nil || len(overlay.Content) != 1 || overlay.Content[0].Kind != yaml.MappingNode {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "podSpecOverlay")), "invalid-value",
				"podSpecOverlay is not a YAML mapping: it is a partial pod (`spec: ...`) or pod spec merged into the pod Gantry creates").
				SetHint("podSpecOverlay: |\n  spec:\n    hostNetwork: true")
		}
	}
	if sc := s.ContainerSecurityContext; sc != nil {
		for _, kv := range [][2]string{{"allowPrivilegeEscalation", sc.AllowPrivilegeEscalation}, {"privileged", sc.Privileged},
			{"readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem}, {"runAsNonRoot", sc.RunAsNonRoot}} {
			c.boolean(sc.Node, kv[0], kv[1])
		}
		c.integer(sc.Node, "runAsUser", sc.RunAsUser, 0, false, "runAsUser")
		c.integer(sc.Node, "runAsGroup", sc.RunAsGroup, 0, false, "runAsGroup")
		c.enum(sc.Node, "procMount", sc.ProcMount, []string{"Default", "Unmasked"}, "procMount")
	}
	for _, t := range s.Tolerations {
		c.enum(t.Node, "operator", t.Operator, []string{"Exists", "Equal"}, "toleration operator")
		c.enum(t.Node, "effect", t.Effect, []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}, "toleration effect")
		c.integer(t.Node, "tolerationSeconds", t.TolerationSeconds, 0, false, "tolerationSeconds")
	}
	mounts := map[string]bool{}
	for _, v := range s.Volumes {
		c.enum(v.Node, "type", v.Type, []string{"EmptyDir", "HostPath", "PersistentVolumeClaim", "ConfigMap", "Secret"}, "volume type")
		if mounts[v.MountPath] {
			c.diags.Errorf(c.pos(pipeline.ValueAt(v.Node, "mountPath")), "duplicate-volume", "two volumes are mounted at %s; one volume per mount path", v.MountPath)
		}
		mounts[v.MountPath] = true
		need := map[string]string{"HostPath": "path", "PersistentVolumeClaim": "claimName", "ConfigMap": "name", "Secret": "name"}[v.Type]
		if need != "" && (v.Spec == nil || pipeline.Field(v.Spec.Node, need) == nil) {
			c.diags.Errorf(c.pos(v.Node), "missing-field", "a %s volume needs spec.%s", v.Type, need)
		}
		if v.Spec != nil {
			c.boolean(v.Spec.Node, "readOnly", v.Spec.ReadOnly)
			c.boolean(v.Spec.Node, "optional", v.Spec.Optional)
		}
	}
	c.resources(s.Resources)
}

func (c *checker) resources(r *pipeline.ContainerResources) {
	if r == nil {
		return
	}
	for _, a := range []*pipeline.ResourceAmount{r.Limits, r.Requests} {
		if a == nil {
			continue
		}
		c.quantity(a.Node, "cpu", a.CPU)
		c.quantity(a.Node, "memory", a.Memory)
	}
}

// containerStep checks a step that runs in a container of a containerized step group.
// A CI stage's steps all run in the stage's pod (inCIStage), or on its build machine
// (onMachine: a step needs no image there).
func (c *checker) containerStep(s *pipeline.Step, spec any, groups []*pipeline.StepGroup, inCIStage, onMachine bool) {
	inPod := inCIStage
	for _, g := range groups {
		inPod = inPod || g.StepGroupInfra != nil
		onMachine = onMachine && g.StepGroupInfra == nil
	}
	if ct, ok := spec.(*steps.Container); ok {
		c.containerInfra(s, ct)
	} else if !inPod {
		e, _ := steps.Lookup(s.Type)
		if e.DeploymentStage {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "step-placement",
				"%s step %s is outside a containerized step group: it runs in a group's pod", s.Type, s.Identifier).
				SetHint("put it in a step group with `stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: ..., namespace: ...}}`")
			return
		}
		c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "step-placement",
			"%s step %s is outside a containerized step group: it runs in a container, in a CI stage or in a group's pod", s.Type, s.Identifier).
			SetHint("move it into a CI stage, or into a step group with `stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: ..., namespace: ...}}`")
		return
	}
	if e, ok := steps.Lookup(s.Type); ok {
		e.CheckSpec(spec, specChecker{c})
	}
	im, ok := spec.(steps.Imaged)
	if !ok {
		return // it runs in the pod's helper container
	}
	set, needsImage := im.ImageSettings()
	if b, ok := spec.(*steps.Background); ok {
		c.portBindings(b, inPod, onMachine)
	}
	if set.Image == "" && needsImage && !onMachine {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "spec")), "unsupported-field",
			"%s step %s has no image: the reference then uses its own default image, which Gantry does not have", s.Type, s.Identifier).
			SetHint("name the image, e.g. `image: alpine:3.20`")
	}
	c.enum(s.Spec, "imagePullPolicy", set.ImagePullPolicy, []string{"Always", "Never", "IfNotPresent"}, "imagePullPolicy")
	c.boolean(s.Spec, "privileged", string(set.Privileged))
	c.integer(s.Spec, "runAsUser", string(set.RunAsUser), 0, false, "runAsUser")
	c.resources(set.Resources)
	if set.Reports != nil && set.Reports.Node != nil && set.Reports.Node.Kind == yaml.MappingNode {
		r := set.Reports.Node
		c.enum(r, "type", set.Reports.Type, []string{"JUnit"}, "reports type")
		if paths := pipeline.Field(pipeline.Field(r, "spec"), "paths"); paths == nil {
			c.diags.Errorf(c.pos(r), "missing-field", "reports needs `spec.paths`: the JUnit files the step writes").
				SetHint("reports: {type: JUnit, spec: {paths: [\"reports/*.xml\"]}}")
		}
	}
}

// portBindings checks a Background step's portBindings (host port: container port). A build
// machine relays them for a container; a program without an image, on the machine itself,
// and a pod's containers, which share its network, reach the service at its own port.
func (c *checker) portBindings(b *steps.Background, inPod, onMachine bool) {
	at := pipeline.Field(b.Node, "portBindings")
	if at == nil || at.Kind != yaml.MappingNode || len(at.Content) == 0 {
		return
	}
	switch {
	case inPod && !onMachine:
		c.diags.Warnf(c.pos(at), "not-implemented", "portBindings is ignored: %s",
			"the containers of a pod share its network, so later steps reach the service on localhost at its own port")
		return
	case b.Image == "":
		c.diags.Warnf(c.pos(at), "not-implemented", "portBindings is ignored: %s",
			"without an image the program runs on the build machine itself, and steps reach it on localhost at its own port")
		return
	}
	for i := 0; i+1 < len(at.Content); i += 2 {
		for _, n := range at.Content[i : i+2] {
			if p, err := strconv.Atoi(n.Value); !dynamic(n.Value) && (err != nil || p < 1 || p > 65535) {
				c.diags.Errorf(c.pos(n), "invalid-value", "portBindings %s: %s: %q is not a port number (1-65535)", at.Content[i].Value, at.Content[i+1].Value, n.Value).
					SetHint("map a host port to the container's: portBindings: {\"5432\": \"5432\"}")
			}
		}
	}
}

// containerInfra checks a Container step's own infrastructure: a pod of one step.
func (c *checker) containerInfra(s *pipeline.Step, ct *steps.Container) {
	inf := ct.Infrastructure
	if inf == nil {
		return
	}
	c.enum(inf.Node, "type", inf.Type, []string{"KubernetesDirect", "ECSDirect"}, "infrastructure type")
	if inf.Type == "ECSDirect" {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(inf.Node, "type")), "unsupported-field",
			"Container step %s runs on ECSDirect infrastructure; Gantry runs Container steps on Kubernetes (KubernetesDirect) only", s.Identifier)
		return
	}
	if inf.Spec != nil {
		c.podInfra(inf.Spec)
	}
}

// quantity checks a Kubernetes resource quantity (cpu: 500m, memory: 1Gi).
func (c *checker) quantity(obj *yaml.Node, key, value string) {
	if value == "" || dynamic(value) {
		return
	}
	if _, err := resource.ParseQuantity(value); err != nil {
		c.diags.Errorf(c.pos(pipeline.ValueAt(obj, key)), "quantity", "%s %q is not a Kubernetes quantity", key, value).
			SetHint("for example cpu: 500m or memory: 512Mi")
	}
}
