package validate

import (
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/stepspec"
)

// This file checks the paths `<+...>` expressions read against what the pipeline defines
// (stages, steps and step groups by identifier, pipeline, stage and group variables, loop
// variables, the output variables of steps that declare them), so that a typo is caught before
// the run rather than rendered as null. Only a path that can never resolve is reported: where
// the pipeline leaves something open (a template not found, a list given as a runtime input, a
// loop's axes given as an expression, a chained pipeline's inputs) nothing below it is judged.

// defNode is a stage, step group or step as references see it.
type defNode struct {
	id     string
	kind   string // "stage", "stepGroup" or "step"
	typ    string // stage or step type
	node   *yaml.Node
	opaque bool // a template that was not found stands for it: its contents are unknown
	looped bool // its strategy makes several nodes with postfixed identifiers
	// vars are its variables' names; nil when they are not all known.
	vars map[string]bool
	// below are the steps and groups inside it, any depth (stage: forward and rollback), by
	// identifier; children are those of its own list (a group's direct steps).
	below []*defNode
	// outputs are a step's declared output variables; nil when not known.
	outputs map[string]bool
	// loop is what its strategy makes visible: "matrix", "repeat" or "parallelism"; axes are
	// the matrix's axes, nil when not known.
	loop string
	axes map[string]bool
}

// refScope is where an expression sits: its stage, enclosing groups, step and loops.
type refScope struct {
	stage  *defNode
	groups []*defNode
	step   *defNode
	loops  []*defNode
	skip   bool // under a chained pipeline's spec: another pipeline's context
}

type refChecker struct {
	c      *checker
	vars   map[string]bool // pipeline variables; nil when not known
	stages []*defNode
	byNode map[*yaml.Node]*defNode
	// entities, for the pass that knows them, are the Deployment stages' resolved entities by
	// stage identifier: that pass judges only the paths into their variables.
	entities map[string]EntityVariables
}

// EntityVariables are the variables a Deployment stage's resolved service, environment and
// infrastructure define, as its steps read them (spec 10.2, 10.3); a nil set is not known and
// is not judged.
type EntityVariables struct {
	Service, Environment, Infrastructure string // what the stage deploys, for messages
	// ServiceVars are <+serviceVariables.V>: the service's variables and the environment's
	// overrides for it; EnvVars are <+env.variables.V>; InfraVars <+infra.variables.V>.
	ServiceVars, EnvVars, InfraVars map[string]bool
}

// EntityReferences checks the paths into a Deployment stage's service, environment and
// infrastructure variables against the entities the stage resolved to (by stage identifier),
// so that `<+serviceVariables.prot>` is caught before the run as the pipeline's own paths are.
func EntityReferences(src pipeline.Source, p *pipeline.Pipeline, stages map[string]EntityVariables) diag.List {
	if p == nil || p.Node == nil || len(stages) == 0 {
		return nil
	}
	c := &checker{file: src.File, src: src}
	r := &refChecker{c: c, byNode: map[*yaml.Node]*defNode{}, entities: stages}
	r.index(pipeline.Field(p.Node, "stages"), nil)
	r.walk(p.Node, "", refScope{})
	return c.diags
}

// references checks every expression of a pipeline for paths that can never resolve.
func (c *checker) references(p *pipeline.Pipeline) {
	if p == nil || p.Node == nil || pipeline.Unexpanded(p.Node) {
		return
	}
	r := &refChecker{c: c, byNode: map[*yaml.Node]*defNode{}, vars: variableNames(pipeline.Field(p.Node, "variables"))}
	r.index(pipeline.Field(p.Node, "stages"), nil)
	r.walk(p.Node, "", refScope{})
}

// variableNames returns the names of a literal variables list, nil when it is not one.
func variableNames(n *yaml.Node) map[string]bool {
	out := map[string]bool{}
	if n == nil {
		return out
	}
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	for _, v := range n.Content {
		name := pipeline.Field(v, "name")
		if name == nil || name.Kind != yaml.ScalarNode || expressions.Has(name.Value) {
			return nil
		}
		out[name.Value] = true
	}
	return out
}

