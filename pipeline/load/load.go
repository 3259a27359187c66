// Package load is Gantry's one front end from files to a checked pipeline, in this order:
// parse → expand template links → validate → merge runtime inputs (and validate the merged
// pipeline) → resolve entities and pods → compile (the one producer of the plan) → on-run
// policies. `gantry validate`, `gantry run`, the API, the webhook server and tests all go
// through it, so no entry point can skip a check.
package load

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/compile"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/entities"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/pipeline/templates"
	"github.com/gantry-cd/gantry/pipeline/validate"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/policies"
)

// Options select the runtime inputs to merge.
type Options struct {
	InputSets []string // input set and overlay files, in precedence order
	// Inputs are further sources applied after the input sets (a trigger's inputYaml).
	Inputs []*inputs.Source
	Sets   []string // --set FQN=value assignments, applied last
	// Policies, when set with ForRun, evaluates the on-run policy sets over the merged pipeline
	// (spec 15.6); a deny is an error diagnostic, so nothing starts. PolicyMeta is the
	// input.metadata the policies see (who, trigger, time).
	Policies   *policies.Engine
	PolicyMeta map[string]any
	// EntityDirs are the folders holding service, environment, infrastructure and connector
	// files. File adds the pipeline's own folder in front.
	EntityDirs []string
	// TemplateDirs are folders of template files (searched at any depth). File adds the
	// pipeline's templates/ folder; TemplatesBeside is the folder whose own template files
	// (not its subfolders) count too, the pipeline's folder for File.
	TemplateDirs    []string
	TemplatesBeside string
	// TemplatesFromGit are the templates read from Git at their links' gitBranch, by
	// identifier (a remote pipeline's start).
	TemplatesFromGit map[string]bool
	// ForRun makes open required runtime inputs errors, as a run request must supply them, and
	// compiles the plan (refusing step types the engine cannot run).
	ForRun bool
	// Strict makes every unknown key and unknown reference an error (`--strict`); by default
	// the keys the reference ignores, and paths that would render null, are warnings.
	Strict bool
	// BuildInfra runs the CI stages that name a runtime (spec 22.1); nil: they are
	// unsupported-runtime.
	BuildInfra *pipeline.BuildInfra
	// Secrets, when every secret a run can read is known to the caller (a `gantry run` whose
	// own worker reads the environment and a secrets file), checks the names the pipeline
	// gives secrets.getValue; the secret files beside the pipeline count too.
	Secrets validate.SecretStore
	// PipelineDirs are the folders where the pipelines that `type: Pipeline` stages run are
	// found by identifier. File adds the pipeline's own folder in front.
	PipelineDirs []string

	chainedFrom []string // the pipelines above a chained one, outermost first
}

// Result is a loaded file.
type Result struct {
	File    *pipeline.File
	Merged  *pipeline.Pipeline // the pipeline with inputs applied (nil for input-set files)
	Plan    *plan.Plan         // compiled when Options.ForRun and the pipeline is valid
	Summary validate.Summary
	Open    []inputs.Open
	Values  map[string]any // runtime-input values applied, by FQN
	Diags   diag.List      // sorted, errors and warnings
	Sources diag.Sources   // file texts for caret snippets
	// Policy is the on-run decision (Options.Policies), to record on the execution.
	Policy *policies.Decision
	// Templates are the template links expanded, by the node they became (spec 19.8).
	Templates []templates.Use
}

// OK reports whether the file can be used.
func (r *Result) OK() bool { return !r.Diags.HasErrors() }

// File loads a pipeline, input set or overlay file. The error is for I/O only; problems with
// the content are diagnostics.
func File(path string, opts Options) (*Result, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// Entities are looked up beside the pipeline first, then in the folders given.
	opts.EntityDirs = append([]string{filepath.Dir(path)}, opts.EntityDirs...)
	if !slices.Contains(opts.PipelineDirs, filepath.Dir(path)) {
		opts.PipelineDirs = append([]string{filepath.Dir(path)}, opts.PipelineDirs...)
	}
	opts.TemplateDirs = append(opts.TemplateDirs, DefaultTemplateDirs(path)...)
	opts.TemplatesBeside = filepath.Dir(path)
	return Bytes(path, src, opts), nil
}

