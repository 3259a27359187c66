package pipeline_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/reference"
	"github.com/gantry-cd/gantry/pipeline/steps"
)

// Every object reference.Fields describes is a type the decoder fills, named as the decoder
// names it: a renamed or reshaped Go type must not silently turn the reference's fields of
// that object from warnings into unknown keys.
func TestReferenceFieldsNameDecodedTypes(t *testing.T) {
	decoded := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || decoded[pipeline.RefName(t)] {
			return
		}
		decoded[pipeline.RefName(t)] = true
		for i := 0; i < t.NumField(); i++ {
			walk(t.Field(i).Type)
		}
	}
	for _, root := range []any{pipeline.Pipeline{}, pipeline.Service{}, pipeline.Environment{}, pipeline.EnvironmentGroup{},
		pipeline.Infrastructure{}, pipeline.Connector{}, pipeline.Trigger{},
		// decoded later from the raw nodes of the roots
		pipeline.DeploymentStageService{}, pipeline.DeploymentStageEnvironment{}, pipeline.FailureStrategy{},
		pipeline.StageWhen{}, pipeline.StepWhen{}, pipeline.Strategy{}, pipeline.RetrySpec{},
		pipeline.GitEventSpec{}, pipeline.CustomEvent{}, pipeline.CronSpec{}} {
		walk(reflect.TypeOf(root))
	}
	for _, typ := range steps.Types() {
		e, _ := steps.Lookup(typ)
		walk(reflect.TypeOf(e.New()))
	}
	var missing []string
	for name := range reference.Fields {
		if !decoded[name] {
			missing = append(missing, name)
		}
	}
	for _, name := range reference.Closed {
		if !decoded[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("reference.Fields names types the decoder does not fill: %v (regenerate with hack/refschema after renaming a type)", missing)
	}
}
