package gate

import (
	"os"
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// TestMain runs this package's tests at the lowest CPU priority. Its statistical suites
// (noise*_test.go) are pure arithmetic that keeps both cores busy for a minute or two;
// `go test ./...` runs them beside the cli tests, whose engines and load generators keep
// schedules to the millisecond. At the lowest priority the arithmetic takes whatever
// the timing tests leave, and their schedules hold.
func TestMain(m *testing.M) {
	waittest.YieldCPU()
	os.Exit(m.Run())
}

// manyTrials marks a test that measures a decision rule over many seeded trials: pure
// arithmetic whose inner loops the race detector does not instrument (gate/stats's
// kernels), ten times slower under -race for nothing it could find there. Under -race it
// skips, and under -short (the quick loop); `go test ./...` runs it, and so does
// .ci/run, once, without -race.
func manyTrials(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("seeded many-trial statistics: run without -race (go test ./... and .ci/run do)")
	}
	if testing.Short() {
		t.Skip("seeded many-trial statistics: run without -short")
	}
}
