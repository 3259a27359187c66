// Package reference holds what the reference product's published schema defines (types_gen.go,
// derived by hack/refschema): Gantry's validator tells a type it cannot run yet (unsupported)
// from one that does not exist (an error).
package reference

import "slices"

// IsStepType reports whether the reference defines the step type.
func IsStepType(t string) bool { return has(StepTypes, t) }

// IsStageType reports whether the reference defines the stage type.
func IsStageType(t string) bool { return has(StageTypes, t) }

// IsDeploymentType reports whether the reference defines the deployment type.
func IsDeploymentType(t string) bool { return has(DeploymentTypes, t) }

func has(sorted []string, t string) bool {
	_, ok := slices.BinarySearch(sorted, t)
	return ok
}

// HasField reports whether the reference defines field key on the object decoded into the Go
// type named goType ("pipeline.Step", "steps.ShellScript"; see Fields).
func HasField(goType, key string) bool {
	return has(Fields[goType], key) || has(EntityFields[goType], key)
}

// IsClosed reports whether the reference's schema forbids keys it does not define in the object
// decoded into the Go type named goType; elsewhere its parser ignores them.
func IsClosed(goType string) bool { return slices.Contains(Closed, goType) }

// EntityFields are fields of the reference's entity files (service, environment,
// infrastructure definition) that its published schema does not cover, as its documentation
// shows them.
var EntityFields = map[string][]string{
	"pipeline.Environment": {"overrides"},
	// Used by the reference to test a connection and by its Git Experience and SCM APIs.
	"pipeline.GitConnectorSpec":   {"apiAccess", "branch", "executeOnDelegate", "proxy", "validationRepo"},
	"pipeline.SCMConnectorSpec":   {"executeOnDelegate", "proxy", "validationRepo"},
	"pipeline.DockerRegistrySpec": {"executeOnDelegate", "proxy"},
	"pipeline.HelmRepoSpec":       {"executeOnDelegate", "proxy"},
}

// Significant are reference fields that change what a stage is when set to true: Gantry
// cannot honour them by ignoring them, so they are unsupported rather than a warning.
var Significant = map[string]string{
	"gitOpsEnabled": "GitOps deployments",
}
