// Package directory is the folder of trigger, pipeline and input set files a server fires
// triggers from: it loads them (each checked as `gantry validate` would), and loads the
// pipeline a trigger starts with the trigger's inputs applied.
package directory

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/policies"
)

// Registry is the triggers, pipelines and input sets of a directory (trigger files live next
// to the pipelines they start).
type Registry struct {
	Dir string
	// Policies are the engine evaluated on run when a trigger loads its pipeline, with the
	// policy libraries read from Git for it (recorded in the plan); nil: none.
	Policies func() (*policies.Engine, []plan.Source, error)
	// TemplateDirs are template folders beyond the directory's own templates/.
	TemplateDirs []string
	// Strict makes unknown keys errors in the directory's files (`--strict`).
	Strict bool
	// BuildInfra runs the CI stages that name a runtime; nil: none.
	BuildInfra *pipeline.BuildInfra
	Triggers   []*Loaded
	// Remote loads a pipeline this directory does not hold, kept in Git, for a trigger with
	// the delivery's event (nil for a cron start) and the input sets it names, in its order;
	// nil: such a trigger's start fails.
	Remote    func(t *pipeline.Trigger, event map[string]any, inputSets []InputSetRef, opts load.Options) (*load.Result, error)
	pipelines map[string]string // pipeline identifier → file
	inputSets map[string]string // input set identifier → file
}

// InputSetRef is an input set a trigger of a remote pipeline names: a file of the directory,
// or (File empty) one kept in Git, read with the pipeline.
type InputSetRef struct {
	ID, File string
}

// Loaded is one valid trigger file.
type Loaded struct {
	File    string
	Trigger *pipeline.Trigger
}

// LoadDir reads every *.yaml of dir. Invalid files are reported and left out; an invalid
// trigger never fires. strict makes unknown keys errors (`--strict`).
func LoadDir(dir string, strict bool, templateDirs ...string) (*Registry, diag.List) {
	r := &Registry{Dir: dir, pipelines: map[string]string{}, inputSets: map[string]string{}, TemplateDirs: templateDirs, Strict: strict}
	var diags diag.List
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(files)
	for _, f := range files {
		res, err := load.File(f, load.Options{TemplateDirs: templateDirs, Strict: strict})
		if err != nil {
			diags.Errorf(diag.Pos{File: f}, "io", "%v", err)
			continue
		}
		if !res.OK() {
			diags.Add(res.Diags.Errors()...)
			continue
		}
		switch pf := res.File; {
		case pf.Trigger != nil:
			r.Triggers = append(r.Triggers, &Loaded{File: f, Trigger: pf.Trigger})
		case pf.Pipeline != nil:
			r.pipelines[pf.Pipeline.Identifier] = f
		case pf.InputSet != nil:
			r.inputSets[pf.InputSet.Identifier] = f
		case pf.Overlay != nil:
			r.inputSets[pf.Overlay.Identifier] = f
		}
	}
	return r, diags
}

// codebaseBuildFQN is the runtime input a pipeline leaves for the build its CI stages clone.
const codebaseBuildFQN = "pipeline.properties.ci.codebase.build"

// LoadFor is Load for a delivery: a codebase build the pipeline leaves open (`build: <+input>`)
// is filled from the event (spec 22.3): a push's branch or tag, a pull request's number.
func (r *Registry) LoadFor(t *pipeline.Trigger, event map[string]any) (*load.Result, error) {
	res, err := r.load(t, event)
	if err != nil || res == nil || !slices.ContainsFunc(res.Open, func(o inputs.Open) bool { return o.FQN == codebaseBuildFQN }) {
		return res, err
	}
	build := codebaseBuild(event)
	if build == nil {
		return res, err
	}
	return r.load(t, event, inputs.SourceFromTree("trigger "+t.Identifier+" event", t.Identifier, build))
}

