package server

import _ "embed"

// OpenAPI is the API's description, served at /api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
