package gate

import (
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// TestMain runs this package's tests at the lowest CPU priority. Its statistical suites
// (noise*_test.go) are pure arithmetic that keeps both cores busy for a minute or two;
// `go test ./...` runs them beside the cli tests, whose engines and load generators keep
// schedules to the millisecond. At the lowest priority the arithmetic takes whatever
// the timing tests leave, and their schedules hold.
func TestMain(m *testing.M) { waittest.MainYield(m) }
