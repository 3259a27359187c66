package validate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/pipeline/reference"
	"github.com/gantry-cd/gantry/pipeline/steps"
)

// maxGroupDepth: a step group directly inside this many other groups is rejected (spec 1.6).
const maxGroupDepth = 5

// stageCtx is what step checks need to know about their stage.
type stageCtx struct {
	stage      *pipeline.Stage
	index      int // index of the top-level stages element (parallel members share it)
	inParallel bool
	looped     bool
	concurrent bool // looped with all iterations running at once
	nodes      int  // steps and step groups, rollback lists included
	// names are the step and step group identifiers of each steps list (spec 1.8: unique
	// among siblings), by the list's group and whether it is a rollback list.
	names map[siblings]map[string]*yaml.Node
}

// siblings names one steps list of a stage: the stage's own (group nil) or a group's, forward or
// rollback; a parallel block's members belong to the list that holds the block.
type siblings struct {
	group    *pipeline.StepGroup
	rollback bool
}

func (c *checker) stage(s *pipeline.Stage, index int, inParallel bool) {
	c.sum.Stages++
	c.identifier(s.Node, "identifier", s.Identifier, "stage")
	c.name(s.Node, s.Name, "stage")
	if prev, ok := c.stageIDs[s.Identifier]; ok && s.Identifier != "" {
		c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "identifier")), "duplicate-identifier",
			"stage identifier %q is already used at line %d", s.Identifier, prev.Line).
			SetHint("stage identifiers must be unique across the whole pipeline, parallel blocks included")
	} else if s.Identifier != "" {
		c.stageIDs[s.Identifier] = pipeline.ValueAt(s.Node, "identifier")
	}
	c.timeout(s.Node, s.Timeout, "stage")
	c.variables(s.Variables, "stage")
	c.when(s.When, true)
	looped, concurrent := c.strategy(s.Strategy)
	c.failureStrategies(s.FailureStrategies, fsCtx{level: "stage"})
	ctx := &stageCtx{stage: s, index: index, inParallel: inParallel, looped: looped, concurrent: concurrent,
		names: map[siblings]map[string]*yaml.Node{}}

	if s.Type != "" && pipeline.Canonical(pipeline.StageTypes, s.Type) != s.Type && reference.IsStageType(s.Type) {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "type")), "unsupported-stage-type",
			"stage type %s is valid in the reference, but Gantry does not run %s stages yet", s.Type, s.Type).
			SetHint("Gantry runs stage types %s", strings.Join(pipeline.StageTypes, ", "))
		return
	}
	if s.Type != "" && pipeline.Canonical(pipeline.StageTypes, s.Type) != s.Type {
		d := c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "stage-type", "stage type %q is not supported", s.Type)
		if sug := pipeline.Closest(s.Type, pipeline.StageTypes); sug != "" {
			d.SetHint("did you mean %q? supported stage types: %s", sug, strings.Join(pipeline.StageTypes, ", "))
		} else {
			d.SetHint("supported stage types: %s", strings.Join(pipeline.StageTypes, ", "))
		}
		return
	}
	if s.Chain != nil {
		c.chainStage(s)
		return
	}
	c.stageSpec(s)
	ex := s.Execution()
	if ex == nil {
		return
	}
	if len(ex.Steps) == 0 && pipeline.Field(ex.Node, "steps") != nil {
		c.diags.Errorf(c.pos(pipeline.Field(ex.Node, "steps")), "empty", "stage %s has no steps", s.Identifier)
	}
	if s.Type == "Approval" && pipeline.Field(ex.Node, "rollbackSteps") != nil {
		c.diags.Errorf(c.pos(pipeline.Key(ex.Node, "rollbackSteps")), "approval-rollback", "Approval stages have no rollback section").
			SetHint("move rollback steps to a Custom or Deployment stage")
	}
	c.stepList(ctx, ex.Steps, false, nil)
	c.stepList(ctx, ex.RollbackSteps, true, nil)
	c.ambiguousReferences(ctx)
	if ctx.nodes > MaxStageSteps {
		c.diags.Unsupportedf(c.pos(pipeline.Key(ex.Node, "steps")), "too-many-steps",
			"stage %s has %d steps and step groups; Gantry runs at most %d in one stage, whose Temporal history holds a few events for each (Temporal ends a workflow at 51,200)", s.Identifier, ctx.nodes, MaxStageSteps).
			SetHint("split the steps into several stages one after the other, or run a repeated step with a matrix or repeat strategy: looped steps run in batches of their own")
	}
}

