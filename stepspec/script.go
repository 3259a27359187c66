package stepspec

import "gopkg.in/yaml.v3"

// Typed is the reference's `{type: X, spec: {...}}` shape: a kind and its settings.
type Typed[S any] struct {
	Node *yaml.Node `yaml:"-" json:"-"`
	Type string     `yaml:"type" json:"type" gantry:"required"`
	Spec *S         `yaml:"spec" json:"spec" gantry:"required"`
}

// ShellScriptSpec runs a script (spec 11.1): validation decodes the YAML into it, and the
// shell family reads the rendered script, its variables and its target from it.
type ShellScriptSpec struct {
	Node                  *yaml.Node       `yaml:"-" json:"-"`
	Shell                 string           `yaml:"shell" json:"shell" gantry:"required"`
	OnDelegate            Text             `yaml:"onDelegate" json:"onDelegate"` // false: on ExecutionTarget's host over SSH
	ExecutionTarget       *ExecutionTarget `yaml:"executionTarget" json:"executionTarget"`
	Source                *ScriptSource    `yaml:"source" json:"source" gantry:"required"`
	EnvironmentVariables  []NameTypeValue  `yaml:"environmentVariables" json:"environmentVariables"`
	OutputVariables       []NameTypeValue  `yaml:"outputVariables" json:"outputVariables"`
	DelegateSelectors     *yaml.Node       `yaml:"delegateSelectors" json:"-"`
	IncludeInfraSelectors string           `yaml:"includeInfraSelectors" json:"-"`
	OutputAlias           *OutputAlias     `yaml:"outputAlias" json:"-"` // the workflow publishes the outputs under it
}

// ExecutionTarget is the remote host of a ShellScript step.
type ExecutionTarget struct {
	Node             *yaml.Node `yaml:"-" json:"-"`
	Host             string     `yaml:"host" json:"host"`
	ConnectorRef     string     `yaml:"connectorRef" json:"connectorRef"`
	WorkingDirectory string     `yaml:"workingDirectory" json:"workingDirectory"`
}

// ScriptSource says where the script comes from.
type ScriptSource = Typed[ScriptInline]

// ScriptInline holds an inline script or a file-store path.
type ScriptInline struct {
	Node   *yaml.Node `yaml:"-" json:"-"`
	Script string     `yaml:"script" json:"script"`
	File   string     `yaml:"file" json:"file"`
}

// OutputAlias publishes outputs under an exported alias (spec 11.4).
type OutputAlias struct {
	Node  *yaml.Node `yaml:"-" json:"-"`
	Key   string     `yaml:"key" json:"key" gantry:"required"`
	Scope string     `yaml:"scope" json:"scope" gantry:"required"`
}
