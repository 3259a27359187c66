package pipeline

import "gopkg.in/yaml.v3"

// CustomStageSpec is a Custom stage's spec: steps that deploy nothing of their own. Environment
// is accepted as the product accepts it (its schema has no such field); Gantry does not act on
// it, and says so.
type CustomStageSpec struct {
	StageSteps  `yaml:",inline"`
	Environment *yaml.Node `yaml:"environment"`
}

func decodeCustomSpec(d *Decoder, s *Stage) {
	s.Custom = &CustomStageSpec{}
	decodeStageSpec(d, s, s.Custom)
}