// MaxStageSteps is the most steps and step groups one stage may list (a looped step counts once:
// its iterations run in batch workflows of their own). A stage's result holds every step's node
// (about 500 bytes each) beside the outputs it kept (workflows.ExecutionOutputLimit, twice: in the
// tree and in the expression data); at this many both fit in one 2 MB payload.
const MaxStageSteps = 1000

// stageSpec checks what a stage's type-specific spec says; a key of another stage type was
// reported by the decoder, as an unknown key the reference ignores.
func (c *checker) stageSpec(s *pipeline.Stage) {
	switch {
	case s.Deployment != nil:
		c.deploymentStage(s, s.Deployment)
	case s.CI != nil:
		c.ciStage(s, s.CI)
	case s.Custom != nil:
		c.customStage(s, s.Custom)
	}
}

// customStage reports a Custom stage's environment, which Gantry accepts and does not act on:
// its provisioner would need to run (unsupported), otherwise a warning says it is ignored.
func (c *checker) customStage(s *pipeline.Stage, spec *pipeline.CustomStageSpec) {
	if spec.Environment == nil {
		return
	}
	if !c.provisionersNotRun(s, spec.Environment) {
		c.diags.Warnf(c.pos(pipeline.Key(spec.Node, "environment")), "ignored-field",
			"stage %s: the environment of a Custom stage is accepted but not acted on: its steps get no environment, service or infrastructure", s.Identifier).
			SetHint("deploy to an environment in a Deployment stage")
	}
}

