package gate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// nestedRuns draws a calibration of days × starts × runs values about 40 whose logs
// move by the given spreads between days, between engine starts of a day, between runs
// of a start and within a run (sampling), each run labelled with its start and day.
func nestedRuns(r *rand.Rand, days, starts, runs int, sdDay, sdStart, sdRun, within float64) ([]float64, []CalRun) {
	var vals []float64
	var info []CalRun
	for d := range days {
		bd := sdDay * r.NormFloat64()
		for s := range starts {
			bs := sdStart * r.NormFloat64()
			for range runs {
				x := bd + bs + sdRun*r.NormFloat64()
				if within > 0 {
					x += within * r.NormFloat64()
				}
				vals = append(vals, 40*math.Exp(x))
				info = append(info, CalRun{Start: d*starts + s, Day: time.Date(2026, 12, 1+d, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)})
			}
		}
	}
	return vals, info
}

// TestComponentsRecoverTheSources: values drawn with known spreads between days,
// between engine starts and between runs of one server (and no sampling noise) give
// those spreads back, within what 8 days × 4 starts × 3 runs can tell.
func TestComponentsRecoverTheSources(t *testing.T) {
	const days, starts, runs = 8, 4, 3
	const sdDay, sdStart, sdRun = 0.08, 0.05, 0.03
	var got [3]float64
	const reps = 40
	for rep := range reps {
		vals, info := nestedRuns(rand.New(rand.NewPCG(uint64(rep), 1)), days, starts, runs, sdDay, sdStart, sdRun, 0)
		c := componentsOf(vals, 0, info)
		if c.RunsSD == nil || c.StartsSD == nil || c.DaysSD == nil || len(c.Lacks) != 0 || c.DF != days-1 {
			t.Fatalf("components %+v", c)
		}
		got[0] += *c.RunsSD / reps
		got[1] += *c.StartsSD / reps
		got[2] += *c.DaysSD / reps
	}
	// Averages over 40 draws: each within 25% of the truth (the estimate of a standard
	// deviation is biased low by a few percent with few groups).
	for i, want := range []float64{sdRun, sdStart, sdDay} {
		if math.Abs(got[i]-want) > 0.25*want {
			t.Errorf("level %d: mean estimate %.4f, want %.4f", i, got[i], want)
		}
	}
}

// TestComponentsSayWhatIsLacking: each layout of runs measures what it can and names
// the rest.
func TestComponentsSayWhatIsLacking(t *testing.T) {
	vals := []float64{10, 11, 10.5, 9.8, 10.2, 10.9}
	day := func(d int) string { return time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC).Format(time.DateOnly) }
	for _, c := range []struct {
		name  string
		info  []CalRun
		lacks string
		runs  bool
	}{
		// One server, one day: runs measured, starts and days lacking.
		{"one server", []CalRun{{0, day(1)}, {0, day(1)}, {0, day(1)}, {0, day(1)}, {0, day(1)}, {0, day(1)}}, "between engine starts,between days", true},
		// A start per run (calibrate with target.start): starts measured, holding the
		// runs' part; days lacking.
		{"restarts", []CalRun{{0, day(1)}, {1, day(1)}, {2, day(1)}, {3, day(1)}, {4, day(1)}, {5, day(1)}}, "between days", false},
		// --restart-every 2 over two days (--append): all measured.
		{"two days", []CalRun{{0, day(1)}, {0, day(1)}, {1, day(1)}, {1, day(1)}, {2, day(2)}, {2, day(2)}}, "", true},
	} {
		got := componentsOf(vals, 0.01, c.info)
		if strings.Join(got.Lacks, ",") != c.lacks || (got.RunsSD != nil) != c.runs {
			t.Errorf("%s: %+v; want lacks %q, runs measured %v", c.name, got, c.lacks, c.runs)
		}
	}
}

