package steps

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// The image builds' and RunTests' specs, shared with the container family (stepspec).
type (
	BuildSettings   = stepspec.BuildSettings
	BuildAndPush    = stepspec.BuildAndPushSpec
	BuildAndPushECR = stepspec.BuildAndPushECRSpec
	RunTests        = stepspec.RunTestsSpec
)

// checkBuildAndPush warns of the settings Gantry does not act on.
func checkBuildAndPush(b *BuildAndPush, c Checker) { checkBuildSettings(c, &b.BuildSettings, b.Node) }

// checkBuildAndPushECR warns of the settings Gantry does not act on.
func checkBuildAndPushECR(b *BuildAndPushECR, c Checker) {
	checkBuildSettings(c, &b.BuildSettings, b.Node)
}

func checkBuildSettings(c Checker, b *BuildSettings, node *yaml.Node) {
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

// checkRunTests checks the tool and shell, and warns that test selection runs every test.
func checkRunTests(sp *RunTests, c Checker) {
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