// Bytes loads file content already in memory.
func Bytes(name string, src []byte, opts Options) *Result {
	r := &Result{Sources: diag.Sources{name: src}}
	f, diags := pipeline.ParseYAML(name, src)
	r.File = f
	r.Diags.Add(diags...)
	if f.Root == nil {
		r.finish(opts)
		return r
	}
	if templates.Uses(f.Root) && !r.expand(name, f, opts) {
		r.finish(opts)
		return r
	}
	r.Diags.Add(f.Decode()...)
	pipeline.ApplyBuildInfra(f.Pipeline, opts.BuildInfra, steps.DefaultImage)
	var lib *templates.Library
	if f.Template != nil {
		// A template's own links resolve to the templates beside it and in the folders given.
		var ld diag.List
		lib, ld = templates.Load(opts.TemplateDirs, filepath.Dir(name))
		lib.Partial = !opts.ForRun
		r.Diags.Add(ld...)
		for k, v := range lib.Sources {
			r.Sources[k] = v
		}
	}
	sum, vd := validate.FileWith(f, lib)
	r.Summary = sum
	r.Diags.Add(vd...)
	if f.Pipeline != nil {
		r.mergeInputs(name, f, opts)
	}
	if f.Service != nil && !r.Diags.HasErrors() {
		r.Diags.Add(runNeeds(entities.CheckService(f), opts)...)
	}
	var resolved compile.Resolved
	if r.Merged != nil && !r.Diags.HasErrors() && (hasDeployment(r.Merged) || needsConnectors(r.Merged) || usesSecrets(r.Sources)) {
		resolved = r.resolveEntities(name, opts)
	}
	if r.Merged != nil && !r.Diags.HasErrors() {
		resolved.Chains = r.loadChains(opts)
	}
	if opts.ForRun && r.Merged != nil && !r.Diags.HasErrors() {
		resolved.Templates, resolved.Origins = r.Templates, f.Origins
		p, cd := compile.Compile(name, r.Merged, resolved)
		r.Diags.Add(cd...)
		if !cd.HasErrors() {
			r.Plan = p
		}
	}
	if opts.ForRun && opts.Policies != nil && r.Plan != nil {
		r.checkPolicies(name, opts)
	}
	r.finish(opts)
	return r
}

// finish applies --strict and sorts the diagnostics; a strict load with an unknown key has no
// plan to run.
func (r *Result) finish(opts Options) {
	if opts.Strict {
		r.Diags = r.Diags.Strict()
		if r.Diags.HasErrors() {
			r.Plan = nil
		}
	}
	r.Diags = r.Diags.Sort()
}

