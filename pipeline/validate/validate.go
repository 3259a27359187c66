// Package validate checks a parsed pipeline for everything a run needs (spec 1, 4-7, 9, 10):
// identifiers, uniqueness, step specs, failure strategies, conditions, looping strategies,
// barriers, durations, runtime inputs and expression syntax. It never changes the pipeline and
// returns every problem it finds, each at its own position.
package validate

import (
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/templates"
)

// Summary counts what a valid pipeline holds, for `gantry validate`'s one-line report.
type Summary struct {
	Stages int
	Steps  int
	Groups int
}

type checker struct {
	file  string
	src   pipeline.Source // positions: the file, and the nodes copied into it from templates
	diags diag.List
	dec   *pipeline.Decoder
	sum   Summary

	stageIDs map[string]*yaml.Node
	// stepPaths are the steps' base paths (stage.group.step), for notification step filters
	stepPaths map[string]bool
	// listedStepTypes: the file's first unsupported step type has listed the runnable ones.
	listedStepTypes bool
	// partial: part of the pipeline comes from a template that was not found (a plain
	// validate), so its stages and steps are not all known.
	partial  bool
	barriers map[string]bool
	// positions of Barrier steps by barrier identifier, for deadlock detection
	barrierUses map[string][]barrierUse
	lib         *templates.Library // for template files: what their own links resolve to
	// codebase is the pipeline's CI codebase; ciInfras the CI stages so far with an
	// infrastructure a later stage may use (spec 22).
	codebase *pipeline.Codebase
	ciInfras map[string]bool
}

// File validates a parsed pipeline file. Parse diagnostics are not repeated here.
func File(f *pipeline.File) (Summary, diag.List) { return FileWith(f, nil) }

// FileWith validates a file with the templates that links inside a template file resolve to.
func FileWith(f *pipeline.File, lib *templates.Library) (Summary, diag.List) {
	c := &checker{file: f.Name, src: f.Source(), stageIDs: map[string]*yaml.Node{}, stepPaths: map[string]bool{}, barriers: map[string]bool{},
		barrierUses: map[string][]barrierUse{}, lib: lib, ciInfras: map[string]bool{}}
	c.dec = &pipeline.Decoder{File: f.Name, Origins: f.Origins, Diags: &c.diags}
	if f.Pipeline != nil {
		c.partial = holdsUnexpanded(f.Pipeline.Node)
		c.pipeline(f.Pipeline)
		c.scalars(pipeline.Field(f.Root, "pipeline"), "")
		c.references(f.Pipeline)
	}
	if f.InputSet != nil {
		c.identifier(f.InputSet.Node, "identifier", f.InputSet.Identifier, "input set")
		c.scalars(f.InputSet.Pipeline, "")
	}
	if f.Overlay != nil {
		c.identifier(f.Overlay.Node, "identifier", f.Overlay.Identifier, "overlay input set")
	}
	switch {
	case f.Service != nil:
		c.service(f.Service)
	case f.Environment != nil:
		c.environment(f.Environment)
	case f.Infrastructure != nil:
		c.infrastructure(f.Infrastructure)
	case f.Connector != nil:
		c.connector(f.Connector)
	case f.Secret != nil:
		c.secret(f.Secret)
	case f.Freeze != nil:
		c.freeze(f.Freeze)
	case f.Monitored != nil:
		c.monitoredService(f.Monitored)
	case f.EnvGroup != nil:
		g := f.EnvGroup
		c.identifier(g.Node, "identifier", g.Identifier, "environment group")
		c.name(g.Node, g.Name, "environment group")
		if pipeline.Field(g.Node, "envIdentifiers") != nil && len(g.EnvIdentifiers) == 0 {
			c.diags.Errorf(c.pos(pipeline.ValueAt(g.Node, "envIdentifiers")), "empty", "environment group %s has no environments", g.Identifier).
				SetHint("list the identifiers of its environments under envIdentifiers")
		}
	}
	if f.Template != nil {
		c.template(f.Template)
	}
	if f.Trigger != nil {
		c.trigger(f.Trigger)
		c.scalars(pipeline.Field(f.Root, "trigger"), "")
	}
	return c.sum, c.diags
}

