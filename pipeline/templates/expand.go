package templates

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/inputs"
)

// MaxDepth is how many template levels may nest below the pipeline (spec 19.5.4).
const MaxDepth = 9

// Use is one expanded template link, for the execution record and `gantry status`.
type Use struct {
	FQN     string `json:"fqn"`     // the expanded node
	Kind    string `json:"kind"`    // Step, StepGroup, Stage or Pipeline
	Ref     string `json:"ref"`     // templateRef as written
	Version string `json:"version"` // the version expanded (the stable one when none was written)
	File    string `json:"file"`
	// Link is the use site's `template` object as written, which policies see beside the
	// expanded node (spec 19.8).
	Link *yaml.Node `json:"-"`
}

// Uses reports whether the pipeline under a file's root links any template.
func Uses(root *yaml.Node) bool {
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n == nil {
			return false
		}
		if n.Kind == yaml.MappingNode {
			if t := pipeline.Field(n, "template"); t != nil && pipeline.Field(t, "templateRef") != nil {
				return true
			}
		}
		return slices.ContainsFunc(n.Content, walk)
	}
	return walk(pipeline.Field(root, "pipeline"))
}

type expander struct {
	lib *Library
	src pipeline.Source // the file expanded, and the record of the nodes copied into it
	// filling names what Fill fills ("service"); empty when expanding template links.
	filling string
	diags   diag.List
	uses    []Use
	// The templates being expanded, outermost first, with the scopes of their documents.
	path   []string
	scopes []string
}

// Expand replaces, in place, every template link of the pipeline under root (a file's root
// mapping) with the template's body (spec 19.5), nested links included. origins records the
// nodes copied in, for their positions (nil: not kept).
func Expand(file string, origins *pipeline.Origins, root *yaml.Node, lib *Library) ([]Use, diag.List) {
	return expand(file, origins, root, lib, nil)
}

// ExpandIn expands the links of a pipeline that wraps the body of template t, as links inside
// t resolve: from t's scope.
func ExpandIn(t *pipeline.Template, file string, origins *pipeline.Origins, root *yaml.Node, lib *Library) ([]Use, diag.List) {
	scope := scopeAccount
	switch {
	case t.OrgIdentifier != "" && t.ProjectIdentifier != "":
		scope = scopeProject
	case t.OrgIdentifier != "":
		scope = scopeOrg
	}
	return expand(file, origins, root, lib, []string{scope})
}

func expand(file string, origins *pipeline.Origins, root *yaml.Node, lib *Library, scopes []string) ([]Use, diag.List) {
	if lib == nil {
		lib = &Library{byID: map[string][]*Doc{}}
	}
	if origins == nil {
		origins = pipeline.NewOrigins()
	}
	e := &expander{lib: lib, src: pipeline.Source{File: file, Origins: origins}, scopes: scopes}
	if p := pipeline.Field(root, "pipeline"); p != nil {
		if ok, done := e.link(p, "Pipeline", "pipeline", ""); ok {
			e.stages(pipeline.Field(p, "stages"))
			done()
		}
	}
	return e.uses, e.diags
}

func (e *expander) pos(n *yaml.Node) diag.Pos { return e.src.Pos(n) }

func (e *expander) stages(list *yaml.Node) {
	for _, el := range items(list) {
		if s := pipeline.Field(el, "stage"); s != nil {
			if ok, done := e.link(s, "Stage", "pipeline.stages", ""); ok {
				e.stageBody(s, "pipeline.stages."+scalar(pipeline.Field(s, "identifier")))
				done()
			}
		}
		e.stages(pipeline.Field(el, "parallel"))
	}
}

