package pipeline

import "github.com/gantry-cd/gantry/stepspec"

// The pod a containerized step group or a Container step runs in, and a container's
// resources (stepspec's: the container steps' specs hold them).
type (
	StepGroupInfra     = stepspec.StepGroupInfra
	PodInfra           = stepspec.PodInfra
	SecurityContext    = stepspec.SecurityContext
	Capabilities       = stepspec.Capabilities
	Toleration         = stepspec.Toleration
	PodVolume          = stepspec.PodVolume
	PodVolumeSpec      = stepspec.PodVolumeSpec
	ContainerResources = stepspec.ContainerResources
	ResourceAmount     = stepspec.ResourceAmount
)

// DefaultNamespace is where a pod whose infrastructure names no namespace runs.
const DefaultNamespace = stepspec.DefaultNamespace
