package stepspec

import "gopkg.in/yaml.v3"

// HttpSpec is an Http step's spec (spec 15.3): validation decodes the YAML into it, and the
// Http activity reads the rendered request from it. The fields marked json:"-" are the
// workflow's (the assertion and output variables, evaluated over the response) or not acted
// on; the activity does not read them.
type HttpSpec struct {
	Node              *yaml.Node      `yaml:"-" json:"-"`
	URL               string          `yaml:"url" json:"url" gantry:"required"`
	Method            string          `yaml:"method" json:"method" gantry:"required"`
	Headers           []Header        `yaml:"headers" json:"headers"`
	RequestBody       string          `yaml:"requestBody" json:"requestBody"`
	Assertion         string          `yaml:"assertion" json:"-"`
	InputVariables    []NameTypeValue `yaml:"inputVariables" json:"-"`
	OutputVariables   []NameTypeValue `yaml:"outputVariables" json:"-"`
	Certificate       string          `yaml:"certificate" json:"-"`
	CertificateKey    string          `yaml:"certificateKey" json:"-"`
	DelegateSelectors *yaml.Node      `yaml:"delegateSelectors" json:"-"`
}

// Header is an HTTP request header.
type Header struct {
	Node  *yaml.Node `yaml:"-" json:"-"`
	Key   string     `yaml:"key" json:"key" gantry:"required"`
	Value string     `yaml:"value" json:"value"`
}

// NameTypeValue is a step's input, environment or output variable; its value, once rendered,
// may be of any JSON type (Text reads it as text).
type NameTypeValue struct {
	Node  *yaml.Node `yaml:"-" json:"-"`
	Name  string     `yaml:"name" json:"name" gantry:"required"`
	Type  string     `yaml:"type" json:"type"`
	Value Text       `yaml:"value" json:"value"`
}
