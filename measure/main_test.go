package measure

import (
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// TestMain runs the tests eight at a time: most of their time they wait on servers and
// clocks, not on the CPU.
func TestMain(m *testing.M) { waittest.Main(m, 8) }
