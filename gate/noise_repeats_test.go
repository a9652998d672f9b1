package gate

import (
	"math"
	"sync"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/internal/waittest"
)

// repeatsTally counts what sequential candidate repeats did over many trials.
type repeatsTally struct {
	mu                     sync.Mutex
	n, fail, itlFail, runs int
	stoppedEarly           int
}

// seqRepeats runs nWorlds × perWorld candidates of at most the recommended 3 repeats
// against each world's calibrated baseline, looking after every run (the stopping rule
// of LookRepeats: stop when a rule is decided fail or every rule is decided), and
// judges each by the rules' sequences, as the gate judges sequential repeats.
func seqRepeats(t *testing.T, nWorlds, perWorld, repeats int, spec gatetest.Spec) *repeatsTally {
	defs := defsOf(t)
	tl := &repeatsTally{}
	inParallel(nWorlds*perWorld, func(i int) {
		w, k := i/perWorld, i%perWorld
		x := worldOf(t, defs, w)
		logs := make([][]float64, len(defs))
		look := func() (bool, []Verdict) {
			failed, open := false, 0
			vs := make([]Verdict, len(defs))
			for j := range defs {
				pol := policyOf(recommended.rules[j])
				p, lo, hi, dec, ok := stats.RepeatsSequence(x.sides[j], logs[j], len(logs[j]), x.spreads[j], pol) // each run its own start
				if !ok {
					t.Errorf("world %d %s: no sequence", w, recommended.rules[j].Metric)
					return true, vs
				}
				vs[j] = stats.Judge(pol.Direction, pol.Tolerance, p, lo, hi)
				switch dec {
				case stats.DecidedFail:
					failed = true
				case stats.Undecided:
					open++
				}
			}
			return failed || open == 0, vs
		}
		var vs []Verdict
		n := 0
		for r := range repeats {
			run := noiseRun(uint64(5_000_000+w*1000+k*10+r), recommended.requests, spec)
			for j, d := range defs {
				logs[j] = append(logs[j], math.Log(stats.Value(d.build(run))))
			}
			n++
			var stop bool
			if stop, vs = look(); stop {
				break
			}
		}
		tl.mu.Lock()
		defer tl.mu.Unlock()
		tl.n++
		tl.runs += n
		if n < repeats {
			tl.stoppedEarly++
		}
		if Worst(vs...) == Fail {
			tl.fail++
		}
		if vs[1] == Fail {
			tl.itlFail++
		}
	})
	return tl
}

// TestNoiseRepeatsSequential: a candidate's repeats that look after every run against
// the committed baseline (run --min-repeats 1). At most 3 runs (the recommended
// repeats) and at most 5, over 200 unchanged candidates and 60 with a 20% ITL p99
// regression: the log reports failures, early stops and runs (docs/noise.md). With at
// most 5, at most 1% of the unchanged fail, at least 95% of the regressed do, in fewer
// runs on average than the fixed 3.
func TestNoiseRepeatsSequential(t *testing.T) {
	waittest.ManyTrials(t)
	for _, most := range []int{3, 5} {
		aa := seqRepeats(t, 20, 10, most, gatetest.Spec{})
		slow := seqRepeats(t, 6, 10, most, gatetest.Spec{GapScale: 1.2})
		mean := func(x *repeatsTally) float64 { return float64(x.runs) / float64(x.n) }
		t.Logf("at most %d: A/A: %d of %d failed, %d stopped before the last run, %.2f runs on average", most, aa.fail, aa.n, aa.stoppedEarly, mean(aa))
		t.Logf("at most %d: ITL ×1.2: %d of %d failed on ITL p99, %d stopped before the last run, %.2f runs on average", most, slow.itlFail, slow.n, slow.stoppedEarly, mean(slow))
		if aa.fail*100 > aa.n {
			t.Errorf("at most %d: A/A: %d of %d failed, want ≤ 1%%", most, aa.fail, aa.n)
		}
		if most < 5 {
			continue
		}
		if slow.itlFail*100 < 95*slow.n {
			t.Errorf("at most %d: a 20%% ITL p99 regression failed %d of %d, want ≥ 95%%", most, slow.itlFail, slow.n)
		}
		if mean(slow) >= float64(recommended.repeats) {
			t.Errorf("at most %d: a 20%% ITL p99 regression ran %.2f runs on average, want fewer than the fixed %d", most, mean(slow), recommended.repeats)
		}
	}
}