func (e *expander) stageBody(s *yaml.Node, fqn string) {
	typ := scalar(pipeline.Field(s, "type"))
	spec := pipeline.Field(s, "spec")
	ex := pipeline.Field(spec, "execution")
	e.steps(pipeline.Field(ex, "steps"), fqn+".spec.execution.steps", typ)
	e.steps(pipeline.Field(ex, "rollbackSteps"), fqn+".spec.execution.rollbackSteps", typ)
	prov := pipeline.Field(pipeline.Field(spec, "environment"), "provisioner")
	e.steps(pipeline.Field(prov, "steps"), fqn+".spec.environment.provisioner.steps", typ)
	e.steps(pipeline.Field(prov, "rollbackSteps"), fqn+".spec.environment.provisioner.rollbackSteps", typ)
}

func (e *expander) steps(list *yaml.Node, prefix, stageType string) {
	for _, el := range items(list) {
		if s := pipeline.Field(el, "step"); s != nil {
			if ok, done := e.link(s, "Step", prefix, stageType); ok {
				done()
			}
		}
		if g := pipeline.Field(el, "stepGroup"); g != nil {
			if ok, done := e.link(g, "StepGroup", prefix, stageType); ok {
				e.steps(pipeline.Field(g, "steps"), prefix+"."+scalar(pipeline.Field(g, "identifier"))+".steps", stageType)
				done()
			}
		}
		e.steps(pipeline.Field(el, "parallel"), prefix, stageType)
	}
}

// linkName is a link's template as written, with its version: ref@version, or ref alone for the
// stable version.
func linkName(l pipeline.TemplateLink) string {
	if l.VersionLabel == "" {
		return l.TemplateRef
	}
	return l.TemplateRef + "@" + l.VersionLabel
}

// useSiteKeys are the keys a use site may hold beside `template` (spec 19.3). A stage's tags
// are its own, as the reference keeps them at the use site (its exports write `tags: {}` there).
var useSiteKeys = map[string][]string{
	"Step":      {"identifier", "name", "description", "template"},
	"StepGroup": {"identifier", "name", "description", "template"},
	"Stage":     {"identifier", "name", "description", "tags", "template"},
	"Pipeline":  {"name", "identifier", "orgIdentifier", "projectIdentifier", "description", "tags", "notificationRules", "template"},
}

// link expands n in place when it links a template. ok is false when the link could not be
// expanded (reported); done pops the template off the expansion path once the caller has
// walked the expanded body.
func (e *expander) link(n *yaml.Node, kind, prefix, stageType string) (ok bool, done func()) {
	noop := func() {}
	tl := pipeline.Field(n, "template")
	if tl == nil {
		return true, noop
	}
	l, ok := e.decodeLink(n, tl, kind)
	if !ok {
		return false, noop
	}
	at := pipeline.ValueAt(tl, "templateRef")
	doc, key, ok := e.find(n, l, at, kind)
	if !ok {
		return false, noop
	}
	t := doc.T
	if t.HasVariables() {
		e.diags.Unsupportedf(pipeline.NodePos(doc.File, pipeline.Key(t.Node, "variables")), "unsupported-template-feature",
			"template variables are not supported (the reference does not document what they do)")
	}
	body := e.src.Origins.CopyFrom(t.Spec, &pipeline.Origin{File: doc.File, Src: doc.Src,
		Via: pipeline.ViaUse("template "+doc.Key(), e.pos(at))})
	if kind == "StepGroup" {
		if st := pipeline.Field(body, "stageType"); st != nil {
			if stageType != "" && st.Value != stageType {
				e.diags.Errorf(e.pos(at), "stage-type-mismatch", "%s is written for %s stages; this is a %s stage", doc.Key(), st.Value, stageType).
					SetHint("link a step group template whose stageType is %s", stageType)
			}
			deleteKey(body, "stageType")
		}
	}
	nerr := len(e.diags.Invalid())
	if l.TemplateInputs != nil {
		e.inputs(body, l.TemplateInputs, "templateInputs")
	}
	if l.TemplateOverrides != nil {
		e.overrides(body, l.TemplateOverrides, kind, doc)
	}
	e.splice(n, body, kind)
	fqn := prefix + "." + scalar(pipeline.Field(n, "identifier"))
	if kind == "Pipeline" {
		fqn = "pipeline"
	}
	e.uses = append(e.uses, Use{FQN: fqn, Kind: kind, Ref: l.TemplateRef, Version: t.VersionLabel, File: doc.File, Link: tl})
	if len(e.diags.Invalid()) > nerr {
		return false, noop
	}
	e.path = append(e.path, key)
	e.scopes = append(e.scopes, doc.scope)
	return true, func() {
		e.path = e.path[:len(e.path)-1]
		e.scopes = e.scopes[:len(e.scopes)-1]
	}
}

