package policies

import "embed"

// Library is the starter policy library (policies/library): eight policies with their Rego
// tests and a sets.yaml, built into gantry.
//
//go:embed library
var Library embed.FS