// index records the stages, groups and steps below n; each of parents collects the steps and
// groups below it.
func (r *refChecker) index(n *yaml.Node, parents []*defNode) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, e := range n.Content {
			r.index(e, parents)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			kind := ""
			switch k {
			case "stage":
				if len(parents) == 0 {
					kind = "stage"
				}
			case "step", "stepGroup":
				if len(parents) > 0 {
					kind = k
				}
			}
			if kind == "" || v.Kind != yaml.MappingNode {
				r.index(v, parents)
				continue
			}
			d := r.define(v, kind)
			for _, p := range parents {
				p.below = append(p.below, d)
			}
			if kind == "stage" {
				r.stages = append(r.stages, d)
			}
			if kind != "step" && !d.opaque {
				r.index(v, append(slices.Clone(parents), d))
			}
		}
	}
}

func (r *refChecker) define(n *yaml.Node, kind string) *defNode {
	d := &defNode{kind: kind, node: n, opaque: holdsUnexpanded(n)}
	if id := pipeline.Field(n, "identifier"); id != nil {
		d.id = id.Value
	}
	if t := pipeline.Field(n, "type"); t != nil {
		d.typ = t.Value
	}
	if !d.opaque {
		d.vars = variableNames(pipeline.Field(n, "variables"))
	}
	if s := pipeline.Field(n, "strategy"); s != nil {
		d.looped = true
		d.loop = "unknown"
		for _, l := range []string{"matrix", "repeat", "parallelism"} {
			if m := pipeline.Field(s, l); m != nil {
				d.loop = l
				if l == "matrix" && m.Kind == yaml.MappingNode {
					d.axes = map[string]bool{}
					for i := 0; i+1 < len(m.Content); i += 2 {
						if a := m.Content[i].Value; a != "maxConcurrency" && a != "exclude" && a != "nodeName" {
							d.axes[a] = true
						}
					}
				}
			}
		}
	}
	if kind == "step" && !d.opaque {
		d.outputs = outputNames(d.typ, pipeline.Field(pipeline.Field(n, "spec"), "outputVariables"))
	}
	r.byNode[n] = d
	return d
}

// outputNames returns the output variables a step declares, for the step types whose outputs
// are exactly those (a ShellScript's, a CI Run step's); nil otherwise.
func outputNames(typ string, list *yaml.Node) map[string]bool {
	if typ != stepspec.ShellScript && typ != stepspec.Run {
		return nil
	}
	return variableNames(list)
}

// walk visits every scalar below n with the scope it is evaluated in.
func (r *refChecker) walk(n *yaml.Node, key string, sc refScope) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			inner := sc
			if d := r.byNode[v]; d != nil {
				if d.opaque {
					continue
				}
				inner.loops = slices.Clone(sc.loops)
				switch d.kind {
				case "stage":
					inner.stage = d
				case "stepGroup":
					inner.groups = append(slices.Clone(sc.groups), d)
				case "step":
					inner.step = d
				}
				if d.looped {
					inner.loops = append(inner.loops, d)
				}
			}
			if k == "spec" && inner.stage != nil && inner.stage.typ == "Pipeline" && inner.step == nil {
				inner.skip = true // a chained pipeline's inputs and outputs read its own context
			}
			r.walk(v, k, inner)
		}
	case yaml.SequenceNode:
		for _, v := range n.Content {
			r.walk(v, key, sc)
		}
	case yaml.ScalarNode:
		if !sc.skip && strings.Contains(n.Value, "<+") && !inputs.IsRuntimeInput(n.Value) {
			r.scalar(n, key, sc)
		}
	}
}

