package pipeline

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
)

// File is one parsed YAML file: a pipeline, an input set, an overlay input set or a trigger.
type File struct {
	Name string
	Src  []byte
	Root *yaml.Node // the mapping under the document
	// Origins are the nodes template expansion copied into Root (nil: none).
	Origins  *Origins
	Pipeline *Pipeline
	InputSet *InputSet
	Overlay  *OverlayInputSet
	Trigger  *Trigger
	Template *Template // a step, step group, stage or pipeline template (spec 19.2)
	// CD entities (spec 15.1).
	Service        *Service
	Environment    *Environment
	Infrastructure *Infrastructure
	EnvGroup       *EnvironmentGroup
	Connector      *Connector
	Secret         *Secret // an SSH credential (type SSHKey)
	Freeze         *Freeze // a deployment freeze window
	// Monitored is a monitored service: the metrics Verify steps read.
	Monitored *MonitoredService
}

// InputSet is an `inputSet:` document (spec 12.1). Its pipeline part stays raw: it mirrors the
// pipeline but holds only runtime-input values, so it is read by FQN, not by the strict model.
type InputSet struct {
	Node     *yaml.Node `yaml:"-"`
	Entity   `yaml:",inline"`
	Pipeline *yaml.Node `yaml:"pipeline" gantry:"required"`
}

// OverlayInputSet is an `overlayInputSet:` document (spec 12.2).
type OverlayInputSet struct {
	Node               *yaml.Node `yaml:"-"`
	Entity             `yaml:",inline"`
	PipelineIdentifier string   `yaml:"pipelineIdentifier"`
	InputSetReferences []string `yaml:"inputSetReferences" gantry:"required"`
}

type document struct {
	Node     *yaml.Node       `yaml:"-"`
	Pipeline *yaml.Node       `yaml:"pipeline"`
	InputSet *InputSet        `yaml:"inputSet"`
	Overlay  *OverlayInputSet `yaml:"overlayInputSet"`
	Trigger  *Trigger         `yaml:"trigger"`
	Template *Template        `yaml:"template"`

	Service        *Service          `yaml:"service"`
	Environment    *Environment      `yaml:"environment"`
	Infrastructure *Infrastructure   `yaml:"infrastructureDefinition"`
	EnvGroup       *EnvironmentGroup `yaml:"environmentGroup"`
	Connector      *Connector        `yaml:"connector"`
	Secret         *Secret           `yaml:"secret"`
	Freeze         *Freeze           `yaml:"freeze"`
	Monitored      *MonitoredService `yaml:"monitoredService"`
}

// StageTypes are the stage types the engine runs.
var StageTypes = []string{"Approval", "CI", "Custom", "Deployment", "Pipeline"}

// Parse reads one YAML document. It reports syntax errors, unknown keys, missing required fields
// and wrong shapes; semantic checks are the validator's.
func Parse(name string, src []byte) (*File, diag.List) {
	f, diags := ParseYAML(name, src)
	if f.Root != nil {
		diags.Add(f.Decode()...)
	}
	return f, diags
}

// ParseYAML reads one YAML document into f.Root without decoding it, for callers that change
// the tree first (template expansion); Decode then decodes it.
func ParseYAML(name string, src []byte) (*File, diag.List) {
	var diags diag.List
	f := &File{Name: name, Src: src}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		diags.Add(syntaxError(name, src, err))
		return f, diags
	}
	if d := CheckExpansion(name, &doc); d != nil {
		diags.Add(*d)
		return f, diags
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		diags.Errorf(NodePos(name, &extra), "multiple-documents", "file holds more than one YAML document").
			SetHint("keep one pipeline or input set per file; remove the `---` separator")
	}
	root := resolveAlias(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		diags.Errorf(diag.Pos{File: name, Line: 1, Col: 1}, "root", "file is not a YAML mapping").
			SetHint("a pipeline file starts with `pipeline:`")
		return f, diags
	}
	f.Root = root
	return f, diags
}

// Decode decodes f.Root into the file's typed root.
func (f *File) Decode() diag.List {
	var diags diag.List
	name, root := f.Name, f.Root
	d := &Decoder{File: name, Origins: f.Origins, Diags: &diags}
	var top document
	d.Decode(root, &top, "document root")
	roots := 0
	for _, present := range []bool{top.Pipeline != nil, top.InputSet != nil, top.Overlay != nil, top.Trigger != nil, top.Template != nil,
		top.Service != nil, top.Environment != nil, top.Infrastructure != nil, top.Connector != nil, top.EnvGroup != nil, top.Secret != nil, top.Freeze != nil, top.Monitored != nil} {
		if present {
			roots++
		}
	}
	if roots != 1 {
		diags.Errorf(f.Source().Pos(root), "root", "file must have exactly one root key: pipeline, inputSet, overlayInputSet, trigger, template, service, environment, infrastructureDefinition, environmentGroup, connector, secret, freeze or monitoredService").
			SetHint("put the pipeline under a top-level `pipeline:` key")
		return diags
	}
	f.InputSet, f.Overlay, f.Trigger = top.InputSet, top.Overlay, top.Trigger
	f.Service, f.Environment, f.Infrastructure, f.Connector = top.Service, top.Environment, top.Infrastructure, top.Connector
	if f.Connector != nil {
		f.Connector.decodeSpec(d)
	}
	f.EnvGroup, f.Secret, f.Freeze, f.Monitored = top.EnvGroup, top.Secret, top.Freeze, top.Monitored
	if f.Monitored != nil {
		f.Monitored.DecodeSources(d)
	}
	f.Template = top.Template
	if top.Pipeline != nil {
		f.Pipeline = decodePipeline(d, top.Pipeline)
	}
	return diags
}