// TestAppendCalibrationAcrossDays: a calibration of three restarted runs on one day,
// appended with three runs of a later job (two engine starts), measures the spread
// between days; the gate then stops saying it lacks it.
func TestAppendCalibrationAcrossDays(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	mk := func(seed uint64, day int) *result.Record {
		r := rec(f, seed, gatetest.Spec{Trial: int(seed), Requests: 300, Noise: gpuNoise, NoiseSeed: int64(seed)})
		r.Start = time.Date(2026, 12, day, 12, 0, int(seed), 0, time.UTC)
		return r
	}
	first := []*result.Record{mk(1, 1), mk(2, 1), mk(3, 1)}
	b, err := FromRecords(first, created)
	if err != nil {
		t.Fatal(err)
	}
	if b.Noise, err = Calibrate(f, first, true, created); err != nil {
		t.Fatal(err)
	}
	cand := mk(9, 3)
	judge := func(b *Baseline) MetricResult {
		data, err := Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		store := Store{FS: fstest.MapFS{RelPath(b.Workload, b.Hardware): &fstest.MapFile{Data: data}}, Dir: "baselines"}
		return evaluate(t, f, store, cand).Workloads[0].Metrics[0]
	}
	m := judge(b)
	if m.Method != MethodCalibrated || !strings.Contains(strings.Join(m.Warnings, "\n"), "did not measure the spread between days") {
		t.Fatalf("one day: %s, warnings %q", m.Method, m.Warnings)
	}
	later := []*result.Record{mk(4, 2), mk(5, 2), mk(6, 2)}
	nb, err := AppendCalibration(f, b, later, []int{0, 0, 1}, created)
	if err != nil {
		t.Fatal(err)
	}
	ms := nb.Noise.Metrics[0]
	if len(nb.Trials) != 6 || nb.Noise.Runs != 6 || len(nb.Noise.RunInfo) != 6 || nb.Noise.RunInfo[5].Start != 4 || nb.Noise.RunInfo[5].Day != "2026-12-02" {
		t.Fatalf("appended: %d trials, calibration %+v", len(nb.Trials), nb.Noise)
	}
	if c := ms.Components; c == nil || c.DaysSD == nil || c.RunsSD == nil || c.StartsSD == nil || len(c.Lacks) != 0 {
		t.Fatalf("components %+v", ms.Components)
	}
	if m := judge(nb); strings.Contains(strings.Join(m.Warnings, "\n"), "did not measure") {
		t.Errorf("two days: warnings %q", m.Warnings)
	}
	// A baseline of another workload's runs cannot take them.
	other := mk(7, 2)
	other.WorkloadHash = "sha256:other"
	if _, err := AppendCalibration(f, b, []*result.Record{other}, []int{0}, created); err == nil {
		t.Errorf("appended the runs of another workload")
	}
}