func (r *refChecker) scalar(n *yaml.Node, key string, sc refScope) {
	mode := expressions.Text
	if conditionKeys[key] {
		mode = expressions.Condition
	}
	t, err := expressions.Compile(n.Value, mode)
	if err != nil {
		return // reported as an expression error
	}
	for _, ref := range t.References() {
		if msg, near := r.resolve(ref.Path, sc); msg != "" {
			d := r.c.diags.Warnf(r.c.src.OffsetPos(n, ref.Offset), diag.UnknownReference,
				"<+%s> can never resolve: %s; it would render as null", strings.Join(ref.Path, "."), msg)
			if near != "" {
				d.SetHint("did you mean %s?", near)
			}
		}
	}
}

// unknown is a resolve verdict, "OWNER has no WHAT `name`", and the nearest name it has.
func unknown(owner, what, name string, defined []string) (string, string) {
	msg := owner + " has no " + what + " " + quote(name)
	near := pipeline.Closest(name, defined)
	if near == "" && len(defined) > 0 && len(defined) <= 8 {
		slices.Sort(defined)
		msg += " (it has " + strings.Join(defined, ", ") + ")"
	}
	return msg, quote(near)
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// resolve returns why path can never resolve from sc, or "" when it may.
func (r *refChecker) resolve(path []string, sc refScope) (string, string) {
	if len(path) < 2 {
		return "", ""
	}
	if r.entities != nil {
		return r.entityVariable(path, sc)
	}
	rest := path[1:]
	switch path[0] {
	case "pipeline":
		switch {
		case rest[0] == "variables" && len(rest) >= 2:
			return r.variable(r.vars, rest[1], "the pipeline")
		case rest[0] == "stages" && len(rest) >= 2:
			st := r.stage(rest[1])
			if st == nil {
				return unknown("the pipeline", "stage", rest[1], ids(r.stages))
			}
			return r.inStage(st, rest[2:])
		}
	case "stage":
		if sc.stage != nil {
			return r.inStage(sc.stage, rest)
		}
	case "execution":
		if sc.stage != nil {
			return r.inExecution(sc.stage, rest)
		}
	case "steps":
		if sc.step != nil {
			owner := sc.stage
			if len(sc.groups) > 0 {
				owner = sc.groups[len(sc.groups)-1]
			}
			if owner != nil {
				return r.inSteps(owner, rest)
			}
		}
	case "stepGroup":
		if len(sc.groups) > 0 && rest[0] == "variables" && len(rest) >= 2 {
			g := sc.groups[len(sc.groups)-1]
			return r.variable(g.vars, rest[1], "step group "+g.id)
		}
	case "matrix":
		return r.loopVar(sc, "matrix", rest[0])
	case "repeat":
		return r.loopVar(sc, "repeat", "")
	}
	return "", ""
}

// entityVariable judges a path into the variables of the service, environment or
// infrastructure the expression's stage deploys.
func (r *refChecker) entityVariable(path []string, sc refScope) (string, string) {
	if sc.stage == nil {
		return "", ""
	}
	ev, ok := r.entities[sc.stage.id]
	if !ok {
		return "", ""
	}
	switch {
	case path[0] == "serviceVariables":
		return r.variable(ev.ServiceVars, path[1], "service "+ev.Service)
	case path[0] == "serviceVariableOverrides":
		// Enclosing step groups' variables override these (spec 10.3 levels 1 and 2).
		vars := maps.Clone(ev.ServiceVars)
		for _, g := range sc.groups {
			if g.vars == nil || vars == nil {
				return "", ""
			}
			maps.Copy(vars, g.vars)
		}
		return r.variable(vars, path[1], "service "+ev.Service)
	case path[0] == "env" && path[1] == "variables" && len(path) >= 3:
		return r.variable(ev.EnvVars, path[2], "environment "+ev.Environment)
	case path[0] == "infra" && path[1] == "variables" && len(path) >= 3:
		return r.variable(ev.InfraVars, path[2], "infrastructure "+ev.Infrastructure)
	}
	return "", ""
}

func (r *refChecker) variable(vars map[string]bool, name, owner string) (string, string) {
	if vars == nil || vars[name] {
		return "", ""
	}
	return unknown(owner, "variable", name, sortedKeys(vars))
}

// stage finds a stage by identifier, or by the postfixed identifier of a looped stage's node.
func (r *refChecker) stage(id string) *defNode { return find(r.stages, id) }

func find(nodes []*defNode, id string) *defNode {
	for _, d := range nodes {
		if d.id == id || (d.looped && strings.HasPrefix(id, d.id+"_")) {
			return d
		}
	}
	return nil
}

func (r *refChecker) inStage(st *defNode, rest []string) (string, string) {
	if st.opaque || len(rest) < 2 {
		return "", ""
	}
	switch rest[0] {
	case "variables":
		return r.variable(st.vars, rest[1], "stage "+st.id)
	case "spec":
		if rest[1] == "execution" {
			return r.inExecution(st, rest[2:])
		}
		spec := pipeline.Field(st.node, "spec")
		if spec == nil || spec.Kind != yaml.MappingNode || st.typ == "Pipeline" {
			return "", ""
		}
		// The run attaches the provisioned environment under spec.environment.
		if pipeline.Field(spec, rest[1]) == nil && rest[1] != "environment" {
			var fields []string
			for i := 0; i+1 < len(spec.Content); i += 2 {
				fields = append(fields, spec.Content[i].Value)
			}
			return unknown("stage "+st.id+"'s spec", "field", rest[1], fields)
		}
	}
	return "", ""
}

func (r *refChecker) inExecution(st *defNode, rest []string) (string, string) {
	if st.opaque || len(rest) < 2 || (rest[0] != "steps" && rest[0] != "rollbackSteps") {
		return "", ""
	}
	return r.inSteps(st, rest[1:])
}

// inSteps checks a path below a steps list, rest starting with a step's identifier. A relative
// reference may name a step nested in groups below the list (spec 1.8), so any depth counts.
func (r *refChecker) inSteps(owner *defNode, rest []string) (string, string) {
	if owner.opaque || len(rest) == 0 {
		return "", ""
	}
	step := find(owner.below, rest[0])
	if step == nil {
		kind := "stage "
		if owner.kind == "stepGroup" {
			kind = "step group "
		}
		return unknown(kind+owner.id, "step", rest[0], ids(owner.below))
	}
	return r.inStep(step, rest[1:])
}

func (r *refChecker) inStep(step *defNode, rest []string) (string, string) {
	if len(rest) < 2 {
		return "", ""
	}
	switch {
	case step.kind == "stepGroup" && (rest[0] == "steps" || rest[0] == "rollbackSteps"):
		return r.inSteps(step, rest[1:])
	case step.kind == "stepGroup" && rest[0] == "variables":
		return r.variable(step.vars, rest[1], "step group "+step.id)
	case step.kind == "step" && rest[0] == "output" && rest[1] == "outputVariables" && len(rest) >= 3:
		if step.outputs != nil && !step.outputs[rest[2]] {
			return unknown("step "+step.id, "output variable", rest[2], sortedKeys(step.outputs))
		}
	}
	return "", ""
}

// loopVar checks a loop variable against the loops around the expression.
func (r *refChecker) loopVar(sc refScope, loop, axis string) (string, string) {
	var axes []string
	for _, l := range sc.loops {
		if l.loop == "unknown" || (l.loop == loop && (loop != "matrix" || l.axes == nil || l.axes[axis])) {
			return "", ""
		}
		if l.loop == loop {
			axes = append(axes, sortedKeys(l.axes)...)
		}
	}
	if len(axes) == 0 {
		return "no " + loop + " strategy encloses this expression", ""
	}
	return unknown("the enclosing matrix", "axis", axis, axes)
}

func ids(nodes []*defNode) []string {
	var out []string
	for _, d := range nodes {
		if d.id != "" && !slices.Contains(out, d.id) {
			out = append(out, d.id)
		}
	}
	return out
}