// decodeLink reads a template link, reporting the use site's keys and the link's fields that
// Gantry does not apply; ok is false when it names no template.
func (e *expander) decodeLink(n, tl *yaml.Node, kind string) (l pipeline.TemplateLink, ok bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(useSiteKeys[kind], k.Value) {
			e.diags.Unsupportedf(e.pos(k), "unsupported-use-site-key",
				"`%s` beside `template` would change the template's body, which Gantry does not do", k.Value).
				SetHint("set it in the template, or list it in the template's allowedOverrides and give it under templateOverrides")
		}
	}
	(&pipeline.Decoder{File: e.src.File, Origins: e.src.Origins, Diags: &e.diags}).Decode(tl, &l, "template link")
	if l.TemplateRef == "" {
		return l, false
	}
	for _, f := range []struct {
		n    *yaml.Node
		name string
	}{{l.Label, "label"}, {l.TemplateVariables, "templateVariables"}} {
		if f.n != nil {
			e.diags.Unsupportedf(e.pos(pipeline.Key(tl, f.name)), "unsupported-template-feature",
				"template `%s` is not supported: Gantry links templates by templateRef and versionLabel", f.name)
		}
	}
	if l.GitBranch != "" && !e.lib.FromGit[pipeline.LocalRef(l.TemplateRef)] {
		e.diags.Warnf(e.pos(pipeline.Key(tl, "gitBranch")), "ignored-field",
			"gitBranch %s is ignored: Gantry reads templates from its template folders, not from a Git store", l.GitBranch).
			SetHint("check out that branch of the templates' repository into a folder given with --templates")
	}
	return l, true
}

// find returns the template a link names, checked against where it stands (its kind, a cycle,
// the nesting depth), and its key on the expansion path; ok is false when it cannot be
// expanded (reported, or marked unexpanded when the template folders are partial).
func (e *expander) find(n *yaml.Node, l pipeline.TemplateLink, at *yaml.Node, kind string) (doc *Doc, key string, ok bool) {
	from := scopeProject
	if len(e.scopes) > 0 {
		from = e.scopes[len(e.scopes)-1]
	}
	doc, le := e.lib.find(l.TemplateRef, l.VersionLabel, from)
	if le != nil && le.code == MissingTemplate && e.lib.Partial {
		e.diags.Warnf(e.pos(at), MissingTemplate, "template %s is not among the templates found; its body was not checked", linkName(l)).
			SetHint("Gantry looked in %s; a run needs the template there (account- and org-level templates and those kept in another repository too)", e.lib.where())
		pipeline.MarkUnexpanded(n)
		return nil, "", false
	}
	if le != nil {
		e.diags.Errorf(e.pos(at), le.code, "%s", le.msg).SetHint("%s", le.hint)
		return nil, "", false
	}
	t := doc.T
	switch t.Type {
	case "Step", "StepGroup", "Stage", "Pipeline":
	default:
		e.diags.Unsupportedf(e.pos(at), "unsupported-template-kind", "%s is a %s template, which Gantry does not expand (it expands Step, StepGroup, Stage and Pipeline templates)",
			doc.Key(), t.Type)
		return nil, "", false
	}
	if t.Type != kind {
		e.diags.Errorf(e.pos(at), "template-kind-mismatch", "%s is a %s template; it cannot stand where a %s is", doc.Key(), t.Type, strings.ToLower(kind)).
			SetHint("link a %s template here", kind)
		return nil, "", false
	}
	key = doc.scope + ":" + doc.Key()
	if i := slices.Index(e.path, key); i >= 0 {
		chain := append(slices.Clone(e.path[i:]), key)
		for j := range chain {
			chain[j] = chain[j][strings.IndexByte(chain[j], ':')+1:]
		}
		e.diags.Errorf(e.pos(at), "template-cycle", "template cycle: %s", strings.Join(chain, " → ")).
			SetHint("a template may not link itself, directly or through others")
		return nil, "", false
	}
	if len(e.path) >= MaxDepth {
		e.diags.Errorf(e.pos(at), "template-depth-exceeded", "templates nest deeper than %d levels here (%s)", MaxDepth, doc.Key()).
			SetHint("flatten the chain of templates")
		return nil, "", false
	}
	return doc, key, true
}

