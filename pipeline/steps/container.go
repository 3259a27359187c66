package steps

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// Container runs a command in a container (spec 15.4).
type Container struct {
	Node            *yaml.Node                   `yaml:"-"`
	ConnectorRef    string                       `yaml:"connectorRef"`
	Image           string                       `yaml:"image"`
	Shell           string                       `yaml:"shell"`
	Command         string                       `yaml:"command" gantry:"required"`
	Entrypoint      []string                     `yaml:"entrypoint"`
	Infrastructure  *pipeline.StepGroupInfra     `yaml:"infrastructure" gantry:"required"`
	Settings        *yaml.Node                   `yaml:"settings"`
	Metadata        string                       `yaml:"metadata"`
	EnvVariables    map[string]string            `yaml:"envVariables"`
	OutputVariables []NameTypeValue              `yaml:"outputVariables"`
	Privileged      string                       `yaml:"privileged"`
	ImagePullPolicy string                       `yaml:"imagePullPolicy"`
	RunAsUser       string                       `yaml:"runAsUser"`
	Resources       *pipeline.ContainerResources `yaml:"resources"`
	Reports         *yaml.Node                   `yaml:"reports"`
}

// DownloadManifests writes the stage service's manifests into its containerized step group's
// workspace, /harness/<manifest identifier>.
type DownloadManifests struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
}

// ContainerSettings are what the container steps share: the image, its registry, and how the
// container runs.
type ContainerSettings struct {
	ConnectorRef    string                       `yaml:"connectorRef"`
	Image           string                       `yaml:"image"`
	ImagePullPolicy string                       `yaml:"imagePullPolicy"`
	Privileged      string                       `yaml:"privileged"`
	RunAsUser       string                       `yaml:"runAsUser"`
	Resources       *pipeline.ContainerResources `yaml:"resources"`
	Reports         *yaml.Node                   `yaml:"reports"`
}

// Run runs a command in its own container of a containerized step group.
type Run struct {
	Node              *yaml.Node `yaml:"-"`
	ContainerSettings `yaml:",inline"`
	RegistryRef       string `yaml:"registryRef"`
	Shell             string `yaml:"shell"`
	// Command is the script; without one the image's entrypoint runs, as for a Plugin step.
	Command         string            `yaml:"command"`
	EnvVariables    map[string]string `yaml:"envVariables"`
	OutputVariables []NameTypeValue   `yaml:"outputVariables"`
	OutputAlias     *OutputAlias      `yaml:"outputAlias"`
}

// Background starts a service container that keeps running while the group's later steps run.
type Background struct {
	Node              *yaml.Node `yaml:"-"`
	ContainerSettings `yaml:",inline"`
	Shell             string            `yaml:"shell"`
	Command           string            `yaml:"command"`
	Entrypoint        []string          `yaml:"entrypoint"`
	EnvVariables      map[string]string `yaml:"envVariables"`
	PortBindings      map[string]string `yaml:"portBindings"`
}

// Plugin runs a Drone-style plugin image: settings become PLUGIN_* environment variables.
type Plugin struct {
	Node              *yaml.Node `yaml:"-"`
	ContainerSettings `yaml:",inline"`
	RegistryRef       string     `yaml:"registryRef"`
	Entrypoint        []string   `yaml:"entrypoint"`
	Settings          *yaml.Node `yaml:"settings"`
	Uses              string     `yaml:"uses"`
}

// GitClone clones a repository into the group's workspace.
type GitClone struct {
	Node                   *yaml.Node                   `yaml:"-"`
	ConnectorRef           string                       `yaml:"connectorRef" gantry:"required"`
	RepoName               string                       `yaml:"repoName"`
	ProjectName            string                       `yaml:"projectName"`
	Build                  *GitBuild                    `yaml:"build" gantry:"required"`
	CloneDirectory         string                       `yaml:"cloneDirectory"`
	Depth                  string                       `yaml:"depth"`
	SSLVerify              string                       `yaml:"sslVerify"`
	LFS                    string                       `yaml:"lfs"`
	Debug                  string                       `yaml:"debug"`
	FetchTags              string                       `yaml:"fetchTags"`
	SparseCheckout         []string                     `yaml:"sparseCheckout"`
	SubmoduleStrategy      string                       `yaml:"submoduleStrategy"`
	PreFetchCommand        string                       `yaml:"preFetchCommand"`
	OutputFilePathsContent []string                     `yaml:"outputFilePathsContent"`
	Resources              *pipeline.ContainerResources `yaml:"resources"`
	RunAsUser              string                       `yaml:"runAsUser"`
	Privileged             string                       `yaml:"privileged"`
	BaseImageConnectorRefs *yaml.Node                   `yaml:"baseImageConnectorRefs"`
}

