package validate

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/steps"
)

// specChecker is the checker as the step specs' own checks see it (steps.Checker).
type specChecker struct{ c *checker }

var _ steps.Checker = specChecker{}

func (s specChecker) Enum(obj *yaml.Node, key, value string, allowed []string, what string) {
	s.c.enum(obj, key, value, allowed, what)
}

func (s specChecker) Boolean(obj *yaml.Node, key, value string) { s.c.boolean(obj, key, value) }

func (s specChecker) Integer(obj *yaml.Node, key, value string, min int, fixed bool, what string) {
	s.c.integer(obj, key, value, min, fixed, what)
}

func (s specChecker) Duration(obj *yaml.Node, key, value, what string) {
	s.c.duration(obj, key, value, what)
}

func (s specChecker) Variables(vars []steps.NameTypeValue, what string, types []string) {
	s.c.stepVars(vars, what, types)
}

func (s specChecker) Store(st *pipeline.ManifestStore) { s.c.store(st) }

func (s specChecker) Error(at *yaml.Node, code, format string, args ...any) *diag.Diagnostic {
	return s.c.diags.Errorf(s.c.pos(at), code, format, args...)
}

func (s specChecker) Unsupported(at *yaml.Node, code, format string, args ...any) *diag.Diagnostic {
	return s.c.diags.Unsupportedf(s.c.pos(at), code, format, args...)
}

func (s specChecker) Ignored(at *yaml.Node, key, why string) {
	if at == nil || (at.Kind == yaml.SequenceNode || at.Kind == yaml.MappingNode) && len(at.Content) == 0 {
		return
	}
	s.c.diags.Warnf(s.c.pos(at), "not-implemented", "%s is ignored: %s", key, why)
}

func (s specChecker) Warn(at *yaml.Node, code, format string, args ...any) *diag.Diagnostic {
	return s.c.diags.Warnf(s.c.pos(at), code, format, args...)
}