// splice makes n the use site's identity followed by the template's body (spec 19.5.1 step 5).
func (e *expander) splice(n, body *yaml.Node, kind string) {
	var out []*yaml.Node
	own := useSiteKeys[kind]
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "template" && k != "notificationRules" && slices.Contains(own, k) {
			out = append(out, n.Content[i], n.Content[i+1])
		}
	}
	for i := 0; i+1 < len(body.Content); i += 2 {
		k := body.Content[i].Value
		if slices.Contains([]string{"identifier", "name", "description"}, k) {
			continue // a template body has no identity of its own
		}
		if k != "notificationRules" && slices.Contains(own, k) && pipeline.Field(n, k) != nil {
			continue // the use site's own (a pipeline's tags, orgIdentifier, ...)
		}
		v := body.Content[i+1]
		if k == "notificationRules" && kind == "Pipeline" {
			v = concat(v, pipeline.Field(n, "notificationRules")) // template rules first (spec 19.6.3)
		}
		out = append(out, body.Content[i], v)
	}
	if kind == "Pipeline" && pipeline.Field(body, "notificationRules") == nil {
		if v := pipeline.Field(n, "notificationRules"); v != nil {
			out = append(out, pipeline.Key(n, "notificationRules"), v)
		}
	}
	n.Content = out
}

// inputs fills the body's runtime inputs from templateInputs (spec 19.5.1 steps 2-3): every
// value must land on a runtime input, identity keys must agree, lists match by identity.
func (e *expander) inputs(dst, in *yaml.Node, where string) {
	if in.Kind == yaml.ScalarNode && in.Tag == "!!null" {
		return // an empty value gives nothing
	}
	if isInput(dst) && in.Kind != yaml.ScalarNode {
		*dst = *in // a runtime input standing for a whole list or object
		return
	}
	switch in.Kind {
	case yaml.MappingNode:
		if dst.Kind != yaml.MappingNode {
			e.notRuntime(in, where)
			return
		}
		picked := artifactPicked(dst)
		for i := 0; i+1 < len(in.Content); i += 2 {
			k, v := in.Content[i], in.Content[i+1]
			d := pipeline.Field(dst, k.Value)
			path := where + "." + k.Value
			if identityKey(k.Value) && v.Kind == yaml.ScalarNode {
				if d == nil || d.Kind != yaml.ScalarNode || (d.Value != v.Value && !isInput(d)) {
					have := "none"
					if d != nil && d.Kind == yaml.ScalarNode {
						have = d.Value
					}
					e.diags.Errorf(e.pos(v), e.code("identity-mismatch"), "%s is %q, but %s's is %s", path, v.Value, e.owner(), quoteOr(have)).
						SetHint("%s may repeat %s's %s, not change it", e.field(), e.owner(), k.Value)
					continue
				}
				if !isInput(d) {
					continue
				}
			}
			if d != nil && picked && k.Value == "sources" && v.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(v.Value) {
				continue // the picked source's inputs: none while the sources are fixed
			}
			if d == nil {
				e.diags.Errorf(e.pos(k), e.code("not-runtime"), "%s: %s has no %s here", path, e.owner(), k.Value).
					SetHint("%s may only fill %s's runtime inputs (<+input>)", e.field(), e.owner())
				continue
			}
			e.inputs(d, v, path)
		}
	case yaml.SequenceNode:
		if dst.Kind != yaml.SequenceNode {
			e.notRuntime(in, where)
			return
		}
		for _, el := range in.Content {
			e.listElement(dst, el, where)
		}
	default:
		e.scalarInput(dst, in, where)
	}
}

