package steps

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
)

// Checked is a spec type that checks its own values beyond the strict decoder's shape check.
type Checked interface {
	Check(c Checker)
}

// Checker is what a spec's checks report through; pipeline/validate implements it at the
// positions of the file it checks. Values that are expressions or runtime inputs pass the
// value checks: they are checked when rendered.
type Checker interface {
	Enum(obj *yaml.Node, key, value string, allowed []string, what string)
	Boolean(obj *yaml.Node, key, value string)
	// Integer checks a whole number of at least min; fixed refuses expressions.
	Integer(obj *yaml.Node, key, value string, min int, fixed bool, what string)
	Duration(obj *yaml.Node, key, value, what string)
	// Variables checks step variables: names, duplicates and types.
	Variables(vars []NameTypeValue, what string, types []string)
	// Store checks a manifest store.
	Store(st *pipeline.ManifestStore)
	// Error reports a broken value; Unsupported valid reference YAML Gantry cannot run.
	Error(at *yaml.Node, code, format string, args ...any) *diag.Diagnostic
	Unsupported(at *yaml.Node, code, format string, args ...any) *diag.Diagnostic
	// Warn reports what Gantry changed or will not do as written.
	Warn(at *yaml.Node, code, format string, args ...any) *diag.Diagnostic
	// Ignored warns that a field Gantry accepts is not acted on, when at holds a value (not
	// an empty list or mapping).
	Ignored(at *yaml.Node, key, why string)
}

// ignoredTrue warns about a boolean field Gantry does not act on when it is set.
func ignoredTrue(c Checker, obj *yaml.Node, key, value, why string) {
	if value == "" || value == "false" {
		return
	}
	c.Ignored(pipeline.ValueAt(obj, key), key, why)
}
