// Package compile turns a validated, input-merged pipeline into a plan.Plan: conditions compiled
// per spec 4.2, failure strategies overlaid per step (spec 5.4), step specs reduced to plain value
// trees, and step types checked against what the engine can run.
package compile

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/plan"
)

// Compile builds the plan of a merged pipeline. file names the source for diagnostics.
func Compile(file string, p *pipeline.Pipeline, resolved Resolved) (*plan.Plan, diag.List) {
	c := &compiler{file: file, src: pipeline.Source{File: file, Origins: resolved.Origins}, chains: resolved.Chains}
	c.codebase = p.Codebase
	c.selectors = c.selectorList(p.DelegateSelectors, nil)
	out := &plan.Plan{
		Version:     plan.Version,
		File:        file,
		Identifier:  p.Identifier,
		Name:        p.Name,
		Org:         p.OrgIdentifier,
		Project:     p.ProjectIdentifier,
		Description: p.Description,
		Tags:        p.Tags,
		Timeout:     p.Timeout,
		Variables:   c.variables(p.Variables),
	}
	for i := range p.Stages {
		out.Stages = append(out.Stages, c.stageElement(&p.Stages[i]))
	}
	out.Notifications = pipeline.PlanNotifications(p.NotificationRules)
	out.Codebase = c.planCodebase(resolved.Pods)
	resolved.place(out)
	plan.FreezeRules(out)
	return out, c.diags.Sort()
}

type compiler struct {
	codebase *pipeline.Codebase // the pipeline's CI codebase (spec 22.3)
	file     string
	src      pipeline.Source // positions, templates' copied nodes included
	diags    diag.List
	// selectors are the delegate selectors in effect where the compiler is (spec 1.9: the most
	// specific non-empty list of pipeline, stage, step group, step).
	selectors []string
	chains    map[string]*plan.Chain // the pipelines Pipeline stages run, by stage identifier
}

// selectorList reads a delegateSelectors list; an empty or absent one keeps the inherited list.
func (c *compiler) selectorList(n *yaml.Node, inherited []string) []string {
	if n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return inherited
	}
	var out []string
	for _, e := range n.Content {
		if strings.Contains(e.Value, "<+") {
			c.diags.Unsupportedf(c.src.Pos(e), "unsupported-expression-selector", "delegate selector %q is an expression; this version routes by fixed selectors", e.Value).
				SetHint("write the selector itself, e.g. `delegateSelectors: [gpu]`")
			continue
		}
		if e.Value != "" {
			out = append(out, e.Value)
		}
	}
	if len(out) == 0 {
		return inherited
	}
	return out
}

// within runs f with the selectors of a nested level in effect.
func (c *compiler) within(n *yaml.Node, f func()) {
	saved := c.selectors
	c.selectors = c.selectorList(n, saved)
	f()
	c.selectors = saved
}

func (c *compiler) variables(vs []pipeline.Variable) []plan.Variable {
	var out []plan.Variable
	for _, v := range vs {
		if strings.Contains(v.Value, "executionInput()") {
			c.diags.Unsupportedf(c.src.Pos(v.Node), "unsupported-variable-execution-input",
				"variable %s asks for an execution-time input; only step fields can be execution-time inputs in this version", v.Name).
				SetHint("supply it as a runtime input (--set or an input set)")
		}
		val := v.Value
		if val == "" && v.Default != "" {
			val = v.Default
		}
		out = append(out, plan.Variable{Name: v.Name, Type: v.Type, Value: val})
	}
	return out
}

func (c *compiler) stageElement(e *pipeline.StageElement) *plan.Node {
	if e.Stage == nil {
		n := &plan.Node{Kind: plan.KindParallel}
		for i := range e.Parallel {
			n.Children = append(n.Children, c.stageElement(&e.Parallel[i]))
		}
		return n
	}
	s := e.Stage
	n := &plan.Node{
		Strategy: c.strategy(s.Strategy),
		Kind:     plan.KindStage, ID: s.Identifier, Name: s.Name, Type: s.Type,
		Description: s.Description, Tags: s.Tags, Timeout: s.Timeout,
		Variables: c.variables(s.Variables),
		When:      c.stageWhen(s.When),
	}
	if s.Chain != nil {
		n.Children = []*plan.Node{c.chainStep(s)}
	}
	if ex := s.Execution(); ex != nil {
		c.within(s.DelegateSelectors, func() {
			// Rollback steps do not inherit the stage's failure strategies (spec 5.4).
			n.Children = c.steps(ex.Steps, false, c.level(s.FailureStrategies, ""))
			n.Rollback = c.steps(ex.RollbackSteps, true, nil)
			shiftedRules(n)
			asgNames(n)
			if s.CI == nil {
				return
			}
			if deps := c.serviceDependencies(s.CI.ServiceDependencies, c.level(s.FailureStrategies, "")); len(deps) > 0 {
				n.Children = append(deps, n.Children...)
			}
			if s.CI.CloneCodebase == "true" && c.codebase != nil {
				clone := c.cloneCodebase(c.level(s.FailureStrategies, ""))
				n.Children = append([]*plan.Node{clone}, n.Children...)
			}
		})
	}
	return n
}

