package stepspec

import "gopkg.in/yaml.v3"

// CommandSpec runs command units (Copy, DownloadArtifact, Script) on one host of an Ssh
// stage's infrastructure: the step's `host`, or the item of the loop over
// <+stage.output.hosts> it runs in.
type CommandSpec struct {
	Node                 *yaml.Node      `yaml:"-" json:"-"`
	OnDelegate           string          `yaml:"onDelegate" json:"-" gantry:"required"`
	Host                 string          `yaml:"host" json:"host"`
	CommandUnits         []CommandUnit   `yaml:"commandUnits" json:"commandUnits"`
	EnvironmentVariables []NameTypeValue `yaml:"environmentVariables" json:"environmentVariables"`
	OutputVariables      []NameTypeValue `yaml:"outputVariables" json:"outputVariables"`
	DelegateSelectors    *yaml.Node      `yaml:"delegateSelectors" json:"-"`
	Metadata             string          `yaml:"metadata" json:"-"`
}

// CommandUnit is one unit of a Command step.
type CommandUnit struct {
	Node       *yaml.Node       `yaml:"-" json:"-"`
	Identifier string           `yaml:"identifier" json:"identifier" gantry:"required"`
	Name       string           `yaml:"name" json:"name" gantry:"required"`
	Type       string           `yaml:"type" json:"type" gantry:"required"`
	Spec       *CommandUnitSpec `yaml:"spec" json:"spec"`
}

// CommandUnitSpec holds the fields of the unit types: Copy's and DownloadArtifact's
// destination, Copy's source, Script's shell, source, working directory and tailed files.
type CommandUnitSpec struct {
	Node                       *yaml.Node    `yaml:"-" json:"-"`
	DestinationPath            string        `yaml:"destinationPath" json:"destinationPath"`
	SourceType                 string        `yaml:"sourceType" json:"sourceType"`
	PreserveDirectoryStructure string        `yaml:"preserveDirectoryStructure" json:"-"`
	Shell                      string        `yaml:"shell" json:"-"`
	Source                     *ScriptSource `yaml:"source" json:"source"`
	WorkingDirectory           string        `yaml:"workingDirectory" json:"workingDirectory"`
	TailFiles                  []TailFile    `yaml:"tailFiles" json:"tailFiles"`
}

// Script is the unit's inline script ("" when it has none).
func (s *CommandUnitSpec) Script() string {
	if s == nil || s.Source == nil || s.Source.Spec == nil {
		return ""
	}
	return s.Source.Spec.Script
}

// TailFile is a file a Script unit follows until a line matches the pattern (a regular
// expression).
type TailFile struct {
	Node        *yaml.Node `yaml:"-" json:"-"`
	TailFile    string     `yaml:"tailFile" json:"tailFile"`
	TailPattern string     `yaml:"tailPattern" json:"tailPattern"`
}