// TestRepeatsOnOneStartCountOnce: against a calibration whose runs each had their own
// engine start (so that its spread is the starts'), a candidate's three repeats on one
// start carry that start's offset once, undivided; on three starts it divides by three.
// The interval says so: its between-run part is the calibration's spread at the sides'
// distinct starts, not at their runs.
func TestRepeatsOnOneStartCountOnce(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	mk := func(seed uint64, start int) *result.Record {
		r := rec(f, seed, gatetest.Spec{Trial: int(seed), Requests: 300, Noise: gpuNoise, NoiseSeed: int64(seed)})
		r.Startup = &result.Startup{Start: start}
		return r
	}
	var cal []*result.Record
	for i := range 6 {
		cal = append(cal, mk(uint64(i+1), 0))
	}
	b, err := FromRecords(cal, created)
	if err != nil {
		t.Fatal(err)
	}
	if b.Noise, err = CalibrateStarts(f, cal, []int{0, 1, 2, 3, 4, 5}, created); err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	store := Store{FS: fstest.MapFS{RelPath(b.Workload, b.Hardware): &fstest.MapFile{Data: data}}, Dir: "baselines"}
	sp := b.Noise.Metrics[0].Spread()
	if !(sp.SharedSD > 0) || math.Abs(sp.SharedSD-sp.Between()) > 1e-6 {
		t.Fatalf("a calibration of one run per start: spread %+v, want all of its between-run part shared", sp)
	}
	between := func(starts ...int) float64 {
		var runs []*result.Record
		for i, s := range starts {
			runs = append(runs, mk(uint64(20+i), s))
			runs[i].Trial = i + 1
		}
		m := evaluate(t, f, store, runs...).Workloads[0].Metrics[0]
		if m.Method != MethodCalibrated || m.Noise == nil {
			t.Fatalf("starts %v: method %s, noise %+v", starts, m.Method, m.Noise)
		}
		return m.Noise.BetweenSD
	}
	x := sp.Between()
	below := sp.SharedBelow
	for _, c := range []struct {
		starts []int
		ks     float64
	}{
		{[]int{1, 1, 1}, 1.0/6 + 1},
		{[]int{1, 2, 3}, 1.0/6 + 1.0/3},
		{[]int{1, 1, 2}, 1.0/6 + 1.0/2},
	} {
		// The shared part counts once per distinct start: at least x²·ks. It is a
		// difference (the starts' spread less the runs' noise below it), so the gate may
		// take the whole spread of the starts in its place, at most (x² + below)·ks.
		lo, hi := x*math.Sqrt(c.ks), math.Sqrt((x*x+below)*c.ks)
		if got := between(c.starts...); got < lo*(1-1e-3) || got > hi*(1+1e-3) {
			t.Errorf("candidate on starts %v: between-run sd %.4f, want from %.4f (the calibration's part %.4f at the distinct starts) to %.4f (the starts' whole spread)", c.starts, got, lo, x, hi)
		}
	}
	if one, three := between(1, 1, 1), between(1, 2, 3); !(one > 1.3*three) {
		t.Errorf("three repeats on one start: between-run sd %.4f; on three: %.4f; want the one start's wider", one, three)
	}
}

// TestComponentsUnbiasedAtEveryLevel: over many calibrations of 4 days × 2 starts × 3
// runs with sampling noise, each level's estimate averages to its true variance (the
// days' part was taken out of their means with every lower level at full weight, and
// came out near half its truth); clamped at 0 for its standard deviation, it averages
// no lower than the truth.
func TestComponentsUnbiasedAtEveryLevel(t *testing.T) {
	const days, starts, runs, reps = 4, 2, 3, 4000
	const sdDay, sdStart, sdRun, within = 0.02, 0.03, 0.02, 0.03
	var sum [3]float64
	var clamped float64
	for rep := range reps {
		vals, info := nestedRuns(rand.New(rand.NewPCG(uint64(rep), 45)), days, starts, runs, sdDay, sdStart, sdRun, within)
		lv, ok := levelsOf(vals, within, info)
		if !ok || lv.runs.df != days*starts*(runs-1) || lv.starts.df != days*(starts-1) || lv.days.df != days-1 {
			t.Fatalf("levels %+v", lv)
		}
		sum[0] += lv.runs.v / reps
		sum[1] += lv.starts.v / reps
		sum[2] += lv.days.v / reps
		c := componentsOf(vals, within, info)
		clamped += *c.DaysSD * *c.DaysSD / reps
	}
	for i, want := range []float64{sdRun * sdRun, sdStart * sdStart, sdDay * sdDay} {
		if math.Abs(sum[i]-want) > 0.12*want {
			t.Errorf("level %d: mean estimate %.6f, want %.6f within 12%%", i, sum[i], want)
		}
	}
	if clamped < sdDay*sdDay {
		t.Errorf("days: the clamped estimate averages %.6f, below the true %.6f", clamped, sdDay*sdDay)
	}
	t.Logf("mean estimates: runs %.6f, starts %.6f, days %.6f (clamped %.6f); true %.6f, %.6f, %.6f", sum[0], sum[1], sum[2], clamped, sdRun*sdRun, sdStart*sdStart, sdDay*sdDay)
}
