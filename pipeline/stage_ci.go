package pipeline

import "gopkg.in/yaml.v3"

// CIStageSpec is a CI stage's spec (spec 22.1): where its steps run (an infrastructure, or a
// runtime placed on a build infrastructure), the codebase it clones, and its steps.
type CIStageSpec struct {
	StageSteps    `yaml:",inline"`
	CloneCodebase string `yaml:"cloneCodebase"`
	// Infrastructure is where the steps run (CIInfrastructure).
	Infrastructure      *yaml.Node `yaml:"infrastructure"`
	Runtime             *yaml.Node `yaml:"runtime"`
	Platform            *yaml.Node `yaml:"platform"`
	SharedPaths         *yaml.Node `yaml:"sharedPaths"`
	ServiceDependencies *yaml.Node `yaml:"serviceDependencies"`
	Caching             *yaml.Node `yaml:"caching"`
	BuildIntelligence   *yaml.Node `yaml:"buildIntelligence"`
	SlsaProvenance      *yaml.Node `yaml:"slsa_provenance"`
	// OnMachine says the stage names a runtime and runs on a build machine (ApplyBuildInfra).
	OnMachine bool `yaml:"-"`
	// MachineContainers says those build machines run steps that name an image, in containers.
	MachineContainers bool `yaml:"-"`
}

func decodeCISpec(d *Decoder, s *Stage) {
	s.CI = &CIStageSpec{}
	decodeStageSpec(d, s, s.CI)
}