// deploymentStage checks a Deployment stage's service and environment (one form of each), its
// deployment type, and that a looping strategy does not combine with a fan-out.
func (c *checker) deploymentStage(s *pipeline.Stage, spec *pipeline.DeploymentStageSpec) {
	c.provisionersNotRun(s, spec.Environments, spec.EnvironmentGroup)
	hasService := spec.Service != nil || spec.Services != nil || spec.ServiceConfig != nil
	hasEnv := spec.Environment != nil || spec.Environments != nil || spec.EnvironmentGroup != nil || spec.Infrastructure != nil
	if !hasService {
		c.diags.Errorf(c.pos(spec.Node), "missing-field", "Deployment stage %s has no service", s.Identifier).
			SetHint("add `service: {serviceRef: my_service}` (or `useFromStage`)")
	}
	if !hasEnv {
		c.diags.Errorf(c.pos(spec.Node), "missing-field", "Deployment stage %s has no environment", s.Identifier).
			SetHint("add `environment: {environmentRef: my_env, infrastructureDefinitions: [{identifier: my_infra}]}`")
	}
	if s.FailureStrategies == nil {
		// The reference refuses to save such a stage (its schema requires the field, and its
		// editor always writes one, rolling the stage back on any error).
		c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "missing-field", "Deployment stage %s has no failureStrategies; the reference requires them on every Deployment stage", s.Identifier).
			SetHint("add `failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]`, what the reference's editor writes")
	}
	count := func(nodes ...*yaml.Node) (n int) {
		for _, x := range nodes {
			if x != nil {
				n++
			}
		}
		return n
	}
	if count(spec.Service, spec.Services, spec.ServiceConfig) > 1 {
		c.diags.Errorf(c.pos(spec.Node), "deployment-form", "Deployment stage %s has more than one of service, services and serviceConfig", s.Identifier).
			SetHint("keep `service` for one service or `services` for several")
	}
	if count(spec.Environment, spec.Environments, spec.EnvironmentGroup, spec.Infrastructure) > 1 {
		c.diags.Errorf(c.pos(spec.Node), "deployment-form", "Deployment stage %s has more than one of environment, environments, environmentGroup and infrastructure", s.Identifier).
			SetHint("keep `environment` for one target, or `environments`/`environmentGroup` for several")
	}
	if s.Strategy != nil && (spec.Services != nil || spec.Environments != nil || spec.EnvironmentGroup != nil) {
		c.diags.Errorf(c.pos(pipeline.Key(s.Node, "strategy")), "strategy-fanout",
			"stage %s combines a looping strategy with multi-service or multi-environment deployment", s.Identifier).
			SetHint("use either `strategy` or `services`/`environments` fan-out, not both")
	}
	if t := spec.DeploymentType; t != "" && !slices.Contains(deploymentTypes, t) && !dynamic(t) && reference.IsDeploymentType(t) {
		d := c.diags.Unsupportedf(c.pos(pipeline.ValueAt(spec.Node, "deploymentType")), "unsupported-deployment-type",
			"deployment type %s is valid in the reference, but Gantry deploys only %s services yet", t, strings.Join(deploymentTypes, ", "))
		if t == "WinRm" {
			d.SetHint("Gantry does not reach WinRM hosts (no WinRM endpoint runs where Gantry is tested); Linux hosts deploy over SSH with deploymentType: Ssh")
		}
	} else {
		c.enum(spec.Node, "deploymentType", spec.DeploymentType, deploymentTypes, "deploymentType")
	}
	if spec.Service != nil && spec.Service.Kind == yaml.MappingNode {
		if pipeline.Field(spec.Service, "serviceRef") == nil && pipeline.Field(spec.Service, "useFromStage") == nil {
			c.diags.Errorf(c.pos(spec.Service), "missing-field", "service needs `serviceRef` or `useFromStage`")
		}
		var ds pipeline.DeploymentStageService
		c.dec.Decode(spec.Service, &ds, "stage service")
		if ds.ServiceRef != "" && !dynamic(ds.ServiceRef) {
			c.reference(ds.Node, "serviceRef", ds.ServiceRef, "service")
		}
	}
	if spec.Environment != nil && spec.Environment.Kind == yaml.MappingNode {
		if pipeline.Field(spec.Environment, "environmentRef") == nil && pipeline.Field(spec.Environment, "useFromStage") == nil {
			c.diags.Errorf(c.pos(spec.Environment), "missing-field", "environment needs `environmentRef` or `useFromStage`")
		}
		var de pipeline.DeploymentStageEnvironment
		c.dec.Decode(spec.Environment, &de, "stage environment")
		if de.EnvironmentRef != "" && !dynamic(de.EnvironmentRef) {
			c.reference(de.Node, "environmentRef", de.EnvironmentRef, "environment")
		}
		c.boolean(de.Node, "deployToAll", de.DeployToAll)
	}
}

// when checks a `when` block: a mapping with its status field, or a runtime input (spec 4.1).
func (c *checker) when(n *yaml.Node, stage bool) {
	if n == nil || (n.Kind == yaml.ScalarNode && inputs.IsRuntimeInput(n.Value)) {
		return
	}
	statuses := []string{"Success", "Failure", "All"}
	if stage {
		var w pipeline.StageWhen
		c.dec.Decode(n, &w, "stage when")
		c.enum(w.Node, "pipelineStatus", w.PipelineStatus, statuses, "when.pipelineStatus")
		return
	}
	var w pipeline.StepWhen
	c.dec.Decode(n, &w, "step when")
	c.enum(w.Node, "stageStatus", w.StageStatus, statuses, "when.stageStatus")
}

// stepList checks a steps or rollbackSteps list; groups are the enclosing step groups.
func (c *checker) stepList(ctx *stageCtx, list []pipeline.StepElement, rollback bool, groups []*pipeline.StepGroup) {
	for i := range list {
		c.stepElement(ctx, &list[i], rollback, groups, false)
	}
}

