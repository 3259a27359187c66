// Package stepspec holds what a step type's definition and the family that runs it must agree
// on, below both the front end and the families: the front end checks a spec against it and
// the family acts on the same definition, so the two cannot drift apart.
package stepspec

import (
	"slices"
	"strings"
)

// TestTools are the commands a RunTests step runs for each buildTool, its args following.
var TestTools = map[string]string{
	"Maven": "mvn", "Gradle": "gradle", "Bazel": "bazel", "Dotnet": "dotnet", "Nunitconsole": "nunit3-console",
	"SBT": "sbt", "Pytest": "pytest", "Unittest": "python3 -m unittest", "Rspec": "bundle exec rspec",
}

// BuildTools lists the buildTool values a RunTests step accepts, sorted.
func BuildTools() []string {
	tools := make([]string, 0, len(TestTools))
	for t := range TestTools {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	return tools
}

// RunTestsCommand is the script a RunTests step runs as a Run step: preCommand, the build
// tool with args, then postCommand, one per line. ok is false for a buildTool Gantry does not
// know.
func RunTestsCommand(buildTool, args, preCommand, postCommand string) (script string, ok bool) {
	tool, ok := TestTools[buildTool]
	if !ok {
		return "", false
	}
	var lines []string
	if c := strings.TrimSpace(preCommand); c != "" {
		lines = append(lines, c)
	}
	lines = append(lines, strings.TrimSpace(tool+" "+args))
	if c := strings.TrimSpace(postCommand); c != "" {
		lines = append(lines, c)
	}
	return strings.Join(lines, "\n"), true
}