// codebaseBuild is the codebase build an event asks for, as the value under `pipeline:` of
// an input set; nil when the event names none.
func codebaseBuild(event map[string]any) *yaml.Node {
	str := func(k string) string { v, _ := event[k].(string); return v }
	var typ, key, value string
	switch {
	case str("event") == "PR" && str("prNumber") != "":
		typ, key, value = "PR", "number", str("prNumber")
	case str("tag") != "":
		typ, key, value = "tag", "tag", str("tag")
	case str("branch") != "":
		typ, key, value = "branch", "branch", str("branch")
	default:
		return nil
	}
	var doc yaml.Node
	text := fmt.Sprintf("properties: {ci: {codebase: {build: {type: %s, spec: {%s: %q}}}}}", typ, key, value)
	if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// Local reports whether the directory holds the pipeline (else it is read from Git, if at all).
func (r *Registry) Local(pipelineID string) bool {
	_, ok := r.pipelines[pipelineID]
	return ok
}

// Load loads the pipeline a trigger starts, with its inputSetRefs, inputYaml and extra --set
// values applied, ready to run.
func (r *Registry) Load(t *pipeline.Trigger) (*load.Result, error) { return r.load(t, nil) }

func (r *Registry) load(t *pipeline.Trigger, event map[string]any, extra ...*inputs.Source) (*load.Result, error) {
	file, local := r.pipelines[t.PipelineIdentifier]
	if !local && r.Remote == nil {
		return nil, fmt.Errorf("trigger %s starts pipeline %s, which is not in %s", t.Identifier, t.PipelineIdentifier, r.Dir)
	}
	var remoteSets []InputSetRef
	var governed []plan.Source
	opts := load.Options{ForRun: true, Strict: r.Strict, BuildInfra: r.BuildInfra,
		PolicyMeta: map[string]any{"trigger": "trigger " + t.Identifier, "user": map[string]any{"name": "trigger " + t.Identifier}}}
	for _, ref := range t.InputSetRefs {
		f, ok := r.inputSets[ref]
		switch {
		case !local && r.Remote != nil:
			remoteSets = append(remoteSets, InputSetRef{ID: ref, File: f}) // f "": read from Git with the pipeline
		case ok:
			opts.InputSets = append(opts.InputSets, f)
		default:
			return nil, fmt.Errorf("trigger %s names input set %s, which is not in %s", t.Identifier, ref, r.Dir)
		}
	}
	if t.InputYaml != "" {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(t.InputYaml), &doc); err != nil || len(doc.Content) == 0 {
			return nil, fmt.Errorf("trigger %s: inputYaml is not valid YAML", t.Identifier)
		}
		if d := pipeline.CheckExpansion("inputYaml", &doc); d != nil {
			return nil, fmt.Errorf("trigger %s: inputYaml, line %d: %s", t.Identifier, d.Pos.Line, d.Message)
		}
		if p := pipeline.Field(doc.Content[0], "pipeline"); p != nil {
			opts.Inputs = append(opts.Inputs, inputs.SourceFromTree("trigger "+t.Identifier+" inputYaml", t.Identifier, p))
		}
	}
	opts.Inputs = append(opts.Inputs, extra...)
	if r.Policies != nil {
		var err error
		if opts.Policies, governed, err = r.Policies(); err != nil {
			return nil, fmt.Errorf("trigger %s: %w", t.Identifier, err)
		}
	}
	var res *load.Result
	var err error
	if !local {
		res, err = r.Remote(t, event, remoteSets, opts)
	} else {
		opts.TemplateDirs = r.TemplateDirs
		res, err = load.File(file, opts)
	}
	if res != nil && res.Plan != nil {
		res.Plan.Sources = append(res.Plan.Sources, governed...)
	}
	return res, err
}

// Fingerprint summarises a directory's YAML files (names, sizes, modification times) so a
// server notices changed trigger and pipeline files.
func Fingerprint(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(files)
	var b []byte
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			b = fmt.Appendf(b, "%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return string(b)
}