func (c *checker) stepElement(ctx *stageCtx, e *pipeline.StepElement, rollback bool, groups []*pipeline.StepGroup, inParallel bool) {
	if n := countKeys(e.Node, "step", "stepGroup", "parallel"); n != 1 {
		c.diags.Errorf(c.pos(e.Node), "element", "a steps entry must have exactly one key, `step`, `stepGroup` or `parallel`; found %d", n)
		return
	}
	switch {
	case e.Step != nil:
		c.step(ctx, e.Step, rollback, groups)
	case e.StepGroup != nil:
		c.stepGroup(ctx, e.StepGroup, rollback, groups)
	case inParallel:
		c.diags.Errorf(c.pos(e.Node), "nested-parallel", "parallel step blocks cannot be nested").
			SetHint("put the steps directly in the outer parallel block, or wrap them in a stepGroup")
	default:
		if len(e.Parallel) == 0 {
			c.diags.Errorf(c.pos(e.Node), "empty", "parallel block has no steps")
		}
		for i := range e.Parallel {
			c.stepElement(ctx, &e.Parallel[i], rollback, groups, true)
		}
	}
}

// unique registers a step or group identifier among its siblings (spec 1.8 revised): two steps of
// one stage may share an identifier in different step groups, as their paths differ; rollbackSteps
// lists are namespaces of their own.
func (c *checker) unique(ctx *stageCtx, obj *yaml.Node, id string, rollback bool, what string, groups []*pipeline.StepGroup) {
	if id == "" {
		return
	}
	key := siblings{rollback: rollback}
	if len(groups) > 0 {
		key.group = groups[len(groups)-1]
	}
	ns := ctx.names[key]
	if ns == nil {
		ns = map[string]*yaml.Node{}
		ctx.names[key] = ns
	}
	at := pipeline.ValueAt(obj, "identifier")
	if prev, ok := ns[id]; ok {
		where := "stage " + ctx.stage.Identifier
		if key.group != nil {
			where = "step group " + key.group.Identifier
		}
		c.diags.Errorf(c.pos(at), "duplicate-identifier", "%s identifier %q is already used in %s at line %d", what, id, where, prev.Line).
			SetHint("steps and step groups of one list (parallel blocks included) need distinct identifiers")
		return
	}
	ns[id] = at
}

func (c *checker) stepGroup(ctx *stageCtx, g *pipeline.StepGroup, rollback bool, groups []*pipeline.StepGroup) {
	c.sum.Groups++
	ctx.nodes++
	c.identifier(g.Node, "identifier", g.Identifier, "step group")
	c.name(g.Node, g.Name, "step group")
	c.unique(ctx, g.Node, g.Identifier, rollback, "step group", groups)
	if len(groups) >= maxGroupDepth {
		c.diags.Errorf(c.pos(g.Node), "group-depth", "step group %s is nested %d levels deep; at most %d enclosing groups are allowed", g.Identifier, len(groups), maxGroupDepth-1)
	}
	c.variables(g.Variables, "step group")
	c.when(g.When, false)
	c.strategy(g.Strategy)
	c.failureStrategies(g.FailureStrategies, fsCtx{level: "stepGroup", rollback: rollback, inGroup: true})
	if len(g.Steps) == 0 && pipeline.Field(g.Node, "steps") != nil {
		c.diags.Errorf(c.pos(pipeline.Field(g.Node, "steps")), "empty", "step group %s has no steps", g.Identifier)
	}
	if ctx.stage.Type == "CI" && g.StepGroupInfra != nil {
		c.diags.Unsupportedf(c.pos(pipeline.Key(g.Node, "stepGroupInfra")), "unsupported-field",
			"step group %s has its own stepGroupInfra in CI stage %s; Gantry runs a CI stage's steps in the stage's one pod", g.Identifier, ctx.stage.Identifier).
			SetHint("remove stepGroupInfra: the group's steps run in the stage's pod")
	} else {
		c.podGroup(g, groups)
	}
	inner := append(append([]*pipeline.StepGroup(nil), groups...), g)
	c.stepList(ctx, g.Steps, rollback, inner)
	c.stepList(ctx, g.RollbackSteps, true, inner)
}

