package validate

import (
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/templates"
)

var versionLabelRe = regexp.MustCompile(`^[0-9a-zA-Z][^\s/&]{0,127}$`)

// otherTemplateKinds are the template types the reference defines that Gantry does not expand.
var otherTemplateKinds = []string{"ArtifactSource", "Notification", "SecretManager", "Workspace"}

// template checks a template document on its own (spec 19.2): its metadata, and its body
// wrapped in the smallest pipeline that holds it, with runtime inputs left open.
func (c *checker) template(t *pipeline.Template) {
	c.identifier(t.Node, "identifier", t.Identifier, "template")
	c.name(t.Node, t.Name, "template")
	if t.VersionLabel != "" && !versionLabelRe.MatchString(t.VersionLabel) {
		c.diags.Errorf(c.pos(pipeline.ValueAt(t.Node, "versionLabel")), "version-label", "versionLabel %q is invalid", t.VersionLabel).
			SetHint("start with a letter or digit; no spaces, / or &; at most 128 characters")
	}
	kind := pipeline.Kind{What: "template type", Code: "unsupported-template-kind",
		Runs: []string{"Step", "StepGroup", "Stage", "Pipeline", "CustomDeployment", "MonitoredService"}, Reference: otherTemplateKinds}
	if !kind.Check(&c.diags, c.pos(pipeline.ValueAt(t.Node, "type")), t.Type) || t.Spec == nil {
		return
	}
	if t.Type == "CustomDeployment" {
		c.deploymentTemplate(t)
		return
	}
	if t.Type == "MonitoredService" {
		c.monitoredTemplate(t)
		return
	}
	if t.HasVariables() {
		c.diags.Unsupportedf(c.pos(pipeline.Key(t.Node, "variables")), "unsupported-template-feature",
			"template variables are not supported (the reference does not document what they do)")
	}
	at := pipeline.ValueAt(t.Node, "allowedOverrides")
	for i, name := range t.AllowedOverrides {
		pos := c.pos(at.Content[min(i, len(at.Content)-1)])
		field := ""
		for _, f := range []string{"when", "strategy", "failureStrategies", "delegateSelectors", "enforce", "runMode", "timeout", "allowStageExecutions", "fixedInputsOnRerun"} {
			if templates.OverrideName(f, t.Type) == name {
				field = f
			}
		}
		if field == "" {
			c.diags.Errorf(pos, "allowed-overrides", "%s is not an override of %s templates", name, t.Type)
			continue
		}
		if v := pipeline.Field(t.Spec, field); v != nil && v.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(v.Value) {
			c.diags.Errorf(pos, "allowed-overrides", "%s cannot be allowed: the template's %s is a runtime input already", name, field).
				SetHint("callers fill it through templateInputs")
		}
	}
	wrapped := wrapTemplate(t)
	root := wrapIn("pipeline", wrapped)
	if templates.Uses(root) {
		// The links' bodies are positioned in their own files.
		c.src.Origins = pipeline.NewOrigins()
		c.dec.Origins = c.src.Origins
		_, d := templates.ExpandIn(t, c.file, c.src.Origins, root, c.lib)
		c.diags.Add(d...)
		if d.HasErrors() {
			return
		}
		wrapped = pipeline.Field(root, "pipeline")
	}
	p, d := pipeline.DecodePipeline(c.file, c.src.Origins, wrapped)
	c.diags.Add(d...)
	c.pipeline(p)
	c.scalars(wrapped, "")
}

