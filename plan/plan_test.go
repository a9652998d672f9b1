package plan

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestCostsMinutes: the arithmetic of each recipe's GPU minutes, with the start and wake
// costs of vLLM serving an 8B model and a block of 150 requests at 10 req/s.
func TestCostsMinutes(t *testing.T) {
	j := Job{Run: 15 * time.Second, Start: 90 * time.Second, Wake: 3 * time.Second, Repeats: 3, MinBlocks: 16, MaxBlocks: 16}
	rs := Costs(j, []Rule{{Metric: "itl_p99", Tolerance: 0.05, RunSD: 0.04, CalRuns: 10}})
	for _, c := range []struct {
		mode    string
		minutes float64
	}{
		{ModeCommitted, 1.5 + 3*0.25},     // one start, three runs
		{ModeABRestarts, 16 * 105.0 / 60}, // a start per block: 28 minutes
		{ModeABSwaps, 3 + 16*18.0/60},     // two starts, a wake per block
	} {
		var got *Recipe
		for i := range rs {
			if rs[i].Mode == c.mode {
				got = &rs[i]
			}
		}
		if got == nil || !near(got.GPUMinutes, c.minutes) {
			t.Errorf("%s: %+v, want %.2f GPU minutes", c.mode, got, c.minutes)
		}
	}
}

// TestCostsSequentialBlocks: at low noise a sequential job expects to stop well before
// its maximum; at high noise it runs the maximum; the fixed job always does.
func TestCostsSequentialBlocks(t *testing.T) {
	j := Job{Run: 15 * time.Second, Start: 90 * time.Second, Repeats: 3, MinBlocks: 4, MaxBlocks: 32}
	quiet := Costs(j, []Rule{{Metric: "itl_p99", Tolerance: 0.10, RunSD: 0.01, CalRuns: 10}})[1]
	noisy := Costs(j, []Rule{{Metric: "itl_p99", Tolerance: 0.05, RunSD: 0.2, CalRuns: 10}})[1]
	j.MinBlocks = 32
	fixed := Costs(j, []Rule{{Metric: "itl_p99", Tolerance: 0.10, RunSD: 0.01, CalRuns: 10}})[1]
	if quiet.Blocks >= 16 || quiet.Blocks < 4 || noisy.Blocks != 32 || fixed.Blocks != 32 {
		t.Errorf("blocks: quiet %d, noisy %d, fixed %d; want quiet < 16, noisy and fixed 32", quiet.Blocks, noisy.Blocks, fixed.Blocks)
	}
	// The sequence pays for stopping early with a wider interval at the maximum.
	if !(fixed.Detectable[0] < quiet.Detectable[0]) {
		t.Errorf("detectable: fixed %v, sequential %v; want the fixed job's smaller", fixed.Detectable[0], quiet.Detectable[0])
	}
	// With a futility stop from block 16 the noisy job, which cannot fit within its
	// tolerance by 32, expects to stop at 16 (restarts and swaps alike); the quiet one,
	// decided before, is unchanged.
	j.MinBlocks, j.FutilityFrom = 4, 16
	rs := Costs(j, []Rule{{Metric: "itl_p99", Tolerance: 0.05, RunSD: 0.2, CalRuns: 10}})
	if rs[1].Blocks != 16 || rs[2].Blocks != 16 || rs[1].GPUMinutes >= noisy.GPUMinutes {
		t.Errorf("noisy with futility from 16: %d and %d blocks, %.1f GPU minutes (%.1f without); want 16", rs[1].Blocks, rs[2].Blocks, rs[1].GPUMinutes, noisy.GPUMinutes)
	}
	if q := Costs(j, []Rule{{Metric: "itl_p99", Tolerance: 0.10, RunSD: 0.01, CalRuns: 10}})[1]; q.Blocks != quiet.Blocks {
		t.Errorf("quiet with futility: %d blocks, want %d as without", q.Blocks, quiet.Blocks)
	}
}

// TestCostsFinalShare: with a final share the sequential job's maximum is judged by the
// fixed interval at that share of the error rate, so it detects a smaller change than
// the sequence there (restarts and swaps alike), though not as small as the fixed job
// at the whole error rate; the looks before it, at the rest of the error rate, stop an
// unchanged quiet job no earlier than without the share.
func TestCostsFinalShare(t *testing.T) {
	j := Job{Run: 15 * time.Second, Start: 90 * time.Second, Wake: 3 * time.Second, Repeats: 3, MinBlocks: 4, MaxBlocks: 16}
	rules := []Rule{{Metric: "itl_p99", Tolerance: 0.05, RunSD: 0.05, CalRuns: 10, StartsSD: 0.01, StartsDF: 9}}
	seq := Costs(j, rules)
	j.FinalShare = 0.5
	final := Costs(j, rules)
	j.MinBlocks, j.FinalShare = 16, 0
	fixed := Costs(j, rules)
	for i := 1; i <= 2; i++ {
		if !(fixed[i].Detectable[0] < final[i].Detectable[0] && final[i].Detectable[0] < seq[i].Detectable[0]) {
			t.Errorf("%s: detectable fixed %.4f, final share %.4f, sequence %.4f; want increasing", final[i].Mode, fixed[i].Detectable[0], final[i].Detectable[0], seq[i].Detectable[0])
		}
		if final[i].Blocks < seq[i].Blocks {
			t.Errorf("%s: %d blocks with the final share, %d without; want no fewer", final[i].Mode, final[i].Blocks, seq[i].Blocks)
		}
	}
}