func (c *checker) step(ctx *stageCtx, s *pipeline.Step, rollback bool, groups []*pipeline.StepGroup) {
	c.sum.Steps++
	ctx.nodes++
	c.identifier(s.Node, "identifier", s.Identifier, "step")
	c.name(s.Node, s.Name, "step")
	c.unique(ctx, s.Node, s.Identifier, rollback, "step", groups)
	path := []string{ctx.stage.Identifier}
	for _, g := range groups {
		path = append(path, g.Identifier)
	}
	c.stepPaths[strings.Join(append(path, s.Identifier), ".")] = true
	c.timeout(s.Node, s.Timeout, "step")
	c.when(s.When, false)
	c.strategy(s.Strategy)
	c.failureStrategies(s.FailureStrategies, fsCtx{level: "step", rollback: rollback, inGroup: len(groups) > 0})
	if s.Type == "" {
		return
	}
	entry, ok := c.stepType(s)
	if !ok {
		return
	}
	deploys := entry.Deploys != ""
	c.stepPlacement(ctx, s, entry)
	if entry.NoDotInName && strings.Contains(s.Name, ".") {
		c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "name")), "name", "%s step names cannot contain '.': %q", s.Type, s.Name)
	}
	specNode := s.Spec
	if specNode == nil {
		key := pipeline.Key(s.Node, "spec")
		if key == s.Node {
			c.diags.Errorf(c.pos(s.Node), "missing-field", "%s step %s is missing required field \"spec\"", s.Type, s.Identifier)
			return
		}
		// `spec:` with no value is the empty spec, as the reference reads it (compile too).
		specNode = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: key.Line, Column: key.Column}
	}
	spec := entry.New()
	c.dec.Decode(specNode, spec, s.Type+" spec")
	if entry.Traits.Container != "" {
		onMachine := ctx.stage.CI != nil && ctx.stage.CI.OnMachine
		c.containerStep(s, spec, groups, ctx.stage.Type == "CI", onMachine) // checked in its pod, or refused outside one
	} else {
		entry.CheckSpec(spec, specChecker{c})
	}
	if entry.DeploymentStage && !deploys && ctx.stage.Type != "Deployment" {
		c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "step-stage-type", "%s works on the stage's service and runs only in Deployment stages; stage %s is %s",
			s.Type, ctx.stage.Identifier, ctx.stage.Type)
	}
	if b, ok := spec.(*steps.Barrier); ok && b.BarrierRef != "" {
		c.barrierStep(ctx, s, b, rollback, groups)
	}
}

// stepType finds a step's catalog entry; a type Gantry does not run is unsupported when the
// reference has it and an error otherwise (reported, ok false).
func (c *checker) stepType(s *pipeline.Step) (steps.Entry, bool) {
	entry, ok := steps.Lookup(s.Type)
	if !ok && reference.IsStepType(s.Type) {
		d := c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "type")), "unsupported-step-type",
			"step type %s is valid in the reference, but Gantry does not run %s steps yet", s.Type, s.Type)
		// The list once per file, so the file's other problems stay visible.
		if c.listedStepTypes {
			d.SetHint("`gantry validate --list-types` lists the step types Gantry runs")
		} else {
			c.listedStepTypes = true
			d.SetHint("Gantry runs step types %s (`gantry validate --list-types`)", strings.Join(steps.Runnable(), ", "))
		}
		return entry, false
	}
	if !ok {
		d := c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "unknown-step-type", "step type %q is not known", s.Type)
		if sug := pipeline.Closest(s.Type, reference.StepTypes); sug != "" {
			d.SetHint("did you mean %q? `gantry validate --list-types` lists the step types Gantry runs", sug)
		} else {
			d.SetHint("`gantry validate --list-types` lists the step types Gantry runs")
		}
		return entry, false
	}
	return entry, true
}

