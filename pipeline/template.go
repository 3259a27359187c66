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

// CustomDeploymentSpec is a CustomDeployment template's spec (a deployment template): how the
// hosts of an infrastructure are found, and the step templates its stages may use.
type CustomDeploymentSpec struct {
	Node           *yaml.Node             `yaml:"-"`
	Infrastructure *CustomDeploymentInfra `yaml:"infrastructure" gantry:"required"`
	Execution      *yaml.Node             `yaml:"execution" gantry:"required"`
}

// CustomDeploymentInfra is the infrastructure part of a deployment template: the variables
// infrastructures fill, the script that lists the instances, where the list is in its JSON
// and which attributes of an instance to keep.
type CustomDeploymentInfra struct {
	Node                 *yaml.Node          `yaml:"-"`
	Variables            []Variable          `yaml:"variables"`
	FetchInstancesScript *FetchInstances     `yaml:"fetchInstancesScript" gantry:"required"`
	InstanceAttributes   []InstanceAttribute `yaml:"instanceAttributes" gantry:"required"`
	InstancesListPath    string              `yaml:"instancesListPath" gantry:"required"`
}

// FetchInstances is the fetch-instances script's store.
type FetchInstances struct {
	Node  *yaml.Node   `yaml:"-"`
	Store *ScriptStore `yaml:"store" gantry:"required"`
}

// ScriptStore holds a script inline (`content`), or names a file-store file.
type ScriptStore = Typed[ScriptStoreSpec]

// ScriptStoreSpec is an Inline store's content, or a Harness file store's files.
type ScriptStoreSpec struct {
	Node    *yaml.Node `yaml:"-"`
	Content string     `yaml:"content"`
	Files   *yaml.Node `yaml:"files"`
}

// InstanceAttribute maps a field of each instance (jsonPath) to a name; `instancename` is
// the instance's host name.
type InstanceAttribute struct {
	Node        *yaml.Node `yaml:"-"`
	Name        string     `yaml:"name" gantry:"required"`
	JSONPath    string     `yaml:"jsonPath" gantry:"required"`
	Description string     `yaml:"description"`
}
