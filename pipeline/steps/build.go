package steps

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// BuildSettings are what the BuildAndPush steps share: how the image is built.
type BuildSettings struct {
	Context                string                       `yaml:"context"`
	Dockerfile             string                       `yaml:"dockerfile"`
	Target                 string                       `yaml:"target"`
	Labels                 map[string]string            `yaml:"labels"`
	BuildArgs              map[string]string            `yaml:"buildArgs"`
	CacheFrom              []string                     `yaml:"cacheFrom"`
	CacheTo                string                       `yaml:"cacheTo"`
	Caching                string                       `yaml:"caching"`
	Optimize               string                       `yaml:"optimize"`
	BaseImageConnectorRefs *yaml.Node                   `yaml:"baseImageConnectorRefs"`
	Resources              *pipeline.ContainerResources `yaml:"resources"`
	RunAsUser              string                       `yaml:"runAsUser"`
}

// BuildAndPush builds a Dockerfile in the stage's pod with BuildKit and pushes the image with
// each of its tags to repo on a DockerRegistry connector's registry.
type BuildAndPush struct {
	Node            *yaml.Node `yaml:"-"`
	ConnectorRef    string     `yaml:"connectorRef" gantry:"required"`
	Repo            string     `yaml:"repo" gantry:"required"`
	Tags            []string   `yaml:"tags" gantry:"required"`
	RemoteCacheRepo string     `yaml:"remoteCacheRepo"`
	BuildSettings   `yaml:",inline"`
}

// BuildAndPushECR is BuildAndPush to the ECR registry of an account, logged in with an Aws
// connector.
type BuildAndPushECR struct {
	Node             *yaml.Node `yaml:"-"`
	ConnectorRef     string     `yaml:"connectorRef" gantry:"required"`
	Account          string     `yaml:"account" gantry:"required"`
	Region           string     `yaml:"region" gantry:"required"`
	ImageName        string     `yaml:"imageName" gantry:"required"`
	Tags             []string   `yaml:"tags" gantry:"required"`
	RemoteCacheImage string     `yaml:"remoteCacheImage"`
	BuildSettings    `yaml:",inline"`
}

// Check warns of the settings Gantry does not act on.
func (b *BuildAndPush) Check(c Checker) { b.BuildSettings.check(c, b.Node) }

// Check warns of the settings Gantry does not act on.
func (b *BuildAndPushECR) Check(c Checker) { b.BuildSettings.check(c, b.Node) }

func (b *BuildSettings) check(c Checker, node *yaml.Node) {
	ignoredTrue(c, node, "optimize", b.Optimize, "BuildKit snapshots layers itself; `optimize` tunes the reference's kaniko")
	ignoredTrue(c, node, "caching", b.Caching,
		"the vendor's hosted build cache; BuildKit caches layers within the stage's pod, and remote cache images, cacheFrom and cacheTo name registry caches")
	c.Ignored(b.BaseImageConnectorRefs, "baseImageConnectorRefs",
		"base images are pulled with connectorRef's credentials when they are on its registry, else anonymously")
	if v := b.RunAsUser; v != "" && v != "0" && !strings.Contains(v, "<+") {
		c.Unsupported(pipeline.ValueAt(node, "runAsUser"), "unsupported-field",
			"BuildAndPush steps run BuildKit as root in a privileged container; runAsUser %s would need rootless BuildKit", v)
	}
}

// RunTests runs a build tool's tests as a Run step: preCommand, the tool with args, then
// postCommand. Test selection (Test Intelligence) is the vendor's: every test runs.
type RunTests struct {
	Node                 *yaml.Node `yaml:"-"`
	ContainerSettings    `yaml:",inline"`
	Language             string            `yaml:"language" gantry:"required"`
	BuildTool            string            `yaml:"buildTool" gantry:"required"`
	Args                 string            `yaml:"args"`
	PreCommand           string            `yaml:"preCommand"`
	PostCommand          string            `yaml:"postCommand"`
	Shell                string            `yaml:"shell"`
	EnvVariables         map[string]string `yaml:"envVariables"`
	OutputVariables      []NameTypeValue   `yaml:"outputVariables"`
	RunOnlySelectedTests string            `yaml:"runOnlySelectedTests"`
	EnableTestSplitting  string            `yaml:"enableTestSplitting"`
	TestSplitStrategy    string            `yaml:"testSplitStrategy"`
	TestAnnotations      string            `yaml:"testAnnotations"`
	TestGlobs            string            `yaml:"testGlobs"`
	TestRoot             string            `yaml:"testRoot"`
	Packages             string            `yaml:"packages"`
	Namespaces           string            `yaml:"namespaces"`
	BuildEnvironment     string            `yaml:"buildEnvironment"`
	FrameworkVersion     string            `yaml:"frameworkVersion"`
	PythonVersion        string            `yaml:"pythonVersion"`
}

// ImageSettings returns the container's settings.
func (sp *RunTests) ImageSettings() (*ContainerSettings, bool) { return &sp.ContainerSettings, true }

// Check checks the tool and shell, and warns that test selection runs every test.
func (sp *RunTests) Check(c Checker) {
	c.Enum(sp.Node, "language", sp.Language, []string{"Java", "Kotlin", "Scala", "Csharp", "Python", "Ruby"}, "language")
	c.Enum(sp.Node, "buildTool", sp.BuildTool, stepspec.BuildTools(), "buildTool")
	c.Enum(sp.Node, "shell", sp.Shell, containerShells, "shell")
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Secret"})
	ignoredTrue(c, sp.Node, "runOnlySelectedTests", sp.RunOnlySelectedTests,
		"test selection is the vendor's Test Intelligence: Gantry runs every test")
	ignoredTrue(c, sp.Node, "enableTestSplitting", sp.EnableTestSplitting,
		"test splitting is the vendor's: Gantry runs every test in this step")
	for _, k := range []string{"testAnnotations", "testGlobs", "testRoot", "packages", "namespaces", "testSplitStrategy"} {
		c.Ignored(pipeline.ValueAt(sp.Node, k), k, "it guides the vendor's test selection; Gantry runs every test")
	}
}