// stepPlacement checks that a deploying step stands in a Deployment stage of its deployment type.
func (c *checker) stepPlacement(ctx *stageCtx, s *pipeline.Step, entry steps.Entry) {
	deploys := entry.Deploys != ""
	if deploys && ctx.stage.Type != "Deployment" {
		hint := fmt.Sprintf("move the step into a stage with `type: Deployment` and `deploymentType: %s`", entry.Deploys)
		if entry.OutsideDeployment {
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "type")), "step-stage-type", "%s steps run only in Deployment stages in Gantry; stage %s is %s",
				s.Type, ctx.stage.Identifier, ctx.stage.Type).SetHint("%s", hint)
		} else {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "step-stage-type", "%s steps deploy a service and run only in Deployment stages; stage %s is %s",
				s.Type, ctx.stage.Identifier, ctx.stage.Type).SetHint("%s", hint)
		}
	}
	if n := pipeline.Field(ctx.stage.Spec, "deploymentType"); deploys && ctx.stage.Type == "Deployment" && n != nil && n.Value != "" && !dynamic(n.Value) {
		if want := entry.Deploys; want != n.Value && entry.OutsideDeployment {
			// Valid in the reference (a Command step in a WinRm stage), not run by Gantry.
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "type")), "step-stage-type", "%s steps run in Gantry only in %s stages; stage %s deploys %s services",
				s.Type, want, ctx.stage.Identifier, n.Value)
		} else if want != n.Value && !(want == "Kubernetes" && n.Value == "NativeHelm") && slices.Contains(deploymentTypes, n.Value) {
			// In a stage of a type Gantry does not run (unsupported already) a step cannot be
			// judged: StandAloneTrafficShiftRollback serves Elastigroup stages as well as ECS.
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "type")), "step-stage-type", "%s steps do not run in stage %s, which deploys %s services",
				s.Type, ctx.stage.Identifier, n.Value).SetHint("the K8s and Helm steps deploy to Kubernetes, the AwsLambda steps AwsLambda services, the Ecs steps ECS services")
		}
	}
}

func (c *checker) stepVars(vars []steps.NameTypeValue, what string, types []string) {
	seen := map[string]bool{}
	for _, v := range vars {
		at := c.pos(pipeline.ValueAt(v.Node, "name"))
		switch {
		case v.Name == "var":
			c.diags.Errorf(at, "reserved-identifier", "%s name \"var\" is reserved", what).SetHint("pick another name")
		case !variableRe.MatchString(v.Name):
			c.diags.Errorf(at, "variable-name", "%s name %q is invalid", what, v.Name)
		case seen[v.Name]:
			c.diags.Errorf(at, "duplicate-variable", "%s %q is declared twice", what, v.Name)
		}
		seen[v.Name] = true
		c.enum(v.Node, "type", v.Type, types, what+" type")
	}
}

// DeploymentTypes are the deployment types Gantry runs.
func DeploymentTypes() []string { return slices.Clone(deploymentTypes) }

var deploymentTypes = []string{"Kubernetes", "NativeHelm", "AwsLambda", "ECS", "Asg", "CustomDeployment", "Ssh"}

// relativeStepRef finds the relative references that name a step by identifier alone:
// <+execution.steps.X...> (group 1 "execution.steps") and <+steps.X...> (group 1 "steps").
var relativeStepRef = regexp.MustCompile(`<\+(execution\.steps|steps)\.([a-zA-Z_][0-9a-zA-Z_]*)`)