// listElement merges one templateInputs list element into the element of the template's list
// with the same identity: identifier inside step, stepGroup and stage wrappers, variable name.
func (e *expander) listElement(dst, el *yaml.Node, where string) {
	if par := pipeline.Field(el, "parallel"); par != nil && len(el.Content) == 2 {
		for _, inner := range items(par) {
			e.listElement(dst, inner, where)
		}
		return
	}
	wrapper, id := identity(el)
	if id == "" {
		e.diags.Errorf(e.pos(el), e.code("not-runtime"), "%s: a list element of %s needs an identifier (or a variable name) to match %s's", where, e.field(), e.owner())
		return
	}
	match := findElement(dst, wrapper, id)
	if match == nil {
		e.diags.Errorf(e.pos(el), e.code("not-runtime"), "%s: %s's list has no element %s", where, e.owner(), id).
			SetHint("elements are matched by identifier (variables by name), never by position")
		return
	}
	path := where + "[" + id + "]"
	if wrapper != "" {
		e.inputs(pipeline.Field(match, wrapper), pipeline.Field(el, wrapper), path)
		return
	}
	e.inputs(match, el, path)
}

func (e *expander) scalarInput(dst, v *yaml.Node, where string) {
	if !isInput(dst) {
		if dst.Kind == yaml.ScalarNode && dst.Value == v.Value {
			return // repeats a fixed value, as exported templateInputs sometimes do
		}
		if dst.Kind != yaml.ScalarNode && pipeline.IsRuntimeInput(v.Value) && holdsInput(dst) {
			return // <+input> for a list or object whose own runtime inputs stay open, as the reference writes them
		}
		e.notRuntime(v, where)
		return
	}
	tmpl, err := inputs.Parse(dst.Value)
	if err != nil {
		return // reported when the template file is validated
	}
	if !strings.Contains(v.Value, "<+") {
		if err := tmpl.Check(v.Value); err != nil {
			e.diags.Errorf(e.pos(v), e.code("invalid-value"), "%s: %v", where, err).
				SetHint("%s's %s limits the values", e.owner(), dst.Value)
			return
		}
		*dst = *v
		return
	}
	if !pipeline.IsRuntimeInput(v.Value) {
		*dst = *v // an expression, evaluated where it lands
		return
	}
	use, err := inputs.Parse(v.Value)
	if err != nil {
		e.diags.Errorf(e.pos(v), "runtime-input", "%s: invalid runtime input: %v", where, err)
		return
	}
	combined, msg := combineInputs(tmpl, use)
	if msg != "" {
		e.diags.Errorf(e.pos(v), e.code("invalid-value"), "%s: %s", where, msg).
			SetHint("%s's %s already decides it", e.owner(), dst.Value)
		return
	}
	dst.Value = combined
}

// artifactPicked: a service's primary artifact chosen at run time. The reference then writes
// `sources: <+input>` in the stage's serviceInputs for the picked source's own runtime inputs,
// of which a source with fixed fields has none: nothing to fill.
func artifactPicked(primary *yaml.Node) bool {
	ref := pipeline.Field(primary, "primaryArtifactRef")
	return ref != nil && isInput(ref)
}

// holdsInput reports whether a list or object holds a runtime input somewhere inside.
func holdsInput(n *yaml.Node) bool {
	if n.Kind == yaml.ScalarNode {
		return isInput(n)
	}
	return slices.ContainsFunc(n.Content, holdsInput)
}

func (e *expander) notRuntime(n *yaml.Node, where string) {
	e.diags.Errorf(e.pos(n), e.code("not-runtime"), "%s is fixed in %s; %s cannot change it", where, e.owner(), e.field()).
		SetHint("only %s's runtime inputs (<+input>) take values; make it one there", e.owner())
}

