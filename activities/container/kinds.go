package container

import (
	"context"
	"maps"
	"slices"

	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// kind is how the family runs one step type: what a group's pod does for it, and what a
// build machine does. The table below is the only place the family tells types apart.
type kind struct {
	// helper does the step for the pod through its helper container (a clone, a cache, an
	// upload); nil: the step's command runs in its own container.
	helper func(a *Activity, ctx context.Context, k *cluster, ns string, in contract.StepInput, log *logs.Writer) (contract.StepResult, error)
	// command reads a command step's spec as what the family runs (nil: a helper or a build,
	// which reads its own spec).
	command func(in contract.StepInput) (stepSpec, error)
	// finish completes the pod's request with what the type adds to its command: an image's
	// entrypoint, a plugin's settings, a background process.
	finish func(a *Activity, ctx context.Context, in contract.StepInput, spec stepSpec, req *wire.Request, expand func(what, s string) (string, error)) error
	// build reads a step that builds an image with BuildKit and pushes it (nil: it does not);
	// ecr says to ECR with the stage's Aws connector (otherwise to its DockerRegistry
	// connector's registry).
	build func(in contract.StepInput) (buildSpec, error)
	ecr   bool
	// background says the step starts a process that runs until its group or stage ends.
	background bool
	// machine says a build machine runs the step's command (as a process, or in a container
	// of its image); clones, that a build machine clones it into the workspace.
	machine, clones bool
}

var kinds = map[string]kind{
	stepspec.Run:        {command: command(runCommand), finish: (*Activity).runEntrypoint, machine: true},
	stepspec.RunTests:   {command: runTestsCommand, machine: true},
	stepspec.Background: {command: command(backgroundCommand), finish: (*Activity).backgroundEntrypoint, background: true, machine: true},
	stepspec.Plugin:     {command: command(pluginCommand), finish: (*Activity).pluginEntrypoint},
	stepspec.Container:  {command: command(containerCommand)},

	stepspec.BuildAndPushDockerRegistry: {build: buildOf(pushToRegistry)},
	stepspec.BuildAndPushECR:            {build: buildOf(pushToECR), ecr: true},

	stepspec.GitClone:          {helper: (*Activity).gitClone, clones: true},
	stepspec.DownloadManifests: {helper: (*Activity).downloadManifests},
	stepspec.SaveCacheS3:       {helper: (*Activity).saveCache},
	stepspec.RestoreCacheS3:    {helper: (*Activity).restoreCache},
	stepspec.S3Upload:          {helper: (*Activity).s3Upload},
}

// kindOf is a step type's kind; an unknown type has none and runs nowhere.
func kindOf(in contract.StepInput) (kind, error) {
	k, ok := kinds[in.Type]
	if !ok {
		return k, contract.Fail(contract.Unknown, "step %s: the container family does not run %s steps", in.StepPath, in.Type)
	}
	return k, nil
}

// decode reads the step's spec as a command step's.
func (k kind) decode(in contract.StepInput) (stepSpec, error) {
	if k.command == nil {
		return stepSpec{}, nil // a helper's or a build's: it reads its own spec
	}
	return k.command(in)
}

// onMachine says a build machine runs the kind.
func (k kind) onMachine() bool { return k.machine || k.clones || k.builds() }

// builds says the kind builds and pushes an image.
func (k kind) builds() bool { return k.build != nil }

// Handles lists the step types the family's pod activity runs (ContainerStep), sorted.
func Handles() []string { return slices.Sorted(maps.Keys(kinds)) }

// MachineHandles lists the step types a build machine runs (MachineStep), sorted.
func MachineHandles() []string {
	var types []string
	for t, k := range kinds {
		if k.onMachine() {
			types = append(types, t)
		}
	}
	slices.Sort(types)
	return types
}