// chainStep is the one step of a `type: Pipeline` stage: it runs the chained pipeline as a
// child execution, so the stage's failure strategies (retry included) apply to the child's
// outcome as to any step's.
func (c *compiler) chainStep(s *pipeline.Stage) *plan.Node {
	ch := c.chains[s.Identifier]
	if ch == nil {
		c.diags.Errorf(c.src.Pos(s.Node), "missing-entity", "stage %s: the pipeline it chains was not loaded", s.Identifier)
		return &plan.Node{Kind: plan.KindStep}
	}
	ins := map[string]any{}
	for tok, expr := range ch.Inputs {
		ins[tok] = expr
	}
	name := ch.Plan.Name
	if name == "" {
		name = ch.Pipeline
	}
	return &plan.Node{
		Kind: plan.KindStep, ID: ch.Pipeline, Name: "Run pipeline " + name, Type: "Pipeline",
		Spec:      map[string]any{"org": ch.Org, "project": ch.Project, "pipeline": ch.Pipeline, "inputs": ins},
		OnFailure: c.level(s.FailureStrategies, ""),
		Traits:    &plan.Traits{Builtin: "pipeline"},
		Chain:     ch,
	}
}

// cloneCodebase is the step a CI stage with cloneCodebase starts with (spec 22.1): the
// pipeline's codebase cloned into the workspace, /harness, by the worker.
func (c *compiler) cloneCodebase(onFailure map[string]*plan.Action) *plan.Node {
	cb := c.codebase
	depth := cb.Depth
	if depth == "" {
		depth = "50" // the reference's default
	}
	spec := map[string]any{"connectorRef": cb.ConnectorRef, "repoName": cb.RepoName, "build": pipeline.Value(cb.Build),
		"depth": depth, "cloneDirectory": "/harness", "checkout": "<+codebase.commitSha>"}
	if cb.SslVerify != "" {
		spec["sslVerify"] = cb.SslVerify
	}
	if cb.PrCloneStrategy != "" {
		spec["prCloneStrategy"] = cb.PrCloneStrategy
	}
	e, _ := steps.Lookup(steps.CloneStepType)
	traits := steps.TraitsOf(steps.CloneStepType)
	traits.Outcome = "codebase" // its commit becomes <+codebase.commitSha>
	return &plan.Node{Kind: plan.KindStep, ID: steps.CloneStepID, Name: "Clone codebase", Type: steps.CloneStepType,
		Spec: spec, Unresolved: e.Unresolved, Traits: traits, OnFailure: onFailure,
		Selectors: c.selectors, Inputs: execInputs(spec, []string{"spec"}, nil)}
}

// serviceDependencies are a CI stage's service dependencies as the Background steps they are
// (spec 22.1): started, after the codebase clone, before the stage's first step.
func (c *compiler) serviceDependencies(n *yaml.Node, onFailure map[string]*plan.Action) []*plan.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var deps []pipeline.DependencyElement
	(&pipeline.Decoder{File: c.file, Origins: c.src.Origins, Diags: &diag.List{}}).Decode(n, &deps, "serviceDependencies") // checked by validate
	var out []*plan.Node
	for _, d := range deps {
		if d.Spec == nil {
			continue
		}
		spec, _ := pipeline.Value(d.Spec.Node).(map[string]any)
		delete(spec, "portBindings")
		delete(spec, "description")
		name := d.Name
		if name == "" {
			name = d.Identifier
		}
		e, _ := steps.Lookup(steps.ServiceStepType)
		out = append(out, &plan.Node{Kind: plan.KindStep, ID: d.Identifier, Name: name, Type: steps.ServiceStepType,
			Spec: spec, Unresolved: e.Unresolved, Traits: steps.TraitsOf(steps.ServiceStepType), OnFailure: onFailure,
			Selectors: c.selectors, Inputs: execInputs(spec, []string{"spec"}, nil)})
	}
	return out
}