func (r *Result) mergeInputs(name string, f *pipeline.File, opts Options) {
	loaded, ld := inputs.LoadFiles(opts.InputSets, f.Pipeline.Identifier)
	r.Diags.Add(ld...)
	for k, v := range loaded.Files {
		r.Sources[k] = v
	}
	sources := append(loaded.Sources, opts.Inputs...)
	if len(opts.Sets) > 0 {
		s, sd := inputs.FromSetFlags(opts.Sets)
		r.Diags.Add(sd...)
		sources = append(sources, s)
	}
	merged, md := inputs.Merge(f.Source(), pipeline.Field(f.Root, "pipeline"), sources)
	r.Diags.Add(md...)
	r.Open = merged.Open
	r.Values = map[string]any{}
	for fqn, n := range merged.Values {
		var v any
		if n.Decode(&v) == nil {
			r.Values[fqn] = v
		}
	}
	r.Merged = f.Pipeline
	// Values that came from inputs are checked like the rest of the pipeline; duplicates of
	// earlier diagnostics collapse when the list is sorted.
	if len(merged.Values) > 0 {
		p, pd := pipeline.DecodePipeline(name, f.Origins, merged.Root)
		r.Diags.Add(pd...)
		pipeline.ApplyBuildInfra(p, opts.BuildInfra, steps.DefaultImage) // as for the file, before its checks
		r.Merged = p
		mf := &pipeline.File{Name: name, Src: f.Src, Root: wrap(merged.Root), Pipeline: p, Origins: f.Origins}
		_, vd := validate.File(mf)
		r.Diags.Add(vd...)
	}
	if opts.ForRun {
		for _, o := range merged.Open {
			if o.Required {
				r.Diags.Errorf(o.Pos, "missing-input", "runtime input %s has no value", o.FQN).
					SetHint("supply it with --set %s=VALUE or an input set, or give it a .default()", o.FQN)
			}
		}
	}
}

// wrap puts a pipeline mapping back under a `pipeline:` key, as a file root.
func wrap(n *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "pipeline"}, n}}
}

// checkPolicies evaluates the on-run policy sets over the merged pipeline as JSON (runtime
// inputs applied; secrets are references, never values) plus metadata.
func (r *Result) checkPolicies(name string, opts Options) {
	p := r.Merged
	sets := opts.Policies.OnRunSets(policies.Scope{Project: p.ProjectIdentifier, Tags: p.Tags})
	if len(sets) == 0 {
		return
	}
	meta := map[string]any{"action": policies.OnRun, "type": "pipeline"}
	for k, v := range opts.PolicyMeta {
		meta[k] = v
	}
	doc := pipeline.Value(p.Node)
	retainLinks(doc, r.Templates)
	input := map[string]any{"pipeline": doc, "metadata": meta}
	d, err := opts.Policies.Evaluate(context.Background(), sets, input)
	at := r.File.Source().Pos(p.Node)
	if err != nil {
		r.Diags.Errorf(at, "policy", "policy evaluation failed, so the run is refused: %v", err)
		r.Plan = nil
		return
	}
	r.Policy = d
	for _, s := range d.Sets {
		one := &policies.Decision{Status: s.Status, Sets: []policies.SetResult{s}}
		for _, m := range one.Messages() {
			if s.Status == "error" {
				r.Diags.Errorf(at, "policy", "denied by policy %s", m)
			} else {
				r.Diags.Warnf(at, "policy", "policy warning %s", m)
			}
		}
	}
	if d.Denied() {
		r.Plan = nil
		return
	}
	rec := &plan.PolicyRecord{Status: d.Status, Messages: d.Messages()}
	for _, s := range d.Sets {
		rec.Sets = append(rec.Sets, plan.PolicySetRecord{Set: s.Set, Severity: s.Severity, Status: s.Status, Micros: s.Duration.Microseconds()})
	}
	r.Plan.Policy = rec
}

func hasDeployment(p *pipeline.Pipeline) bool {
	for _, s := range p.AllStages() {
		if s.Type == "Deployment" {
			return true
		}
	}
	return false
}

// hasPods reports whether a pipeline has a pod to run: a CI stage, a containerized step group
// or a Container step.
// needsConnectors says whether a pipeline has steps whose connectors are resolved before the
// run: pods (CI stages, containerized step groups, Container steps) and steps with stores.
func needsConnectors(p *pipeline.Pipeline) bool {
	found := false
	for _, s := range p.AllStages() {
		if ex := s.Execution(); ex != nil {
			found = found || s.Type == "CI"
			visit := func(v pipeline.StepVisit) {
				if v.Group != nil && v.Group.StepGroupInfra != nil {
					found = true
				}
				if v.Step != nil {
					e, _ := steps.Lookup(v.Step.Type)
					found = found || e.Traits.OwnPod || e.Stores || e.Ticketing != "" || (e.SSHTarget && onTarget(v.Step.Spec))
				}
			}
			pipeline.WalkSteps(ex.Steps, false, nil, nil, visit)
			pipeline.WalkSteps(ex.RollbackSteps, true, nil, nil, visit)
		}
	}
	return found
}

