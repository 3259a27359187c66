package workflows_test

import (
	"os"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestMain names the test binary for the SDK up front. Otherwise the SDK's test environment
// computes the MD5 of the whole test binary the first time workflow code schedules an
// activity, inside that workflow task: with -race on a loaded 2-core machine that took over a
// second, and the SDK's deadlock detector failed the stage ("didn't yield for over 1s"). Real
// workers compute it once when they start, outside workflow code.
func TestMain(m *testing.M) {
	worker.SetBinaryChecksum("gantry-workflows-test")
	os.Exit(m.Run())
}