// TestCostsDetectable: more calibration runs and repeats detect smaller changes, a
// noisier rule larger ones, and every detectable change lies beyond the tolerance.
func TestCostsDetectable(t *testing.T) {
	j := Job{Run: 30 * time.Second, Repeats: 1, MinBlocks: 16, MaxBlocks: 16}
	d := func(j Job, r Rule) float64 { return Costs(j, []Rule{r})[0].Detectable[0] }
	r := Rule{Tolerance: 0.05, RunSD: 0.04, CalRuns: 3}
	base := d(j, r)
	more := r
	more.CalRuns = 10
	j3 := j
	j3.Repeats = 3
	noisy := r
	noisy.RunSD = 0.1
	if !(base > 0.05 && d(j, more) < base && d(j3, r) < base && d(j, noisy) > base) {
		t.Errorf("detectable %v; 10 runs %v; 3 repeats %v; noisier %v", base, d(j, more), d(j3, r), d(j, noisy))
	}
}

// TestUsed: an A/B job's blocks count their own starts, a run's records one start
// between them, and the GPUs of the environment multiply.
func TestUsed(t *testing.T) {
	rec := func(ab bool, start float64, gpus string) *result.Record {
		r := &result.Record{Summary: result.Summary{DurationS: 30}, Warmup: &result.WarmupSummary{DurationS: 5, EngineStartS: start},
			Environment: map[string]string{"gpu.count": gpus}}
		if ab {
			r.AB = &result.ABBlock{Restarted: true}
		}
		return r
	}
	for _, c := range []struct {
		name string
		recs []*result.Record
		want float64
	}{
		// Three repeats on one engine start: the start once.
		{"run", []*result.Record{rec(false, 60, "1"), rec(false, 60, "1"), rec(false, 60, "1")}, (3*35 + 60) / 60.0},
		// Four blocks, each with its start.
		{"ab", []*result.Record{rec(true, 60, "1"), rec(true, 60, "1"), rec(true, 60, "1"), rec(true, 60, "1")}, 4 * 95 / 60.0},
		// Two GPUs held for the same time.
		{"two gpus", []*result.Record{rec(false, 60, "2")}, 2 * 95 / 60.0},
		// An engine that was already running: the runs only; a GPU count of 0 (a CPU
		// engine) counts the machine once.
		{"no start", []*result.Record{rec(false, 0, "0")}, 35 / 60.0},
	} {
		if got := Used(c.recs); !near(got, c.want) {
			t.Errorf("%s: %v GPU minutes, want %v", c.name, got, c.want)
		}
	}
}

// TestCostsSwapsAddTheSpreadBetweenStarts: a swapped job's engines keep one start's
// offset each; with the calibration's spread between starts the swaps recipe detects
// only larger changes than restarts, fixed or sequential, and a sequential job expects
// more blocks; without it, swaps are costed like restarts.
func TestCostsSwapsAddTheSpreadBetweenStarts(t *testing.T) {
	for _, minBlocks := range []int{32, 4} {
		j := Job{Run: 15 * time.Second, Start: 90 * time.Second, Wake: 3 * time.Second, Repeats: 3, MinBlocks: minBlocks, MaxBlocks: 32}
		r := Rule{Metric: "itl_p99", Tolerance: 0.10, RunSD: 0.02, CalRuns: 10}
		plain := Costs(j, []Rule{r})
		r.StartsSD, r.StartsDF = 0.03, 9
		with := Costs(j, []Rule{r})
		if plain[2].Detectable[0] != plain[1].Detectable[0] {
			t.Errorf("min %d: without a spread between starts, swaps detect %v, restarts %v: want the same", minBlocks, plain[2].Detectable[0], plain[1].Detectable[0])
		}
		if !(with[2].Detectable[0] > with[1].Detectable[0]) {
			t.Errorf("min %d: with a spread between starts, swaps detect %v, restarts %v: want swaps' larger", minBlocks, with[2].Detectable[0], with[1].Detectable[0])
		}
		if minBlocks < 32 && !(with[2].Blocks > with[1].Blocks) {
			t.Errorf("sequential: swaps expect %d blocks, restarts %d: want more for swaps", with[2].Blocks, with[1].Blocks)
		}
	}
}

