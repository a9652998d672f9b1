package statstest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The edge check: at the tolerance's edge (a true ratio of 1 + tolerance) a correct rule
// at α = 2.5% fails at most EdgeMaxFails of EdgeTrials trials (the binomial bound that a
// correct rule passes with probability ≥ 0.999 and a 5% rule fails with 0.998); at no
// change and at twice the tolerance SideTrials each are checked against the rates
// docs/noise.md states.
const (
	EdgeTrials   = 2000
	EdgeMaxFails = 73
	SideTrials   = 500
)

// EdgeRule is one decision rule as the edge matrix drives it: Fails draws one trial (a
// job, or a candidate against its baseline) whose candidate's log level lies delta above
// the baseline's, judges it as production does, and says whether it failed.
type EdgeRule struct {
	Name string
	// Control marks a negative control: a rule known to be wrong, which must fail the
	// edge check.
	Control bool
	Fails   func(r *rand.Rand, m NoiseModel, delta float64) bool
	// AA and Power are the rates docs/noise.md states: at most AA of unchanged
	// candidates fail, at least Power of those at twice the tolerance do (under every
	// noise model).
	AA, Power float64
}

// RunEdge drives every rule under every noise model at a tolerance, each pair on its
// own stream of seed (rule i of rules on the streams of rule first+i), and logs one
// docs/noise.md table row per pair. A rule fails the test where it breaks the edge
// check or its stated rates; a negative control where it passes the edge check (the
// check would have no teeth).
func RunEdge(t *testing.T, seed uint64, first int, tolerance float64, rules []EdgeRule) {
	t.Helper()
	edge := math.Log1p(tolerance)
	for i, ru := range rules {
		for j, m := range NoiseModels {
			t.Run(ru.Name+"/"+m.Name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, uint64(100*(first+i)+j)))
				count := func(n int, delta float64) int {
					k := 0
					for range n {
						if ru.Fails(r, m, delta) {
							k++
						}
					}
					return k
				}
				atEdge := count(EdgeTrials, edge)
				if ru.Control {
					t.Logf("| %s | %s | | %d/%d | |", ru.Name, m.Name, atEdge, EdgeTrials)
					if atEdge <= EdgeMaxFails {
						t.Errorf("negative control: %d of %d failed at the edge, want more than %d: the edge check has no teeth", atEdge, EdgeTrials, EdgeMaxFails)
					}
					return
				}
				aa, power := count(SideTrials, 0), count(SideTrials, 2*edge)
				t.Logf("| %s | %s | %d/%d | %d/%d | %d/%d |", ru.Name, m.Name, aa, SideTrials, atEdge, EdgeTrials, power, SideTrials)
				if atEdge > EdgeMaxFails {
					t.Errorf("%d of %d failed at the edge, want at most %d", atEdge, EdgeTrials, EdgeMaxFails)
				}
				if float64(aa) > ru.AA*SideTrials {
					t.Errorf("no change: %d of %d failed, want at most %.1f%%", aa, SideTrials, 100*ru.AA)
				}
				if float64(power) < ru.Power*SideTrials {
					t.Errorf("twice the tolerance: %d of %d failed, want at least %.0f%%", power, SideTrials, 100*ru.Power)
				}
			})
		}
	}
}
