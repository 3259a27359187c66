// Package layering holds the test that keeps Gantry's packages in the import order
// docs/architecture.md states: no package imports one of a layer above its own, and workflow
// code never links an activity family.
package layering