func (c *checker) pos(n *yaml.Node) diag.Pos { return c.src.Pos(n) }

func (c *checker) pipeline(p *pipeline.Pipeline) {
	c.identifier(p.Node, "identifier", p.Identifier, "pipeline")
	c.name(p.Node, p.Name, "pipeline")
	c.timeout(p.Node, p.Timeout, "pipeline")
	c.boolean(p.Node, "allowStageExecutions", p.AllowStageExecutions)
	c.variables(p.Variables, "pipeline")
	c.codebase = c.codebaseOf(p)
	if p.FlowControl != nil {
		seen := map[string]bool{}
		for _, b := range p.FlowControl.Barriers {
			c.identifier(b.Node, "identifier", b.Identifier, "barrier")
			c.name(b.Node, b.Name, "barrier")
			if seen[b.Identifier] {
				c.diags.Errorf(c.pos(pipeline.ValueAt(b.Node, "identifier")), "duplicate-identifier", "barrier identifier %q is declared twice", b.Identifier)
			}
			seen[b.Identifier] = true
			c.barriers[b.Identifier] = true
		}
	}
	if len(p.Stages) == 0 && pipeline.Field(p.Node, "stages") != nil {
		c.diags.Errorf(c.pos(pipeline.Field(p.Node, "stages")), "empty", "pipeline has no stages").
			SetHint("add at least one `- stage:` entry")
	}
	for i := range p.Stages {
		c.stageElement(&p.Stages[i], i, false)
	}
	c.checkBarriers()
	c.notificationRules(p.NotificationRules)
}

// MaxParallelStages is the most stages one parallel block may hold: the reference's limit on
// stages run in parallel.
const MaxParallelStages = 256

func (c *checker) stageElement(e *pipeline.StageElement, index int, inParallel bool) {
	if n := countKeys(e.Node, "stage", "parallel"); n != 1 {
		c.diags.Errorf(c.pos(e.Node), "element", "a stages entry must have exactly one key, `stage` or `parallel`; found %d", n)
		return
	}
	if e.Stage != nil {
		c.stage(e.Stage, index, inParallel)
		return
	}
	if inParallel {
		c.diags.Errorf(c.pos(e.Node), "nested-parallel", "parallel stage blocks cannot be nested").
			SetHint("list the stages directly under the outer `parallel:`")
		return
	}
	if len(e.Parallel) == 0 {
		c.diags.Errorf(c.pos(e.Node), "empty", "parallel block has no stages")
	}
	if len(e.Parallel) > MaxParallelStages {
		c.diags.Errorf(c.pos(e.Node), "too-many-parallel", "parallel block has %d stages; the reference runs at most %d stages in parallel", len(e.Parallel), MaxParallelStages).
			SetHint("split it into several parallel blocks one after the other, or run one stage with a matrix and maxConcurrency")
	}
	for i := range e.Parallel {
		c.stageElement(&e.Parallel[i], index, true)
	}
}

// countKeys counts the keys of a list element that are among its wrappers; other keys are the
// decoder's unknown keys (the reference's exports add some, such as isContainerStepGroup).
func countKeys(n *yaml.Node, wrappers ...string) int {
	if n == nil || n.Kind != yaml.MappingNode {
		return 0
	}
	count := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		if slices.Contains(wrappers, n.Content[i].Value) {
			count++
		}
	}
	return count
}

// holdsUnexpanded reports whether n or a node below it links a template that was not found.
func holdsUnexpanded(n *yaml.Node) bool {
	return n != nil && (pipeline.Unexpanded(n) || slices.ContainsFunc(n.Content, holdsUnexpanded))
}