// overrideFields maps the YAML fields templateOverrides may set to their override names and
// the template kinds that have them (spec 19.6.2).
var overrideFields = map[string]struct {
	name  string
	kinds []string
}{
	"when":                 {"ConditionalExecution", []string{"Step", "StepGroup", "Stage"}},
	"strategy":             {"LoopingStrategy", []string{"Step", "StepGroup", "Stage"}},
	"failureStrategies":    {"FailureStrategy", []string{"Step", "StepGroup", "Stage"}},
	"delegateSelectors":    {"DelegateSelectors", []string{"Step", "StepGroup", "Stage", "Pipeline"}},
	"enforce":              {"PolicyEnforcement", []string{"Step"}},
	"runMode":              {"ExecutionStrategy", []string{"Stage"}},
	"timeout":              {"PipelineTimeout", []string{"Pipeline"}},
	"allowStageExecutions": {"AllowStageExecutions", []string{"Pipeline"}},
	"fixedInputsOnRerun":   {"FixedInputsOnRerun", []string{"Pipeline"}},
}

// OverrideName is the allowedOverrides name of a field for a template kind, or "".
func OverrideName(field, kind string) string {
	f, ok := overrideFields[field]
	if !ok || !slices.Contains(f.kinds, kind) {
		return ""
	}
	return f.name
}

// overrides applies templateOverrides the template allows; others are ignored with a warning
// (spec 19.6.2).
func (e *expander) overrides(body, ov *yaml.Node, kind string, doc *Doc) {
	if ov.Kind != yaml.MappingNode {
		e.diags.Errorf(e.pos(ov), "type", "templateOverrides must be a mapping of fields to new values")
		return
	}
	for i := 0; i+1 < len(ov.Content); i += 2 {
		k, v := ov.Content[i], ov.Content[i+1]
		name := OverrideName(k.Value, kind)
		switch {
		case name == "":
			var fields []string
			for f := range overrideFields {
				if OverrideName(f, kind) != "" {
					fields = append(fields, f)
				}
			}
			slices.Sort(fields)
			e.diags.Errorf(e.pos(k), "override-field", "templateOverrides of a %s template cannot set %s", kind, k.Value).
				SetHint("a %s template's overridable fields: %s", kind, strings.Join(fields, ", "))
		case name == "ExecutionStrategy":
			e.diags.Unsupportedf(e.pos(k), "unsupported-template-feature", "templateOverrides.runMode (ExecutionStrategy) is not supported: Gantry's stages have no run modes")
		case !slices.Contains(doc.T.AllowedOverrides, name):
			e.diags.Warnf(e.pos(k), "override-not-allowed", "templateOverrides.%s is ignored: %s does not list %s in allowedOverrides", k.Value, doc.Key(), name).
				SetHint("the template's own %s applies", k.Value)
		default:
			setKey(body, k, v)
		}
	}
}

// combineInputs merges a use site's runtime input into the template's: both sets of validators
// apply (spec 19.5.2); a differing default is an error.
func combineInputs(t, u *inputs.RuntimeInput) (string, string) {
	c := *t
	if u.Default != nil {
		if t.Default != nil && *t.Default != *u.Default {
			return "", fmt.Sprintf("the default %q differs from the template's default %q", *u.Default, *t.Default)
		}
		c.Default = u.Default
	}
	switch {
	case u.AllowedValues == nil:
	case t.AllowedValues == nil:
		c.AllowedValues = u.AllowedValues
	default:
		c.AllowedValues = nil
		for _, a := range u.AllowedValues {
			if slices.Contains(t.AllowedValues, a) {
				c.AllowedValues = append(c.AllowedValues, a)
			}
		}
		if len(c.AllowedValues) == 0 {
			return "", "no value is allowed by both the template's allowedValues and the use site's"
		}
	}
	if u.Regex != "" {
		if t.Regex != "" && t.Regex != u.Regex {
			return "", "the template and the use site both give a regex; Gantry cannot apply two"
		}
		c.Regex = u.Regex
	}
	if u.SelectOneFrom != nil && t.SelectOneFrom == nil {
		c.SelectOneFrom = u.SelectOneFrom
	}
	if u.SelectManyFrom != nil && t.SelectManyFrom == nil {
		c.SelectManyFrom = u.SelectManyFrom
	}
	c.ExecutionInput = t.ExecutionInput || u.ExecutionInput
	return c.String(), ""
}