// wrapTemplate puts a template's body in the smallest pipeline that holds it; the wrapper's
// nodes have no position, so diagnostics point into the body.
func wrapTemplate(t *pipeline.Template) *yaml.Node {
	body := pipeline.CopyNode(t.Spec)
	named := func(kind string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.MappingNode}
		setScalar(n, "identifier", t.Identifier)
		setScalar(n, "name", t.Name)
		for i := 0; i+1 < len(body.Content); i += 2 {
			if k := body.Content[i].Value; k != "stageType" && k != "identifier" && k != "name" {
				n.Content = append(n.Content, body.Content[i], body.Content[i+1])
			}
		}
		return wrapIn(kind, n)
	}
	stageType := "Custom"
	switch t.Type {
	case "Pipeline":
		return named("")
	case "Stage":
		return pipelineOf(named("stage"))
	case "StepGroup":
		if st := pipeline.Field(body, "stageType"); st != nil && st.Value != "" {
			stageType = st.Value
		}
	case "Step":
		if strings.HasPrefix(scalarValue(pipeline.Field(body, "type")), "K8s") {
			stageType = "Deployment"
		}
	}
	el := named(map[string]string{"Step": "step", "StepGroup": "stepGroup"}[t.Type])
	stage := &yaml.Node{Kind: yaml.MappingNode}
	setScalar(stage, "identifier", "template_stage")
	setScalar(stage, "name", "template stage")
	setScalar(stage, "type", stageType)
	spec := &yaml.Node{Kind: yaml.MappingNode}
	if stageType == "Deployment" {
		setScalar(spec, "deploymentType", "Kubernetes")
		service := &yaml.Node{Kind: yaml.MappingNode}
		setScalar(service, "serviceRef", "<+input>")
		env := &yaml.Node{Kind: yaml.MappingNode}
		setScalar(env, "environmentRef", "<+input>")
		setScalar(env, "infrastructureDefinitions", "<+input>")
		setNode(spec, "service", service)
		setNode(spec, "environment", env)
	}
	exec := &yaml.Node{Kind: yaml.MappingNode}
	setNode(exec, "steps", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{el}})
	setNode(spec, "execution", exec)
	setNode(stage, "spec", spec)
	return pipelineOf(wrapIn("stage", stage))
}

func pipelineOf(stage *yaml.Node) *yaml.Node {
	p := &yaml.Node{Kind: yaml.MappingNode}
	setScalar(p, "identifier", "template_pipeline")
	setScalar(p, "name", "template pipeline")
	setNode(p, "stages", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{stage}})
	return p
}

func wrapIn(key string, n *yaml.Node) *yaml.Node {
	if key == "" {
		return n
	}
	w := &yaml.Node{Kind: yaml.MappingNode}
	setNode(w, key, n)
	return w
}

func setScalar(n *yaml.Node, key, value string) {
	setNode(n, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
}

func setNode(n *yaml.Node, key string, v *yaml.Node) {
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func scalarValue(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// deploymentTemplate checks a CustomDeployment template: an inline fetch-instances script, the
// list's path, and the attributes with `instancename` among them.
func (c *checker) deploymentTemplate(t *pipeline.Template) {
	var spec pipeline.CustomDeploymentSpec
	c.dec.Decode(t.Spec, &spec, "CustomDeployment template spec")
	inf := spec.Infrastructure
	if inf == nil {
		return
	}
	c.variables(inf.Variables, "deployment template")
	if f := inf.FetchInstancesScript; f != nil && f.Store != nil {
		st := f.Store
		switch {
		case st.Type == "Harness":
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(st.Node, "type")), "unsupported-manifest-store",
				"a fetch-instances script in the Harness file store: Gantry has no file store; write the script inline").
				SetHint("store: {type: Inline, spec: {content: ...}}")
		case st.Type != "Inline":
			c.enum(st.Node, "type", st.Type, []string{"Inline", "Harness"}, "fetchInstancesScript store type")
		case st.Spec != nil && strings.TrimSpace(st.Spec.Content) == "":
			c.diags.Errorf(c.pos(st.Spec.Node), "missing-field", "the fetch-instances script is empty").
				SetHint("content: a script that writes the instances' JSON to $INSTANCE_OUTPUT_PATH")
		}
	}
	names := map[string]bool{}
	for _, a := range inf.InstanceAttributes {
		if names[a.Name] {
			c.diags.Errorf(c.pos(pipeline.ValueAt(a.Node, "name")), "duplicate-identifier", "instance attribute %s is listed twice", a.Name)
		}
		names[a.Name] = true
	}
	if len(inf.InstanceAttributes) > 0 && !names[InstanceNameAttribute] {
		c.diags.Errorf(c.pos(pipeline.ValueAt(inf.Node, "instanceAttributes")), "missing-field",
			"instanceAttributes needs the attribute %s: the JSON path of each instance's host name", InstanceNameAttribute).
			SetHint("- {name: instancename, jsonPath: name}")
	}
}

// InstanceNameAttribute is the instance attribute that names an instance's host.
const InstanceNameAttribute = "instancename"
