package gate

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/gate/stats"
)

func TestSketchRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name string
		gaps []int64
	}{
		// No gaps (a one-token reply): no sketch at all.
		{"none", nil},
		// A zero gap (two chunks in one microsecond) has its own bucket.
		{"zero", []int64{0, 0, 5}},
		// The smallest gaps, where buckets are narrower than a microsecond.
		{"tiny", []int64{1, 2, 3, 4, 5, 6, 7}},
		// One gap of an hour, the largest a request can have.
		{"hour", []int64{3_600_000_000}},
		// Far apart buckets: skips longer than a byte's worth.
		{"sparse", []int64{10, 10_000_000, 20, 2_000_000_000}},
		// Many gaps in one bucket: a count beyond one varint byte.
		{"repeated", slices.Repeat([]int64{20_000}, 1000)},
		{"jittered", func() []int64 {
			g := make([]int64, 499)
			for i := range g {
				g[i] = int64(20_000 * math.Exp(0.2*r.NormFloat64()))
			}
			return g
		}()},
	} {
		s := encodeSketch(c.gaps)
		got, err := decodeSketch(s)
		if err != nil {
			t.Fatalf("%s: decode(%q): %v", c.name, s, err)
		}
		if want := quantizeGaps(c.gaps); !slices.Equal(got, want) {
			t.Errorf("%s: decoded %v, want %v", c.name, got, want)
		}
		for i, g := range slices.Sorted(slices.Values(c.gaps)) {
			if g == 0 {
				if got[i] != 0 {
					t.Errorf("%s: gap 0 read back as %v", c.name, got[i])
				}
				continue
			}
			if rel := math.Abs(got[i]/float64(g) - 1); rel > SketchResolution+1e-12 {
				t.Errorf("%s: gap %d read back as %v: %.4f%% off, more than %.4f%%", c.name, g, got[i], 100*rel, 100*SketchResolution)
			}
		}
	}
	if SketchResolution >= 0.01 {
		t.Errorf("sketch resolution %v, want under 1%%", SketchResolution)
	}
}

func TestDecodeSketchCorrupt(t *testing.T) {
	for _, c := range []struct {
		s, why string
	}{
		{"!!!", "not base64"},
		{"gA", "a varint cut short (0x80 continues)"},
		{"FAA", "a count of zero gaps"},
		{"/x8", "a first bucket beyond any gap"},
		{"FA", "a first bucket and no counts"},
		{"FO8uAg", "a skip of 3000 buckets, beyond any gap, then a count"},
	} {
		if _, err := decodeSketch(c.s); err == nil {
			t.Errorf("decodeSketch(%q) succeeded; want an error (%s)", c.s, c.why)
		} else if !strings.Contains(err.Error(), "corrupt ITL sketch") {
			t.Errorf("decodeSketch(%q): %v; want it to say the sketch is corrupt", c.s, err)
		}
	}
}

// TestSketchPooledP99 checks the documented resolution where it matters: the pooled ITL
// p99 of a realistic run, computed from the sketch, is within 1% of the exact one.
func TestSketchPooledP99(t *testing.T) {
	rec := gatetest.Record(3, gatetest.Spec{Requests: 2000, OutputTokens: 500, FixedOutput: true})
	exact := make([][]float64, len(rec.Requests))
	for i, q := range rec.Requests {
		for _, g := range q.ITLUS {
			exact[i] = append(exact[i], float64(g))
		}
	}
	sketched := runOf(rec).itl
	for _, q := range []float64{0.9, 0.99, 0.999} {
		e := stats.Value(stats.NewPooledPercentile(exact, q))
		s := stats.Value(stats.NewPooledPercentile(sketched, q))
		if rel := math.Abs(s/e - 1); rel > 0.01 {
			t.Errorf("pooled p%v: sketch %v µs, exact %v µs: %.3f%% off, want within 1%%", 100*q, s, e, 100*rel)
		}
	}
}
