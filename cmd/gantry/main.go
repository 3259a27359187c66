// Command gantry runs Harness-style CD pipelines on Temporal.
package main

import (
	"os"

	"github.com/gantry-cd/gantry/activities/container/runner"
	"github.com/gantry-cd/gantry/cli"
	"github.com/gantry-cd/gantry/worker"
)

func main() {
	// A build machine without gantry-helper runs its steps through this program.
	if len(os.Args) == 3 && os.Args[1] == worker.StepHelperArg {
		switch os.Args[2] {
		case "run":
			os.Exit(runner.Run(os.Stdin, os.Stdout))
		case "supervise":
			os.Exit(runner.Supervise(os.Stdin, os.Stdout))
		}
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
