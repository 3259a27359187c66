package load

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/plan"
)

// loadChains loads the pipelines the merged pipeline's `type: Pipeline` stages run, each with
// its stage's inputs, and returns their plans by stage identifier (ForRun). A chained
// pipeline that chains again is an error (the reference allows one level), and so is a
// chain back to a pipeline above it, named as the cycle it makes.
func (r *Result) loadChains(opts Options) map[string]*plan.Chain {
	stages := r.Merged.ChainStages()
	if len(stages) == 0 {
		return nil
	}
	src := r.File.Source()
	path := append(slices.Clone(opts.chainedFrom), r.Merged.Identifier)
	out := map[string]*plan.Chain{}
	for _, s := range stages {
		spec := s.Chain
		at := src.Pos(pipeline.ValueAt(spec.Node, "pipeline"))
		if spec.Pipeline == "" || strings.Contains(spec.Pipeline, "<+") {
			continue // reported by validation
		}
		if slices.Contains(path, spec.Pipeline) {
			r.Diags.Errorf(at, "chain-cycle", "stage %s chains pipeline %s, which makes a cycle: %s",
				s.Identifier, spec.Pipeline, strings.Join(append(path, spec.Pipeline), " → ")).
				SetHint("a pipeline cannot run itself, directly or through another pipeline")
			continue
		}
		if len(opts.chainedFrom) > 0 {
			r.Diags.Errorf(at, "chain-depth", "stage %s of pipeline %s chains pipeline %s, but %s is itself chained by %s: a chained pipeline may not chain further",
				s.Identifier, r.Merged.Identifier, spec.Pipeline, r.Merged.Identifier, opts.chainedFrom[len(opts.chainedFrom)-1]).
				SetHint("chain %s from %s directly, or move this stage's work into %s", spec.Pipeline, opts.chainedFrom[0], r.Merged.Identifier)
			continue
		}
		file, others := findPipeline(opts.PipelineDirs, spec)
		if file == "" {
			d := diag.Errorf(at, "missing-entity", "stage %s chains pipeline %s, which is not found in %s",
				s.Identifier, scoped(spec.Org, spec.Project, spec.Pipeline), strings.Join(opts.PipelineDirs, ", "))
			if len(others) > 0 {
				d = d.WithHint("a pipeline %s is in %s, but in another org or project", spec.Pipeline, strings.Join(others, ", "))
			} else {
				d = d.WithHint("put the child pipeline's file beside this one (or in the server's pipelines directory)")
			}
			r.Diags.Add(runNeeds(diag.List{d}, opts)...)
			continue
		}
		sets, missing := findInputSets(opts.PipelineDirs, spec.Pipeline, spec.InputSetReferences)
		for _, id := range missing {
			r.Diags.Errorf(src.Pos(pipeline.Field(spec.Node, "inputSetReferences")), "missing-entity",
				"stage %s uses input set %s of pipeline %s, which is not found", s.Identifier, id, spec.Pipeline).
				SetHint("input sets are found by identifier beside the child pipeline's file")
		}
		child := Options{InputSets: sets, Policies: opts.Policies, PolicyMeta: opts.PolicyMeta,
			EntityDirs: opts.EntityDirs, TemplateDirs: opts.TemplateDirs, ForRun: opts.ForRun, Strict: opts.Strict,
			BuildInfra: opts.BuildInfra, PipelineDirs: opts.PipelineDirs, chainedFrom: path}
		tree, tokens := chainInputs(spec.InputTree())
		if tree != nil {
			child.Inputs = []*inputs.Source{inputs.SourceFromTree("inputs of stage "+s.Identifier, src.File, tree)}
		}
		res, err := File(file, child)
		if err != nil {
			r.Diags.Errorf(at, "io", "stage %s: cannot read chained pipeline %s: %v", s.Identifier, file, err)
			continue
		}
		r.Diags.Add(res.Diags...)
		for k, v := range res.Sources {
			r.Sources[k] = v
		}
		if res.Plan == nil {
			continue
		}
		c := &plan.Chain{Pipeline: spec.Pipeline, Org: spec.Org, Project: spec.Project, File: file, Plan: res.Plan, Inputs: tokens}
		for _, o := range spec.Outputs {
			c.Outputs = append(c.Outputs, plan.Output{Name: o.Name, Value: o.Value})
		}
		out[s.Identifier] = c
	}
	return out
}