// Source is what positions in the file are computed against.
func (f *File) Source() Source { return Source{File: f.Name, Src: f.Src, Origins: f.Origins} }

// DecodePipeline decodes a pipeline mapping (the value under `pipeline:`), for example one that
// input sets were merged into; origins are its nodes copied from templates.
func DecodePipeline(file string, origins *Origins, n *yaml.Node) (*Pipeline, diag.List) {
	var diags diag.List
	p := decodePipeline(&Decoder{File: file, Origins: origins, Diags: &diags}, n)
	return p, diags
}

func decodePipeline(d *Decoder, n *yaml.Node) *Pipeline {
	p := &Pipeline{}
	d.Decode(n, p, "pipeline")
	for i := range p.Stages {
		decodeStageSpecs(d, &p.Stages[i])
	}
	if p.Properties != nil {
		var props Properties
		d.Decode(p.Properties, &props, "properties")
		if props.CI != nil {
			p.Codebase = props.CI.Codebase
		}
	}
	return p
}

var yamlLineRe = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// syntaxError places a parse error. The parser names the line of the block it was reading,
// often far above the mistake; a line whose indentation cannot be right from there on is
// where the mistake is, and the hint says what is wrong with it.
func syntaxError(file string, src []byte, err error) diag.Diagnostic {
	msg := err.Error()
	pos := diag.Pos{File: file, Line: 1, Col: 1}
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			pos.Line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
	}
	if issue, ok := findIndentIssue(src, pos.Line-1); ok && indentationMessages(msg) {
		if reported := pos.Line; issue.line != reported {
			msg += fmt.Sprintf(" (the parser was reading the block at line %d)", reported)
		}
		pos.Line, pos.Col = issue.line, issue.col
		return diag.Errorf(pos, "yaml-syntax", "invalid YAML: %s", msg).WithHint("%s", issue.hint)
	}
	return diag.Errorf(pos, "yaml-syntax", "invalid YAML: %s", msg).
		WithHint("check indentation and quoting on this line; values starting with <+ or containing ': ' need quotes")
}

// indentationMessages are the parser's messages for a line indented wrongly.
func indentationMessages(msg string) bool {
	for _, m := range []string{"did not find expected key", "mapping values are not allowed", "did not find expected '-' indicator", "block sequence entries are not allowed"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// Stages returns every stage of the pipeline in YAML order, parallel members included.
func (p *Pipeline) AllStages() []*Stage {
	var out []*Stage
	var walk func([]StageElement)
	walk = func(es []StageElement) {
		for i := range es {
			if es[i].Stage != nil {
				out = append(out, es[i].Stage)
			}
			walk(es[i].Parallel)
		}
	}
	walk(p.Stages)
	return out
}

// StepVisit is one step or step group found by WalkSteps.
type StepVisit struct {
	Step     *Step
	Group    *StepGroup
	Groups   []*StepGroup // enclosing groups, outermost first
	Rollback bool         // inside a rollbackSteps tree
	Path     []string     // FQN below the stage, e.g. spec.execution.steps.canary.steps.probe
	Parallel int          // index of the enclosing parallel block branch, -1 when none
}

// WalkSteps visits every step and step group of a steps list in YAML order.
func WalkSteps(es []StepElement, rollback bool, path []string, groups []*StepGroup, fn func(StepVisit)) {
	for i := range es {
		walkElement(&es[i], rollback, path, groups, -1, fn)
	}
}

func walkElement(e *StepElement, rollback bool, path []string, groups []*StepGroup, branch int, fn func(StepVisit)) {
	if e.Step != nil {
		fn(StepVisit{Step: e.Step, Groups: groups, Rollback: rollback, Path: append(clone(path), e.Step.Identifier), Parallel: branch})
	}
	if g := e.StepGroup; g != nil {
		gp := append(clone(path), g.Identifier)
		fn(StepVisit{Group: g, Groups: groups, Rollback: rollback, Path: gp, Parallel: branch})
		inner := append(append([]*StepGroup(nil), groups...), g)
		WalkSteps(g.Steps, rollback, append(gp, "steps"), inner, fn)
		WalkSteps(g.RollbackSteps, true, append(clone(gp), "rollbackSteps"), inner, fn)
	}
	for j := range e.Parallel {
		walkElement(&e.Parallel[j], rollback, path, groups, j, fn)
	}
}

func clone(s []string) []string { return append([]string(nil), s...) }

// IsRuntimeInput reports whether a scalar is a runtime input (`<+input>` with optional methods).
func IsRuntimeInput(s string) bool {
	return strings.HasPrefix(strings.TrimSpace(s), "<+input>")
}

var rootKeyRe = regexp.MustCompile(`^([A-Za-z]+):\s*(#.*)?$`)

// RootKey is the first top-level key of a YAML text ("pipeline", "template", "service", ...),
// read without parsing: folders beside pipelines hold files that are not YAML until rendered
// (manifest templates), so their kind must be told from the first line.
func RootKey(src []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || line == "---" || strings.HasPrefix(line, " ") {
			continue
		}
		if m := rootKeyRe.FindStringSubmatch(line); m != nil {
			return m[1]
		}
		return ""
	}
	return ""
}
