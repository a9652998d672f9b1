package sim

import (
	"testing"
	"time"

	"github.com/slogate/slogate/internal/waittest"
)

// TestMain runs the tests eight at a time (most of their time they wait on servers and
// clocks, not on the CPU), and fails them all after 3 minutes: the package takes under
// 20 s.
func TestMain(m *testing.M) { waittest.Main(m, 8, 3*time.Minute) }
