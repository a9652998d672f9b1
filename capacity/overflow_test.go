package capacity

import (
	"math"
	"strings"
	"testing"
)

// Arithmetic on figures from a config or an engine is checked rather than wrapped.
func TestKVArithmeticOverflow(t *testing.T) {
	if _, err := KVBytesPerToken(Arch{Layers: math.MaxInt32, KVHeads: math.MaxInt32, HeadDim: math.MaxInt32, DTypeBytes: 1e6}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("KVBytesPerToken: %v, want out of range", err)
	}
	if _, err := KVCapacityFromMemory(math.MaxInt64, 1e6, 0, 1); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("KVCapacityFromMemory: %v, want out of range", err)
	}
	k := KVLimitedConcurrency(1<<20, 1e300, 16, "test")
	if k.Value != 0 || k.PerRequestTokens < 0 {
		t.Errorf("KVLimitedConcurrency with p95 1e300: %+v", k)
	}
	k = KVLimitedConcurrency(1<<20, 100, math.MaxInt, "test")
	if k.Value < 0 || k.PerRequestTokens < 0 {
		t.Errorf("KVLimitedConcurrency with a huge block: %+v", k)
	}
}
