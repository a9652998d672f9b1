package stats

import (
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// TestMain runs this package's tests at the lowest CPU priority: their many-trial
// statistics keep both cores busy, beside tests in other binaries that keep schedules.
func TestMain(m *testing.M) { waittest.MainYield(m) }