// ambiguousReferences warns about a relative reference to a step identifier that the list it
// names lacks and that several steps of the stage share in different step groups (spec 1.8
// revised): evaluating it fails, naming them, since the reader cannot tell which was meant.
// <+execution.steps.X> names the stage's list; <+steps.X> the list of the step it is in.
func (c *checker) ambiguousReferences(ctx *stageCtx) {
	ex := ctx.stage.Execution()
	fqns := map[string][]string{}
	for _, list := range []struct {
		steps []pipeline.StepElement
		name  string
	}{{ex.Steps, "steps"}, {ex.RollbackSteps, "rollbackSteps"}} {
		pipeline.WalkSteps(list.steps, list.name == "rollbackSteps", []string{"pipeline", "stages", ctx.stage.Identifier, "spec", "execution", list.name}, nil,
			func(v pipeline.StepVisit) {
				if v.Step != nil && v.Step.Identifier != "" {
					fqns[v.Step.Identifier] = append(fqns[v.Step.Identifier], strings.Join(v.Path, "."))
				}
			})
	}
	if !slices.ContainsFunc(slices.Collect(maps.Values(fqns)), func(p []string) bool { return len(p) > 1 }) {
		return // no identifier is shared: nothing can be ambiguous (the common case, kept cheap)
	}
	reported := map[string]bool{}
	check := func(n *yaml.Node, root string, list map[string]bool) {
		scalars(n, func(s *yaml.Node) {
			if !strings.Contains(s.Value, "steps.") {
				return
			}
			for _, m := range relativeStepRef.FindAllStringSubmatch(s.Value, -1) {
				paths := fqns[m[2]]
				if m[1] != root || list[m[2]] || len(paths) < 2 || reported[m[0]] {
					continue
				}
				reported[m[0]] = true
				c.diags.Warnf(c.pos(s), "ambiguous-reference", "%s...> matches %d steps of stage %s: %s", m[0], len(paths), ctx.stage.Identifier, strings.Join(paths, ", ")).
					SetHint("write the step's path through its group (<+execution.steps.GROUP.steps.ID...>): evaluated, this reference fails")
			}
		})
	}
	check(ctx.stage.Node, "execution.steps", identifiers(ex.Steps))
	for _, steps := range [][]pipeline.StepElement{ex.Steps, ex.RollbackSteps} {
		pipeline.WalkSteps(steps, false, nil, nil, func(v pipeline.StepVisit) {
			if v.Step == nil {
				return
			}
			own := steps
			if len(v.Groups) > 0 {
				g := v.Groups[len(v.Groups)-1]
				own = g.Steps
				if v.Rollback && !slices.ContainsFunc(g.Steps, func(e pipeline.StepElement) bool { return holds(e, v.Step) }) {
					own = g.RollbackSteps
				}
			}
			check(v.Step.Node, "steps", identifiers(own))
		})
	}
}

// identifiers are the identifiers of a steps list's steps and groups, parallel blocks included.
func identifiers(list []pipeline.StepElement) map[string]bool {
	out := map[string]bool{}
	for _, e := range list {
		switch {
		case e.Step != nil:
			out[e.Step.Identifier] = true
		case e.StepGroup != nil:
			out[e.StepGroup.Identifier] = true
		default:
			for id := range identifiers(e.Parallel) {
				out[id] = true
			}
		}
	}
	return out
}

// holds reports whether a steps list element is, or has in its parallel block, the step s.
func holds(e pipeline.StepElement, s *pipeline.Step) bool {
	return e.Step == s || slices.ContainsFunc(e.Parallel, func(p pipeline.StepElement) bool { return holds(p, s) })
}

// scalars calls fn for every scalar below n.
func scalars(n *yaml.Node, fn func(*yaml.Node)) {
	if n == nil {
		return
	}
	if n.Kind == yaml.ScalarNode {
		fn(n)
	}
	for _, ch := range n.Content {
		scalars(ch, fn)
	}
}

// provisionersNotRun reports the environment provisioners under nodes, which Gantry does not
// run: those of multi-environment stages (environments, environmentGroup) and of Custom
// stages. A Deployment stage's `environment.provisioner` runs. found says whether there was one.
func (c *checker) provisionersNotRun(s *pipeline.Stage, nodes ...*yaml.Node) (found bool) {
	var find func(n *yaml.Node)
	find = func(n *yaml.Node) {
		if n == nil {
			return
		}
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "provisioner" && n.Content[i+1].Kind == yaml.MappingNode {
				found = true
				c.diags.Unsupportedf(c.pos(n.Content[i]), "unsupported-field",
					"stage %s: Gantry runs the environment provisioner of a Deployment stage's `environment` only; this one is not run", s.Identifier).
					SetHint("provision in a Deployment stage with one `environment`, or in the execution's steps")
				continue
			}
			find(n.Content[i+1])
		}
		for _, e := range n.Content {
			if n.Kind == yaml.SequenceNode {
				find(e)
			}
		}
	}
	for _, n := range nodes {
		find(n)
	}
	return found
}
