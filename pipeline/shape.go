package pipeline

import "github.com/gantry-cd/gantry/stepspec"

// Shapes the reference repeats across its schema, declared once and inlined (`yaml:",inline"`)
// or instantiated where they occur; the decoder reads their keys as the outer object's.

// Typed is an object whose spec is shaped by its type: `type: X` with `spec: {...}`.
type Typed[S any] = stepspec.Typed[S]

// Identity is the name and identifier every node and document has.
type Identity struct {
	Name       string `yaml:"name" gantry:"required"`
	Identifier string `yaml:"identifier" gantry:"required"`
}

// Entity is who a document (pipeline, service, environment, infrastructure, connector,
// template, trigger, input set) describes, and in which organization and project.
type Entity struct {
	Identity          `yaml:",inline"`
	Description       string            `yaml:"description"`
	Tags              map[string]string `yaml:"tags"`
	OrgIdentifier     string            `yaml:"orgIdentifier"`
	ProjectIdentifier string            `yaml:"projectIdentifier"`
}