func scoped(org, project, id string) string {
	if org == "" && project == "" {
		return id
	}
	return org + "/" + project + "/" + id
}

// chainInputs copies a Pipeline stage's inputs and puts a placeholder in place of each
// expression: those are the parent's, rendered when the stage starts (plan.Chain.Bind).
func chainInputs(n *yaml.Node) (*yaml.Node, map[string]string) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	tokens := map[string]string{}
	var walk func(*yaml.Node) *yaml.Node
	walk = func(n *yaml.Node) *yaml.Node {
		c := *n
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "<+") && !inputs.IsRuntimeInput(n.Value) {
			tok := plan.ChainPlaceholder(len(tokens) + 1)
			tokens[tok] = n.Value
			c.Value, c.Style = tok, 0
			return &c
		}
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, e := range n.Content {
			c.Content[i] = walk(e)
		}
		return &c
	}
	return walk(n), tokens
}

// findPipeline finds the file of the pipeline a chain names, among the YAML files of dirs
// (not their subfolders). A pipeline that does not name its org or project matches any;
// others lists files with the identifier in another org or project.
func findPipeline(dirs []string, spec *pipeline.ChainSpec) (file string, others []string) {
	for _, dir := range dirs {
		for _, f := range yamlFiles(dir) {
			src, err := os.ReadFile(f)
			if err != nil || pipeline.RootKey(src) != "pipeline" {
				continue
			}
			var head struct {
				Pipeline struct {
					Identifier string `yaml:"identifier"`
					Org        string `yaml:"orgIdentifier"`
					Project    string `yaml:"projectIdentifier"`
				} `yaml:"pipeline"`
			}
			if yaml.Unmarshal(src, &head) != nil || head.Pipeline.Identifier != spec.Pipeline {
				continue
			}
			if !sameScope(head.Pipeline.Org, spec.Org) || !sameScope(head.Pipeline.Project, spec.Project) {
				others = append(others, f)
				continue
			}
			return f, nil
		}
	}
	return "", others
}

// sameScope: an org or project given by expression, or not written down, matches any.
func sameScope(have, want string) bool {
	return have == "" || want == "" || strings.Contains(want, "<+") || strings.Contains(have, "<+") || have == want
}

// findInputSets finds input set files by identifier for a pipeline, in the order given.
func findInputSets(dirs []string, pipelineID string, ids []string) (files, missing []string) {
	if len(ids) == 0 {
		return nil, nil
	}
	byID := map[string]string{}
	for _, dir := range dirs {
		for _, f := range yamlFiles(dir) {
			src, err := os.ReadFile(f)
			if err != nil || pipeline.RootKey(src) != "inputSet" {
				continue
			}
			var head struct {
				InputSet struct {
					Identifier string `yaml:"identifier"`
					Pipeline   struct {
						Identifier string `yaml:"identifier"`
					} `yaml:"pipeline"`
				} `yaml:"inputSet"`
			}
			if yaml.Unmarshal(src, &head) != nil || head.InputSet.Pipeline.Identifier != pipelineID {
				continue
			}
			if _, ok := byID[head.InputSet.Identifier]; !ok {
				byID[head.InputSet.Identifier] = f
			}
		}
	}
	for _, id := range ids {
		if f, ok := byID[id]; ok {
			files = append(files, f)
		} else {
			missing = append(missing, id)
		}
	}
	return files, missing
}

func yamlFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