func identityKey(k string) bool { return k == "type" || k == "identifier" }

// identity is the wrapper key (step, stepGroup, stage; "" for a bare element) and the
// identifier or variable name of a list element.
func identity(el *yaml.Node) (wrapper, id string) {
	for _, w := range []string{"step", "stepGroup", "stage"} {
		if inner := pipeline.Field(el, w); inner != nil {
			return w, scalar(pipeline.Field(inner, "identifier"))
		}
	}
	if id := scalar(pipeline.Field(el, "identifier")); id != "" {
		return "", id
	}
	return "", scalar(pipeline.Field(el, "name"))
}

// findElement finds the element of a template list with the identity, parallel blocks included.
func findElement(list *yaml.Node, wrapper, id string) *yaml.Node {
	for _, el := range items(list) {
		if par := pipeline.Field(el, "parallel"); par != nil {
			if m := findElement(par, wrapper, id); m != nil {
				return m
			}
			continue
		}
		if w, i := identity(el); w == wrapper && i == id {
			return el
		}
	}
	return nil
}

func isInput(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(n.Value)
}

func items(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func quoteOr(s string) string {
	if s == "none" {
		return s
	}
	return fmt.Sprintf("%q", s)
}

func deleteKey(n *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i:i], n.Content[i+2:]...)
			return
		}
	}
}

func setKey(n, k, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k.Value {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, k, v)
}

// concat joins two sequences (either may be nil).
func concat(a, b *yaml.Node) *yaml.Node {
	if b == nil {
		return a
	}
	if a == nil {
		return b
	}
	out := *a
	out.Content = append(slices.Clone(a.Content), b.Content...)
	return &out
}

// IDs is the identifier path of the expanded node (stage, step groups, step), as plan.Walk
// gives it: the FQN without its fixed segments.
func (u Use) IDs() []string {
	parts := strings.Split(u.FQN, ".")
	if len(parts) < 3 || parts[0] != "pipeline" || parts[1] != "stages" {
		return nil
	}
	ids := []string{parts[2]}
	rest := parts[3:]
	switch {
	case len(rest) >= 3 && rest[0] == "spec" && rest[1] == "execution":
		rest = rest[3:]
	case len(rest) >= 4 && rest[0] == "spec" && rest[1] == "environment":
		rest = rest[4:]
	}
	for i := 0; i < len(rest); i += 2 { // id, "steps", id, "steps", ...
		ids = append(ids, rest[i])
	}
	return ids
}

// Fill fills the runtime inputs of dst from in as templateInputs fill a template's (every value
// must land on a runtime input, identity keys must agree, lists match by identity), for the
// inputs of services, environments and infrastructures (serviceInputs, environmentInputs,
// infrastructure inputs). where names in in messages; positions are in src.
func Fill(src pipeline.Source, what string, dst, in *yaml.Node, where string) diag.List {
	e := &expander{src: src, filling: what}
	e.inputs(dst, in, where)
	return e.diags
}

// owner, field and code name what inputs fill, in messages and codes: a template through
// templateInputs, or an entity through the stage's inputs for it.
func (e *expander) owner() string {
	if e.filling == "" {
		return "the template"
	}
	return "the " + e.filling
}

func (e *expander) field() string {
	if e.filling == "" {
		return "templateInputs"
	}
	return "the stage's inputs"
}

func (e *expander) code(what string) string {
	if e.filling == "" {
		return "template-input-" + what
	}
	return "input-" + what
}
