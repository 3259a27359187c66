// Package docscheck holds the test that keeps the README and the guides whole: every relative
// link and every anchor it names resolves.
package docscheck