// TestForWorkloadStartSpreadOfZero: a calibration whose spread between engine starts
// came out 0, or small against the runs' whole spread, is costed as the swapped job will
// judge it (gate.StartSpread): with the runs' whole spread in its place, and a warning,
// not as starts that never differ. A part that is nearly all of it is costed as
// measured, on its own degrees of freedom.
func TestForWorkloadStartSpreadOfZero(t *testing.T) {
	w := &workload.Workload{Name: "chat", Requests: 300, Arrival: workload.Arrival{Process: "poisson", Rate: 10}}
	zero, small, measured := 0.0, 0.02, 0.0398
	cal := func(sd *float64) *gate.Calibration {
		return &gate.Calibration{Source: "calibrate", Runs: 10, Restarts: true, Metrics: []gate.MetricSpread{{Metric: "itl_p99", RunSD: 0.04, WithinSD: 0.035, DF: 9,
			Components: &gate.Components{WithinSD: 0.035, StartsSD: sd, DF: 9, StartsDF: 9}}}}
	}
	rules := []workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.05}}
	in := Inputs{Job: Job{Start: 90 * time.Second, Wake: 3 * time.Second, MinBlocks: 16, MaxBlocks: 16}, Rules: rules, Calibration: cal(&zero), CalibrationPath: "x.json"}
	p, err := ForWorkload(w, in)
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Rules[0]; r.StartsSD != 0.04 || r.StartsDF != 9 {
		t.Errorf("a start spread of 0: costed with %v on %d df, want the runs' 0.04 on 9", r.StartsSD, r.StartsDF)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), gate.StartBoundWhy) {
		t.Errorf("no warning: %q", p.Warnings)
	}
	in.Calibration = cal(&small)
	if p, _ := ForWorkload(w, in); p.Rules[0].StartsSD != 0.04 || len(p.Warnings) != 1 {
		t.Errorf("a small start spread: %v, warnings %q, want the runs' 0.04 and a warning", p.Rules[0].StartsSD, p.Warnings)
	}
	in.Calibration = cal(&measured)
	if p, _ := ForWorkload(w, in); p.Rules[0].StartsSD != 0.0398 || p.Rules[0].StartsDF != 8 || len(p.Warnings) != 0 {
		t.Errorf("a measured start spread: %v on %d, warnings %q, want 0.0398 on 8 (9·(0.0398/0.04)⁴ = 8.8)", p.Rules[0].StartsSD, p.Rules[0].StartsDF, p.Warnings)
	}
}

// TestCostsCommittedStarts: with repeats, the committed baseline is costed on one
// engine start and on a start per repeat. The part of the spread one start shares makes
// the one start's repeats detect less; the start per repeat costs a start each. Each
// detectable change is the gate's own (stats.CompareSides' interval, stats.Detectable).
func TestCostsCommittedStarts(t *testing.T) {
	j := Job{Run: 15 * time.Second, Start: 90 * time.Second, Wake: 3 * time.Second, Repeats: 3, MinBlocks: 16, MaxBlocks: 16}
	const within = 0.03
	r := Rule{Metric: "itl_p99", Tolerance: 0.10, RunSD: math.Sqrt(0.05*0.05 + 0.02*0.02 + within*within), SharedSD: 0.05, CalRuns: 10, CalStarts: 10, DF: 9, WithinSD: within}
	rs := Costs(j, []Rule{r})
	if len(rs) != 4 || rs[0].Mode != ModeCommitted || rs[3].Mode != ModeCommittedRestarts {
		t.Fatalf("recipes %+v, want the committed baseline on one start first and on a start per repeat last", rs)
	}
	one, each := rs[0], rs[3]
	if !near(one.GPUMinutes, 1.5+3*0.25) || !near(each.GPUMinutes, 3*(1.5+0.25)) {
		t.Errorf("GPU minutes: one start %.2f, a start per repeat %.2f; want 2.25 and 5.25", one.GPUMinutes, each.GPUMinutes)
	}
	if !(one.Detectable[0] > each.Detectable[0]) {
		t.Errorf("detectable: one start %.3f, a start per repeat %.3f; want the one start's larger", one.Detectable[0], each.Detectable[0])
	}
	sp := stats.Spread{RunSD: r.RunSD, WithinSD: within, DF: 9, SharedSD: r.SharedSD}
	base := stats.Side{Runs: 10, Starts: 10, Within: within * within / 10}
	for _, c := range []struct {
		starts int
		got    float64
	}{{1, one.Detectable[0]}, {3, each.Detectable[0]}} {
		cand := stats.Side{Runs: 3, Starts: c.starts, Within: within * within / 3}
		_, nz := stats.CompareSides(base, cand, sp, "calibration", stats.Policy{Direction: stats.LowerIsBetter, Tolerance: r.Tolerance}, "")
		if want := stats.Detectable(nz, r.Tolerance, 0.95); math.Abs(c.got-want) > 1e-9 {
			t.Errorf("%d starts: plan says %.4f is detectable, the gate's interval %.4f", c.starts, c.got, want)
		}
	}
	// Nothing shared: the starts change the cost alone.
	r.SharedSD = 0
	rs = Costs(j, []Rule{r})
	if !near(rs[0].Detectable[0], rs[3].Detectable[0]) {
		t.Errorf("no shared part: detectable %.4f on one start, %.4f on a start each; want equal", rs[0].Detectable[0], rs[3].Detectable[0])
	}
	j.Repeats = 1
	if rs := Costs(j, []Rule{r}); len(rs) != 3 {
		t.Errorf("one repeat: %d recipes, want 3 (no second committed one)", len(rs))
	}
}

