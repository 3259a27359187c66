package pipeline

import (
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
)

// StageSteps is what every stage type that runs steps has: its execution. Each stage type's
// spec embeds it, so the walks over a stage's steps need not know the type.
type StageSteps struct {
	Node      *yaml.Node `yaml:"-"`
	Execution *Execution `yaml:"execution" gantry:"required"`
}

// stageSpecs decodes each stage type's spec into its own Go type, so that the strict decoder
// reports a field of another type as the reference does (its stage specs are open objects: an
// unknown key there is ignored, a warning) and a new stage type adds its own file.
var stageSpecs = map[string]func(d *Decoder, s *Stage){
	"Deployment": decodeDeploymentSpec,
	"CI":         decodeCISpec,
	"Custom":     decodeCustomSpec,
	"Approval":   decodeApprovalSpec,
	"Pipeline":   decodeChainSpec,
}

// Steps returns the stage's steps part, nil for a stage type without steps (Pipeline) or
// whose spec was not decoded.
func (s *Stage) Steps() *StageSteps {
	switch {
	case s.Deployment != nil:
		return &s.Deployment.StageSteps
	case s.CI != nil:
		return &s.CI.StageSteps
	case s.Custom != nil:
		return &s.Custom.StageSteps
	case s.Approval != nil:
		return &s.Approval.StageSteps
	}
	return nil
}

// Execution returns the stage's execution, nil without one.
func (s *Stage) Execution() *Execution {
	if st := s.Steps(); st != nil {
		return st.Execution
	}
	return nil
}

func decodeStageSpecs(d *Decoder, e *StageElement) {
	if e.Stage != nil && e.Stage.Spec != nil {
		if decode, ok := stageSpecs[e.Stage.Type]; ok {
			decode(d, e.Stage)
		}
	}
	for i := range e.Parallel {
		decodeStageSpecs(d, &e.Parallel[i])
	}
}

// specTypes are the Go types of the stage types with steps, for the hint that names which
// stage types have a key another type was given.
var specTypes = map[string]reflect.Type{
	"Deployment": reflect.TypeOf(DeploymentStageSpec{}),
	"CI":         reflect.TypeOf(CIStageSpec{}),
	"Custom":     reflect.TypeOf(CustomStageSpec{}),
	"Approval":   reflect.TypeOf(ApprovalStageSpec{}),
}

// decodeStageSpec decodes a stage's spec into out, its type's spec. A key of another stage
// type is an unknown key, ignored as the reference ignores it; its hint names the types that
// have it.
func decodeStageSpec(d *Decoder, s *Stage, out any) {
	var own diag.List
	(&Decoder{File: d.File, Origins: d.Origins, Diags: &own}).Decode(s.Spec, out, s.Type+" stage spec")
	for i := 0; s.Spec.Kind == yaml.MappingNode && i+1 < len(s.Spec.Content); i += 2 {
		k := s.Spec.Content[i]
		var owners []string
		for typ, t := range specTypes {
			if _, ok := structFields(t).byName[k.Value]; ok && typ != s.Type {
				owners = append(owners, typ)
			}
		}
		if len(owners) == 0 {
			continue
		}
		slices.Sort(owners)
		at := d.Pos(k)
		for j := range own {
			if own[j].Code == diag.UnknownKey && own[j].Pos == at {
				own[j].SetHint("`%s` is a field of %s stages", k.Value, strings.Join(owners, " and "))
			}
		}
	}
	d.Diags.Add(own...)
}