// planCodebase is the codebase as <+codebase.*> shows it; its repository URL is the one the CI
// stages' pods resolved.
func (c *compiler) planCodebase(pods map[string]*plan.Pod) *plan.Codebase {
	cb := c.codebase
	if cb == nil {
		return nil
	}
	out := &plan.Codebase{}
	for _, key := range slices.Sorted(maps.Keys(pods)) {
		if gc, ok := pods[key].Git[cb.ConnectorRef]; ok {
			repo := &plan.GitStore{Connector: gc, RepoName: cb.RepoName}
			out.RepoURL = repo.RepoDisplay()
			if gc.API != nil {
				out.Status = repo
			}
			break
		}
	}
	if cb.Build != nil && cb.Build.Kind == yaml.MappingNode {
		var b pipeline.CodebaseBuild
		(&pipeline.Decoder{File: c.file, Origins: c.src.Origins, Diags: &diag.List{}}).Decode(cb.Build, &b, "codebase build") // checked by validate
		out.BuildType = b.Type
		if b.Spec != nil {
			out.Branch, out.Tag, out.PRNumber, out.CommitSha = b.Spec.Branch, b.Spec.Tag, b.Spec.Number, b.Spec.CommitSha
		}
	}
	return out
}

// steps compiles a steps list; inherited is the failure strategy its steps inherit.
func (c *compiler) steps(list []pipeline.StepElement, rollback bool, inherited map[string]*plan.Action) []*plan.Node {
	var out []*plan.Node
	for i := range list {
		out = append(out, c.stepElement(&list[i], rollback, inherited))
	}
	return out
}

func (c *compiler) stepElement(e *pipeline.StepElement, rollback bool, inherited map[string]*plan.Action) *plan.Node {
	switch {
	case e.Step != nil:
		return c.step(e.Step, rollback, inherited)
	case e.StepGroup != nil:
		g := e.StepGroup
		inner := overlay(inherited, c.level(g.FailureStrategies, g.Identifier))
		// A group's own rollback steps inherit only when the group sits in a rollback tree.
		var rb map[string]*plan.Action
		if rollback {
			rb = inner
		}
		n := &plan.Node{
			Kind: plan.KindGroup, ID: g.Identifier, Name: g.Name, Description: g.Description,
			Strategy:    c.strategy(g.Strategy),
			Variables:   c.variables(g.Variables),
			When:        c.stepWhen(g.When, rollback),
			Provisioner: g.Provisioner,
		}
		c.within(g.DelegateSelectors, func() {
			n.Children = c.steps(g.Steps, rollback, inner)
			n.Rollback = c.steps(g.RollbackSteps, true, rb)
		})
		return n
	default:
		n := &plan.Node{Kind: plan.KindParallel}
		for i := range e.Parallel {
			n.Children = append(n.Children, c.stepElement(&e.Parallel[i], rollback, inherited))
		}
		return n
	}
}

func (c *compiler) step(s *pipeline.Step, rollback bool, inherited map[string]*plan.Action) *plan.Node {
	n := &plan.Node{
		Strategy: c.strategy(s.Strategy),
		Kind:     plan.KindStep, ID: s.Identifier, Name: s.Name, Type: s.Type,
		Description: s.Description, Timeout: s.Timeout,
		When:      c.stepWhen(s.When, rollback),
		Spec:      pipeline.Value(s.Spec),
		OnFailure: overlay(inherited, c.level(s.FailureStrategies, "")),
	}
	if n.Spec == nil {
		n.Spec = map[string]any{} // `spec:` with no value is the empty spec
	}
	if e, ok := steps.Lookup(s.Type); ok {
		n.Unresolved = e.Unresolved
		n.Traits = steps.TraitsOf(s.Type)
		for _, path := range e.Typed {
			typedField(n.Spec, s.Spec, path)
		}
	}
	n.Selectors = c.selectorList(pipeline.Field(s.Spec, "delegateSelectors"), c.selectorList(s.DelegateSelectors, c.selectors))
	n.Inputs = execInputs(n.Spec, []string{"spec"}, nil)
	if s.Enforce != nil && len(s.Enforce.PolicySets) > 0 {
		c.diags.Warnf(c.src.Pos(s.Enforce.Node), "not-implemented",
			"step %q: enforce.policySets (On Step Start policies) is not implemented yet and is ignored", s.Identifier)
	}
	if strings.Contains(s.Timeout, "executionInput()") {
		c.diags.Errorf(c.src.Pos(s.Node), "execution-input",
			"the timeout of step %q cannot be an execution-time input (spec 1.10)", s.Identifier)
	}
	if !steps.Runs(s.Type) {
		c.diags.Unsupportedf(c.src.Pos(s.Node), "unsupported-step-type",
			"step %q has type %s, which this version of the engine validates but cannot run yet", s.Identifier, s.Type).
			SetHint("runnable step types: %s", strings.Join(steps.Runnable(), ", "))
	}
	return n
}

