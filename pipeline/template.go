package pipeline

import "gopkg.in/yaml.v3"

// Template is a `template:` document (spec 19.2): a versioned step, step group, stage or
// pipeline body that use sites link to and that is expanded in their place before validation.
type Template struct {
	Node             *yaml.Node `yaml:"-"`
	Entity           `yaml:",inline"`
	VersionLabel     string     `yaml:"versionLabel" gantry:"required"`
	Type             string     `yaml:"type" gantry:"required"`
	Icon             string     `yaml:"icon"`
	AllowedOverrides []string   `yaml:"allowedOverrides"`
	Variables        *yaml.Node `yaml:"variables"`
	// Spec stays raw: it is a step, step group, stage or pipeline body with runtime inputs as
	// its parameters, checked once wrapped in a pipeline of its own.
	Spec *yaml.Node `yaml:"spec" gantry:"required"`
}

// TemplateLink is a use site's `template:` (spec 19.3).
type TemplateLink struct {
	Node              *yaml.Node `yaml:"-"`
	TemplateRef       string     `yaml:"templateRef" gantry:"required"`
	VersionLabel      string     `yaml:"versionLabel"`
	TemplateInputs    *yaml.Node `yaml:"templateInputs"`
	TemplateOverrides *yaml.Node `yaml:"templateOverrides"`
	Label             *yaml.Node `yaml:"label"`
	TemplateVariables *yaml.Node `yaml:"templateVariables"`
	Description       string     `yaml:"description"`
	// GitBranch is the branch of a remote template's repository (the reference's Git
	// Experience); Gantry's templates come from folders, so it is reported as ignored.
	GitBranch string `yaml:"gitBranch"`
}

// HasVariables reports whether the template declares template variables (an empty list, as
// exports often carry, declares none).
func (t *Template) HasVariables() bool {
	return t.Variables != nil && !(t.Variables.Kind == yaml.SequenceNode && len(t.Variables.Content) == 0) &&
		!(t.Variables.Kind == yaml.ScalarNode && (t.Variables.Tag == "!!null" || t.Variables.Value == ""))
}

// unexpandedTag marks a node whose template link was left unexpanded because the template is
// not among those found (a plain validate; templates.Library.Partial).
const unexpandedTag = "!gantry/unexpanded-template"

// MarkUnexpanded marks n, a stage, step group, step or pipeline that links a template not found:
// the decoder then expects none of the fields the template would have supplied.
func MarkUnexpanded(n *yaml.Node) { n.Tag = unexpandedTag }

// Unexpanded reports whether n links a template that was not found (MarkUnexpanded).
func Unexpanded(n *yaml.Node) bool { return n != nil && n.Tag == unexpandedTag }