// GitBuild is what a GitClone step checks out: `type: branch|tag|commitSha|PR` with its value.
type GitBuild = pipeline.Typed[GitBuildSpec]

// GitBuildSpec holds the branch, tag, commit or pull request number.
type GitBuildSpec struct {
	Node      *yaml.Node `yaml:"-"`
	Branch    string     `yaml:"branch"`
	Tag       string     `yaml:"tag"`
	CommitSha string     `yaml:"commitSha"`
	Number    string     `yaml:"number"`
}

// Imaged is the spec of a step that runs an image of its own in its container.
type Imaged interface {
	// ImageSettings returns the container's settings, and whether an image must be named.
	ImageSettings() (set *ContainerSettings, needsImage bool)
}

// containerShells are the shells a container step runs its command with.
var containerShells = []string{"Sh", "Bash", "Python", "Pwsh", "Powershell"}

// ImageSettings returns the container's settings.
func (sp *Container) ImageSettings() (*ContainerSettings, bool) {
	return &ContainerSettings{ConnectorRef: sp.ConnectorRef, Image: sp.Image, ImagePullPolicy: sp.ImagePullPolicy,
		Privileged: sp.Privileged, RunAsUser: sp.RunAsUser, Resources: sp.Resources, Reports: sp.Reports}, true
}

// Check checks the shell and the output variables.
func (sp *Container) Check(c Checker) {
	c.Enum(sp.Node, "shell", sp.Shell, containerShells, "shell")
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Secret"})
	if sp.Settings != nil {
		c.Ignored(sp.Settings, "settings", "a Container step runs its command (settings configure Plugin steps)")
	}
}

// ImageSettings returns the container's settings.
func (sp *Run) ImageSettings() (*ContainerSettings, bool) { return &sp.ContainerSettings, true }

// Check checks the shell and the output variables.
func (sp *Run) Check(c Checker) {
	c.Enum(sp.Node, "shell", sp.Shell, containerShells, "shell")
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Secret"})
	if sp.RegistryRef != "" {
		c.Ignored(pipeline.ValueAt(sp.Node, "registryRef"), "registryRef", "Gantry pulls the image with connectorRef's credentials")
	}
}

// ImageSettings returns the container's settings.
func (sp *Background) ImageSettings() (*ContainerSettings, bool) { return &sp.ContainerSettings, true }

// Check checks the shell; portBindings depend on where the step runs (validate).
func (sp *Background) Check(c Checker) {
	c.Enum(sp.Node, "shell", sp.Shell, containerShells, "shell")
}

// ImageSettings returns the container's settings; a plugin named from the catalog (uses)
// names no image, and is refused by Check.
func (sp *Plugin) ImageSettings() (*ContainerSettings, bool) {
	return &sp.ContainerSettings, sp.Uses == ""
}

// Check refuses plugins named from Harness's catalog.
func (sp *Plugin) Check(c Checker) {
	if sp.Uses != "" && sp.Image == "" {
		c.Unsupported(pipeline.ValueAt(sp.Node, "uses"), "unsupported-field",
			"`uses` names a plugin from Harness's plugin catalog, which Gantry does not have").SetHint("name the plugin's image with `image`")
	}
}

// Check checks what is checked out, and warns of the settings Gantry does not act on.
func (g *GitClone) Check(c Checker) {
	if b := g.Build; b != nil {
		c.Enum(b.Node, "type", b.Type, []string{"branch", "tag", "commitSha", "PR"}, "build type")
		if b.Spec != nil {
			key := map[string]string{"branch": "branch", "tag": "tag", "commitSha": "commitSha", "PR": "number"}[b.Type]
			if key != "" && pipeline.Field(b.Spec.Node, key) == nil {
				c.Error(b.Spec.Node, "missing-field", "a %s build needs spec.%s", b.Type, key)
			}
		}
	}
	c.Integer(g.Node, "depth", g.Depth, 0, false, "depth")
	c.Boolean(g.Node, "sslVerify", g.SSLVerify)
	c.Boolean(g.Node, "fetchTags", g.FetchTags)
	for key, n := range map[string]*yaml.Node{"lfs": pipeline.ValueAt(g.Node, "lfs"), "submoduleStrategy": pipeline.ValueAt(g.Node, "submoduleStrategy"),
		"preFetchCommand": pipeline.ValueAt(g.Node, "preFetchCommand"), "sparseCheckout": pipeline.ValueAt(g.Node, "sparseCheckout"),
		"outputFilePathsContent": pipeline.ValueAt(g.Node, "outputFilePathsContent")} {
		if n != nil && n.Value != "false" && n.Value != "" || (n != nil && n.Kind == yaml.SequenceNode && len(n.Content) > 0) {
			c.Ignored(n, key, "Gantry clones the whole repository with go-git, without LFS, submodules or a pre-fetch command")
		}
	}
}