// execInputs finds the execution-time inputs of a spec tree. key is the user-facing name
// (named list entries by their name), at the tree location.
func execInputs(v any, key, at []string) []plan.ExecInput {
	switch x := v.(type) {
	case string:
		in, err := inputs.Parse(x)
		if err != nil || !in.ExecutionInput {
			return nil
		}
		return []plan.ExecInput{{Key: strings.Join(key, "."), At: append([]string(nil), at...), Default: in.Default,
			AllowedValues: in.AllowedValues, Regex: in.Regex}}
	case map[string]any:
		var out []plan.ExecInput
		for _, k := range sortedKeys(x) {
			out = append(out, execInputs(x[k], with(key, k), with(at, k))...)
		}
		return out
	case []any:
		var out []plan.ExecInput
		for i, e := range x {
			idx := strconv.Itoa(i)
			if m, ok := e.(map[string]any); ok && m["name"] != nil && m["identifier"] == nil {
				// name/value lists are addressed by name: spec.environmentVariables.WHO
				if val, ok := m["value"]; ok {
					out = append(out, execInputs(val, with(key, fmt.Sprint(m["name"])), with(at, idx, "value"))...)
					continue
				}
			}
			out = append(out, execInputs(e, with(key, idx), with(at, idx))...)
		}
		return out
	}
	return nil
}

func with(s []string, more ...string) []string { return append(append([]string(nil), s...), more...) }

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Status aliases of spec 4.2, as condition-mode JEXL.
const (
	onStageSuccess    = "<+OnStageSuccess>"
	onStageFailure    = "<+OnStageFailure>"
	onPipelineSuccess = "<+OnPipelineSuccess>"
	onPipelineFailure = "<+OnPipelineFailure>"
	onRollbackMode    = "<+OnRollbackModeExecution>"
	always            = "<+Always>"
)

func (c *compiler) stageWhen(n *yaml.Node) string {
	if n == nil {
		return onPipelineSuccess
	}
	var w pipeline.StageWhen
	c.decode(n, &w)
	return condition(w.PipelineStatus, w.Condition, onPipelineSuccess, onPipelineFailure)
}

func (c *compiler) stepWhen(n *yaml.Node, rollback bool) string {
	if n == nil {
		if rollback {
			return onRollbackMode + " || " + onStageFailure
		}
		return onStageSuccess
	}
	var w pipeline.StepWhen
	c.decode(n, &w)
	return condition(w.StageStatus, w.Condition, onStageSuccess, onStageFailure)
}

// condition applies the compilation table of spec 4.2. A condition still holding a runtime
// input at run time is false.
func condition(status, cond, success, failure string) string {
	base := always
	switch status {
	case "Success":
		base = success
	case "Failure":
		base = failure
	}
	cond = strings.TrimSpace(cond)
	if cond == "" {
		return base
	}
	if pipeline.IsRuntimeInput(cond) {
		cond = "false"
	}
	return base + " && (" + cond + ")"
}

func (c *compiler) decode(n *yaml.Node, out any) {
	d := &pipeline.Decoder{File: c.file, Origins: c.src.Origins, Diags: &c.diags}
	d.Decode(n, out, "when")
}

// typedField keeps the mapping or list at path in a step's spec as the document it describes
// (numbers, booleans and nulls typed as YAML reads them), not as the strings Value makes of
// them: a Policy payload's policies compare input.replicas > 10.
func typedField(spec any, node *yaml.Node, path []string) {
	m, _ := spec.(map[string]any)
	for _, k := range path[:len(path)-1] {
		m, _ = m[k].(map[string]any)
		node = pipeline.Field(node, k)
	}
	last := path[len(path)-1]
	v := pipeline.Field(node, last)
	if m == nil || v == nil || (v.Kind != yaml.MappingNode && v.Kind != yaml.SequenceNode) {
		return
	}
	var typed any
	if err := v.Decode(&typed); err == nil {
		m[last] = typed
	}
}