// usesSecrets says whether the pipeline (or a template it uses) reads secrets by expression:
// those kept in a secret manager connector are routed by the entity files.
func usesSecrets(sources map[string][]byte) bool {
	for _, src := range sources {
		if bytes.Contains(src, []byte("secrets.getValue")) {
			return true
		}
	}
	return false
}

// resolveEntities resolves the Deployment stages against the entity files (spec 15.1), the
// connectors of the containerized step groups and those of the steps' stores.
func (r *Result) resolveEntities(name string, opts Options) compile.Resolved {
	dirs := opts.EntityDirs
	if len(dirs) == 0 {
		dirs = []string{filepath.Dir(name)}
	}
	cat, d := entities.Load(dirs, func(f *pipeline.File) diag.List { _, d := validate.File(f); return d })
	r.Diags.Add(d...)
	// Deployment templates (CustomDeployment) are found where the pipeline's templates are,
	// and checked where they are used.
	cat.Templates, _ = templates.Load(opts.TemplateDirs, filepath.Dir(name))
	out, multis, d := cat.ResolveAll(r.File.Source(), r.Merged)
	d = append(d, validate.EntityReferences(r.File.Source(), r.Merged, entityVariables(out, multis))...)
	if opts.Secrets != nil {
		d = append(d, validate.SecretReferences(r.File.Source(), r.Merged, catalogSecrets{cat, opts.Secrets})...)
	}
	pods, pd := cat.Pods(r.File.Source(), r.Merged)
	refs, sd := cat.StepRefs(r.File.Source(), r.Merged)
	routes, rd := cat.SecretRoutes()
	sd = append(sd, rd...)
	for k, v := range cat.Sources { // the template files used are among them now
		r.Sources[k] = v
	}
	d = append(append(d, pd...), sd...)
	r.Diags.Add(runNeeds(d, opts)...)
	return compile.Resolved{Deploys: out, Multis: multis, Pods: pods, Refs: refs, Secrets: routes}
}

// catalogSecrets are a store's secrets and those the secret files of the catalog route to
// secret managers.
type catalogSecrets struct {
	cat *entities.Catalog
	validate.SecretStore
}

func (c catalogSecrets) Has(id string) bool {
	_, ok := c.cat.Secrets[pipeline.LocalRef(id)]
	return ok || c.SecretStore.Has(id)
}

// entityVariables are the variables each resolved Deployment stage's entities define; a
// multi-service or multi-environment stage's are those of any of its deployments.
func entityVariables(out map[string]*plan.Deployment, multis map[string]*entities.Multi) map[string]validate.EntityVariables {
	vars := map[string]validate.EntityVariables{}
	add := func(stage string, d *plan.Deployment) {
		if d.Service == nil || d.Environment == nil || d.Infra == nil {
			return
		}
		ev, seen := vars[stage]
		if !seen {
			ev = validate.EntityVariables{ServiceVars: map[string]bool{}, EnvVars: map[string]bool{}}
			if d.Infra.Custom != nil {
				ev.InfraVars = map[string]bool{}
			}
		}
		ev.Service = joinID(ev.Service, d.Service.ID)
		ev.Environment = joinID(ev.Environment, d.Environment.ID)
		ev.Infrastructure = joinID(ev.Infrastructure, d.Infra.ID)
		for _, v := range append(slices.Clone(d.Service.Variables), d.Environment.ServiceOverrides...) {
			ev.ServiceVars[v.Name] = true
		}
		for _, v := range d.Environment.Variables {
			ev.EnvVars[v.Name] = true
		}
		switch {
		case d.Infra.Custom == nil:
			ev.InfraVars = nil // only a deployment template's infrastructure has variables
		case ev.InfraVars != nil:
			for _, v := range d.Infra.Custom.Variables {
				ev.InfraVars[v.Name] = true
			}
		}
		vars[stage] = ev
	}
	for id, d := range out {
		add(id, d)
	}
	for id, m := range multis {
		for _, k := range slices.Sorted(maps.Keys(m.Deploys)) {
			add(id, m.Deploys[k])
		}
	}
	return vars
}

