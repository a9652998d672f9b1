package stats

import (
	"os"
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// TestMain runs this package's tests at the lowest CPU priority: their many-trial
// statistics keep both cores busy, beside tests in other binaries that keep schedules.
func TestMain(m *testing.M) {
	waittest.YieldCPU()
	os.Exit(m.Run())
}

// manyTrials marks a test that measures a rule over many seeded trials: pure arithmetic
// whose inner loops (kernels.go) the race detector does not instrument, ten times slower
// under -race for nothing it could find there. Under -race it skips, and under -short
// (the quick loop); `go test ./...` runs it, and so does .ci/run, once, without -race.
func manyTrials(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("seeded many-trial statistics: run without -race (go test ./... and .ci/run do)")
	}
	if testing.Short() {
		t.Skip("seeded many-trial statistics: run without -short")
	}
}