// TestCostsCommittedPoolsRepeats: against a calibration on one engine start the gate
// pools the candidate's repeats into the calibrated spread (gate.OneStart), so the
// committed baseline is costed on the calibration's degrees of freedom plus the repeats'
// less one: a 4-run calibration and 3 repeats on 5, which detect a smaller change than
// the calibration's 3 alone. ForWorkload marks the rule so from the calibration; one
// over several starts is costed on its own degrees of freedom.
func TestCostsCommittedPoolsRepeats(t *testing.T) {
	w := &workload.Workload{Name: "chat", Requests: 300, Repeats: 3, Arrival: workload.Arrival{Process: "poisson", Rate: 10}}
	const within = 0.02
	cal := &gate.Calibration{Source: "calibrate", Runs: 4, Metrics: []gate.MetricSpread{{Metric: "itl_p99", RunSD: 0.06, WithinSD: within, DF: 3}}}
	in := Inputs{Job: Job{Start: 90 * time.Second, Wake: 3 * time.Second, MinBlocks: 16, MaxBlocks: 16},
		Rules: []workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}}, Calibration: cal, CalibrationPath: "x.json"}
	detectable := func() float64 {
		t.Helper()
		p, err := ForWorkload(w, in)
		if err != nil {
			t.Fatal(err)
		}
		if p.Recipes[0].Mode != ModeCommitted {
			t.Fatalf("recipes %+v, want the committed baseline first", p.Recipes)
		}
		return p.Recipes[0].Detectable[0]
	}
	base := stats.Side{Runs: 4, Within: within * within / 4}
	cand := stats.Side{Runs: 3, Within: within * within / 3}
	pol := stats.Policy{Direction: stats.LowerIsBetter, Tolerance: 0.10}
	gateSays := func(df int) float64 {
		_, nz := stats.CompareSides(base, cand, stats.Spread{RunSD: 0.06, WithinSD: within, DF: df}, "calibration", pol, "")
		return stats.Detectable(nz, pol.Tolerance, 0.95)
	}
	got := detectable()
	if want := gateSays(5); math.Abs(got-want) > 1e-9 {
		t.Errorf("plan says %.4f is detectable, the gate's interval on 3 + 2 degrees of freedom %.4f", got, want)
	}
	if alone := gateSays(3); !(got < alone) {
		t.Errorf("pooled %.4f, the calibration's degrees of freedom alone %.4f: want the pooled smaller", got, alone)
	}
	// A calibration that stopped early is costed on its spread corrected for the stop,
	// as the gate judges on it (gate.MetricSpread.Spread).
	cal.Metrics[0].StopFactor = 1.5
	stopped := detectable()
	cal.Metrics[0].StopFactor = 0
	_, nz := stats.CompareSides(base, cand, stats.Spread{RunSD: 1.5 * 0.06, WithinSD: within, DF: 5}, "calibration", pol, "")
	if want := stats.Detectable(nz, pol.Tolerance, 0.95); math.Abs(stopped-want) > 1e-9 {
		t.Errorf("a calibration stopped early (StopFactor 1.5): plan says %.4f is detectable, the gate's interval on its corrected spread %.4f", stopped, want)
	}
	// Runs labelled with four starts: nothing is pooled.
	for i := range 4 {
		cal.RunInfo = append(cal.RunInfo, gate.CalRun{Start: i, Day: "2026-12-01"})
	}
	if got, want := detectable(), gateSays(3); math.Abs(got-want) > 1e-9 {
		t.Errorf("a calibration on 4 starts: plan says %.4f, the gate's interval on 3 degrees of freedom %.4f", got, want)
	}
}
