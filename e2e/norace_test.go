//go:build !race

package e2e

// raceDetector says the test binary is race-instrumented (go test -race).
const raceDetector = false
