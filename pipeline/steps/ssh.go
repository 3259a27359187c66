package steps

import (
	"regexp"
	"strings"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// Command and its units are the Command step's spec, shared with the command family.
type (
	Command         = stepspec.CommandSpec
	CommandUnit     = stepspec.CommandUnit
	CommandUnitSpec = stepspec.CommandUnitSpec
	TailFile        = stepspec.TailFile
)

// checkCommand checks the units: what Gantry runs (Copy of config files, Bash scripts) and
// what it does not yet.
func checkCommand(sp *Command, c Checker) {
	c.Boolean(sp.Node, "onDelegate", sp.OnDelegate)
	if sp.OnDelegate == "true" {
		c.Unsupported(pipeline.ValueAt(sp.Node, "onDelegate"), "unsupported-field",
			"a Command step on the delegate: Gantry runs Command steps on the stage's hosts").SetHint("onDelegate: false")
	}
	c.Variables(sp.EnvironmentVariables, "environment variable", []string{"String", "Number", "Secret"})
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Number", "Secret"})
	seen := map[string]bool{}
	for _, u := range sp.CommandUnits {
		if seen[u.Identifier] {
			c.Error(pipeline.ValueAt(u.Node, "identifier"), "duplicate-identifier", "command unit %s is listed twice", u.Identifier)
		}
		seen[u.Identifier] = true
		c.Enum(u.Node, "type", u.Type, []string{"Copy", "DownloadArtifact", "Script"}, "command unit type")
		s := u.Spec
		switch {
		case s == nil:
			c.Error(u.Node, "missing-field", "command unit %s needs `spec`", u.Identifier)
		case u.Type == "DownloadArtifact":
			if s.DestinationPath == "" {
				c.Error(s.Node, "missing-field", "command unit %s: DownloadArtifact needs `destinationPath`", u.Identifier)
			}
		case u.Type == "Copy":
			c.Enum(s.Node, "sourceType", s.SourceType, []string{"Artifact", "Config"}, "Copy sourceType")
			if s.DestinationPath == "" {
				c.Error(s.Node, "missing-field", "command unit %s: Copy needs `destinationPath`", u.Identifier)
			}
			c.Boolean(s.Node, "preserveDirectoryStructure", s.PreserveDirectoryStructure)
		case u.Type == "Script":
			c.Enum(s.Node, "shell", s.Shell, []string{"Bash", "PowerShell"}, "shell")
			if s.Shell == "PowerShell" {
				c.Unsupported(pipeline.ValueAt(s.Node, "shell"), "unsupported-field", "command unit %s: PowerShell runs on WinRM hosts, which Gantry does not reach", u.Identifier)
			}
			if s.Source == nil || s.Source.Spec == nil || (s.Source.Type == "Inline" && pipeline.Field(s.Source.Spec.Node, "script") == nil) {
				c.Error(s.Node, "missing-field", "command unit %s: Script needs `source` with an inline script", u.Identifier)
			} else if s.Source.Type != "Inline" {
				c.Unsupported(pipeline.ValueAt(s.Source.Node, "type"), "unsupported-field", "command unit %s: a script in the Harness file store; write it inline", u.Identifier)
			}
			for _, tf := range s.TailFiles {
				if tf.TailFile == "" {
					c.Error(tf.Node, "missing-field", "command unit %s: a tailFiles entry needs `tailFile`", u.Identifier)
				}
				if _, err := regexp.Compile(tf.TailPattern); err != nil && !strings.Contains(tf.TailPattern, "<+") {
					c.Error(pipeline.ValueAt(tf.Node, "tailPattern"), "invalid-pattern", "command unit %s: tailPattern %q is not a regular expression: %v", u.Identifier, tf.TailPattern, err)
				}
			}
		}
	}
}
