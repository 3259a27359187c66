// Command gantry runs Harness-style CD pipelines on Temporal.
package main

import (
	"os"

	"github.com/gantry-cd/gantry/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