// joinID lists the identifiers a stage deploys, each once: "web" or "web, api".
func joinID(list, id string) string {
	if list == "" {
		return id
	}
	if slices.Contains(strings.Split(list, ", "), id) {
		return list
	}
	return list + ", " + id
}

// runNeeds makes what only a run needs (entities and their inputs) warnings for a plain
// validate: a pipeline is valid without its services and environments beside it.
func runNeeds(d diag.List, opts Options) diag.List {
	if opts.ForRun {
		return d
	}
	for i := range d {
		if (d[i].Code == "missing-entity" || d[i].Code == "missing-input") && d[i].Severity == diag.Error {
			d[i].Severity = diag.Warning
			d[i].Message += " (a run needs it)"
		}
	}
	return d
}

// DefaultTemplateDirs are the template folders of a pipeline file: templates/ beside it and
// beside its folder, as repositories lay them out (pipelines/x.yaml with templates/ next to
// pipelines/, or .harness/pipelines and .harness/templates).
func DefaultTemplateDirs(path string) []string {
	dir := filepath.Dir(path)
	out := []string{filepath.Join(dir, "templates")}
	if parent := filepath.Join(filepath.Dir(dir), "templates"); parent != out[0] && filepath.Base(dir) != "templates" {
		out = append(out, parent)
	}
	return out
}

// expand replaces the pipeline's template links with the templates' bodies (spec 19.5); false
// means the links could not all be expanded, so the pipeline is not checked further.
func (r *Result) expand(name string, f *pipeline.File, opts Options) bool {
	lib, ld := templates.Load(opts.TemplateDirs, opts.TemplatesBeside)
	lib.Partial = !opts.ForRun // like services and environments, a plain validate needs no template
	lib.FromGit = opts.TemplatesFromGit
	r.Diags.Add(ld...)
	for k, v := range lib.Sources {
		r.Sources[k] = v
	}
	f.Origins = pipeline.NewOrigins()
	uses, ed := templates.Expand(name, f.Origins, f.Root, lib)
	r.Diags.Add(ed...)
	r.Templates = uses
	return !ed.HasErrors()
}

// retainLinks puts each expanded node's `template` object back beside its expanded keys in the
// document policies see, so a policy can require or forbid templates (spec 19.8).
func retainLinks(doc any, uses []templates.Use) {
	for _, u := range uses {
		node, _ := doc.(map[string]any)
		for _, id := range u.IDs() {
			node = findByID(node, id)
		}
		if node != nil {
			node["template"] = pipeline.Value(u.Link)
		}
	}
}

// findByID finds, below a node, the stage, step group or step with an identifier.
func findByID(n any, id string) map[string]any {
	switch v := n.(type) {
	case map[string]any:
		for _, w := range []string{"stage", "step", "stepGroup"} {
			if inner, ok := v[w].(map[string]any); ok && inner["identifier"] == id {
				return inner
			}
		}
		for k, c := range v {
			if k == "template" {
				continue
			}
			if f := findByID(c, id); f != nil {
				return f
			}
		}
	case []any:
		for _, c := range v {
			if f := findByID(c, id); f != nil {
				return f
			}
		}
	}
	return nil
}

// onTarget says a step runs on a target host (onDelegate: false).
func onTarget(spec *yaml.Node) bool {
	od := pipeline.Field(spec, "onDelegate")
	return od != nil && od.Value == "false"
}
