package steps

import (
	"gopkg.in/yaml.v3"
	"strings"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// The container steps' specs, shared with the container family (stepspec).
type (
	ContainerSettings = stepspec.ContainerSettings
	Container         = stepspec.ContainerSpec
	Run               = stepspec.RunSpec
	Background        = stepspec.BackgroundSpec
	Plugin            = stepspec.PluginSpec
	GitClone          = stepspec.GitCloneSpec
	GitBuild          = stepspec.GitBuild
	GitBuildSpec      = stepspec.GitBuildSpec
	DownloadManifests = stepspec.DownloadManifestsSpec
)

// Imaged is the spec of a step that runs an image of its own in its container.
type Imaged interface {
	// ImageSettings returns the container's settings, and whether an image must be named.
	ImageSettings() (set *ContainerSettings, needsImage bool)
}

// containerShells are the shells a container step runs its command with.
var containerShells = []string{"Sh", "Bash", "Python", "Pwsh", "Powershell"}

// checkContainer checks the shell and the output variables.
func checkContainer(sp *Container, c Checker) {
	c.Enum(sp.Node, "shell", sp.Shell, containerShells, "shell")
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Secret"})
	if sp.Settings != nil {
		c.Ignored(sp.Settings, "settings", "a Container step runs its command (settings configure Plugin steps)")
	}
}

// checkRun checks the shell and the output variables.
func checkRun(sp *Run, c Checker) {
	c.Enum(sp.Node, "shell", sp.Shell, containerShells, "shell")
	if strings.TrimSpace(sp.Command) == "" && strings.TrimSpace(sp.Image) == "" {
		// With an image and no command the image's entrypoint runs; with neither, nothing would.
		c.Error(pipeline.ValueAt(sp.Node, "command"), "missing-field", "Run step has no command and no image: it would run nothing").
			SetHint("write the commands under spec.command, or name an image whose entrypoint does the work")
	}
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Secret"})
	if sp.RegistryRef != "" {
		c.Ignored(pipeline.ValueAt(sp.Node, "registryRef"), "registryRef", "Gantry pulls the image with connectorRef's credentials")
	}
}

// checkBackground checks the shell; portBindings depend on where the step runs (validate).
func checkBackground(sp *Background, c Checker) {
	c.Enum(sp.Node, "shell", sp.Shell, containerShells, "shell")
}

// checkPlugin refuses plugins named from Harness's catalog.
func checkPlugin(sp *Plugin, c Checker) {
	if sp.Uses != "" && sp.Image == "" {
		c.Unsupported(pipeline.ValueAt(sp.Node, "uses"), "unsupported-field",
			"`uses` names a plugin from Harness's plugin catalog, which Gantry does not have").SetHint("name the plugin's image with `image`")
	}
}

// checkGitClone checks what is checked out, and warns of the settings Gantry does not act on.
func checkGitClone(g *GitClone, c Checker) {
	if b := g.Build; b != nil {
		c.Enum(b.Node, "type", b.Type, []string{"branch", "tag", "commitSha", "PR"}, "build type")
		if b.Spec != nil {
			key := map[string]string{"branch": "branch", "tag": "tag", "commitSha": "commitSha", "PR": "number"}[b.Type]
			if key != "" && pipeline.Field(b.Spec.Node, key) == nil {
				c.Error(b.Spec.Node, "missing-field", "a %s build needs spec.%s", b.Type, key)
			}
		}
	}
	c.Integer(g.Node, "depth", string(g.Depth), 0, false, "depth")
	c.Boolean(g.Node, "sslVerify", string(g.SSLVerify))
	c.Boolean(g.Node, "fetchTags", string(g.FetchTags))
	for key, n := range map[string]*yaml.Node{"lfs": pipeline.ValueAt(g.Node, "lfs"), "submoduleStrategy": pipeline.ValueAt(g.Node, "submoduleStrategy"),
		"preFetchCommand": pipeline.ValueAt(g.Node, "preFetchCommand"), "sparseCheckout": pipeline.ValueAt(g.Node, "sparseCheckout"),
		"outputFilePathsContent": pipeline.ValueAt(g.Node, "outputFilePathsContent")} {
		if n != nil && n.Value != "false" && n.Value != "" || (n != nil && n.Kind == yaml.SequenceNode && len(n.Content) > 0) {
			c.Ignored(n, key, "Gantry clones the whole repository with go-git, without LFS, submodules or a pre-fetch command")
		}
	}
}
