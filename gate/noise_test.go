package gate

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// These tests measure the gate against between-run noise, as docs/noise.md reports: how
// often the recommended configuration fails when nothing changed (A/A), how often it
// catches a 20% ITL p99 regression, and what a drift over the job does to the committed
// baseline and to A/B. Runs come from gatetest's statistical model of per-request
// samples with the simulator's own noise (sim.Noise.Draw: the same speed factor, drift
// and engine-wide stalls per engine start), at the "gpu" level; every draw is seeded, so
// each test gives the same counts on every run.

// recommended is the configuration docs/gate.md recommends for a gate on a GPU runner.
var recommended = struct {
	requests, outputTokens   int
	calibrationRuns, repeats int // committed baseline: A/A runs calibrated, candidate runs
	blocks, blockRequests    int // A/B: blocks per job, requests per block
	rules                    []workload.Rule
}{
	requests: 300, outputTokens: 64,
	calibrationRuns: 10, repeats: 3,
	blocks: 16, blockRequests: 150,
	rules: []workload.Rule{
		{Metric: "goodput", Direction: "higher", Tolerance: 0.05},
		{Metric: "itl_p99", Direction: "lower", Tolerance: 0.05},
		{Metric: "ttft_p95", Direction: "lower", Tolerance: 0.10},
	},
}

var gpuNoise = sim.NoisePresets["gpu"]

// testResamples: the sampling noise of a run is its bootstrap's interquartile range,
// which 500 resamples estimate to within a few percent; the gate itself uses 2000.
const testResamples = 500

// noiseRun is a run of requests drawn from seed under the model's noise (s.Noise, or
// gpuNoise when that is unset); its engine start's noise is drawn from s.NoiseSeed, or
// from seed when that is 0 (a start of its own).
func noiseRun(seed uint64, requests int, s gatetest.Spec) *run {
	if s.Noise == (sim.Noise{}) {
		s.Noise = gpuNoise
	}
	s.Requests, s.OutputTokens, s.NoiseSeed = requests, recommended.outputTokens, cmp.Or(s.NoiseSeed, int64(seed))
	s.SkipSummary = true
	return runOf(gatetest.Record(seed, s))
}

func defsOf(t testing.TB) []metricDef {
	var defs []metricDef
	for _, r := range recommended.rules {
		d, err := lookupMetric(r.Metric)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	return defs
}

func policyOf(r workload.Rule) stats.Policy {
	dir, _ := parseDirection(r.Direction)
	return stats.Policy{Direction: dir, Tolerance: r.Tolerance, Seed: 1, Resamples: testResamples, AllowFewResamples: true}
}

// tally counts verdicts per rule and of the whole verdict (the worst of the rules).
type tally struct {
	mu    sync.Mutex
	n     int
	rules []map[Verdict]int
	whole map[Verdict]int
}

func newTally() *tally {
	t := &tally{whole: map[Verdict]int{}}
	for range recommended.rules {
		t.rules = append(t.rules, map[Verdict]int{})
	}
	return t
}

func (t *tally) add(vs []Verdict) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	for i, v := range vs {
		t.rules[i][v]++
	}
	t.whole[Worst(vs...)]++
}

func (t *tally) String() string {
	s := ""
	for i, r := range recommended.rules {
		s += fmt.Sprintf("%s %v; ", r.Metric, t.rules[i])
	}
	return s + fmt.Sprintf("verdict %v", t.whole)
}

// inParallel runs f(0..n-1) on one goroutine per CPU the process may use: every trial is
// seeded by its index, so the counts do not depend on how many run at once.
func inParallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// world is a committed baseline calibrated from its own A/A runs (fresh engine starts):
// each rule's spread and baseline side.
type world struct {
	spreads []stats.Spread
	sides   []stats.Side
}

var worlds struct {
	sync.Mutex
	m map[int]*world
}

// worldOf calibrates world w once; the tests share their worlds.
func worldOf(t *testing.T, defs []metricDef, w int) *world {
	worlds.Lock()
	if x := worlds.m[w]; x != nil {
		worlds.Unlock()
		return x
	}
	worlds.Unlock()
	base := make([]*run, recommended.calibrationRuns)
	for i := range base {
		base[i] = noiseRun(uint64(1_000_000+w*1000+i), recommended.requests, gatetest.Spec{})
	}
	x := &world{spreads: make([]stats.Spread, len(defs)), sides: make([]stats.Side, len(defs))}
	for j, d := range defs {
		ms := make([]stats.Metric, len(base))
		for i, r := range base {
			ms[i] = d.build(r)
		}
		var why string
		if x.spreads[j], x.sides[j], why = stats.MeasureSide(ms, policyOf(recommended.rules[j]), stats.StreamBaseline); why != "" {
			t.Error(why)
		}
	}
	worlds.Lock()
	defer worlds.Unlock()
	if worlds.m == nil {
		worlds.m = map[int]*world{}
	}
	worlds.m[w] = x
	return x
}

// committed runs nWorlds × perWorld trials of the committed-baseline mode: each world's
// calibrated baseline judges perWorld candidates of `repeats` runs made by cand.
func committed(t *testing.T, nWorlds, perWorld int, cand func(world, k, r int) gatetest.Spec) *tally {
	defs := defsOf(t)
	tl := newTally()
	inParallel(nWorlds*perWorld, func(i int) {
		w, k := i/perWorld, i%perWorld
		x := worldOf(t, defs, w)
		runs := make([]*run, recommended.repeats)
		for r := range runs {
			runs[r] = noiseRun(uint64(2_000_000+w*1000+k*10+r), recommended.requests, cand(w, k, r))
		}
		vs := make([]Verdict, len(defs))
		for j, d := range defs {
			ms := make([]stats.Metric, len(runs))
			for i, r := range runs {
				ms[i] = d.build(r)
			}
			pol := policyOf(recommended.rules[j])
			c, why := stats.Summarise(ms, pol, stats.StreamCandidate)
			res, _ := stats.CompareSides(x.sides[j], c, x.spreads[j], "calibration", pol, why)
			vs[j] = res.Verdict
		}
		tl.add(vs)
	})
	return tl
}

// abJob runs trials A/B jobs of the recommended blocks; spec(i, b) is block b's spec of
// trial i (the candidate's blocks are the odd letters of the layout).
func abJob(t *testing.T, trials int, spec func(i, b int, candidate bool) gatetest.Spec) *tally {
	defs := defsOf(t)
	tl := newTally()
	layout := Layout(recommended.blocks)
	inParallel(trials, func(i int) {
		blocks := make([]abBlock, len(layout))
		for b := range blocks {
			candidate := layout[b] == 'B'
			blocks[b] = abBlock{
				r:         noiseRun(uint64(3_000_000+i*100+b), recommended.blockRequests, spec(i, b, candidate)),
				candidate: candidate, at: float64(b),
			}
		}
		vs := make([]Verdict, len(defs))
		for j, d := range defs {
			vs[j] = evalBlocks(recommended.rules[j], d, blocks, policyOf(recommended.rules[j]), ABStop{}, startPart{}).Verdict
		}
		tl.add(vs)
	})
	return tl
}

// blockSpan is how long a block of the recommended A/B job lasts at gatetest's 10 req/s.
var blockSpan = time.Duration(recommended.blockRequests) * 100 * time.Millisecond

// atMost fails when any rule or the whole verdict failed more than max of the trials.
func atMost(t *testing.T, what string, tl *tally, v Verdict, max float64) {
	t.Helper()
	for i, r := range recommended.rules {
		if n := tl.rules[i][v]; float64(n) > max*float64(tl.n) {
			t.Errorf("%s: %s %s in %d of %d trials, want ≤ %.0f%%", what, r.Metric, v, n, tl.n, 100*max)
		}
	}
	if n := tl.whole[v]; float64(n) > max*float64(tl.n) {
		t.Errorf("%s: the verdict was %s in %d of %d trials, want ≤ %.0f%%", what, v, n, tl.n, 100*max)
	}
}

func TestNoiseAAFalseFail(t *testing.T) {
	waittest.ManyTrials(t)
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	// 200 trials in each mode: ≤ 1% is ≤ 2 fails.
	c := committed(t, 20, 10, func(int, int, int) gatetest.Spec { return gatetest.Spec{} })
	t.Logf("committed baseline, A/A, gpu noise: %v", c)
	atMost(t, "committed A/A", c, Fail, 0.01)
	ab := abJob(t, 200, func(int, int, bool) gatetest.Spec { return gatetest.Spec{} })
	t.Logf("A/B, A/A, gpu noise: %v", ab)
	atMost(t, "A/B A/A", ab, Fail, 0.01)
}

func TestNoisePowerITLRegression(t *testing.T) {
	waittest.ManyTrials(t)
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	// 60 trials each: a power of 95% gives ≤ 3 misses; one of 85% would give 4 or more
	// 99.7% of the time.
	slow := gatetest.Spec{GapScale: 1.2}
	c := committed(t, 6, 10, func(int, int, int) gatetest.Spec { return slow })
	ab := abJob(t, 60, func(_, _ int, candidate bool) gatetest.Spec {
		if candidate {
			return slow
		}
		return gatetest.Spec{}
	})
	t.Logf("20%% ITL regression, committed baseline: %v", c)
	t.Logf("20%% ITL regression, A/B: %v", ab)
	for _, m := range []struct {
		name string
		tl   *tally
	}{{"committed", c}, {"A/B", ab}} {
		if n := m.tl.rules[1][Fail]; n*100 < 95*m.tl.n {
			t.Errorf("%s: a 20%% ITL p99 regression failed %d of %d trials, want ≥ 95%%", m.name, n, m.tl.n)
		}
	}
}

// TestNoiseDrift injects a drift of the machine: 10% slower at the job's end than at its
// start. A/B measures both engines through it: it never fails, and decides as many of
// the same 60 jobs pass as without the drift (its other jobs are inconclusive, as they
// are without it: 16 blocks seldom show ITL p99 within 5%); the committed baseline,
// calibrated on a machine without it, sees the drift as a change of the candidate and
// its verdict flaps between pass and not.
func TestNoiseDrift(t *testing.T) {
	waittest.ManyTrials(t)
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	job := time.Duration(recommended.blocks) * blockSpan
	ab := abJob(t, 60, func(_, b int, _ bool) gatetest.Spec {
		return gatetest.Spec{Offset: time.Duration(b) * blockSpan, JobDrift: 0.10, JobLength: job}
	})
	still := abJob(t, 60, func(_, b int, _ bool) gatetest.Spec {
		return gatetest.Spec{Offset: time.Duration(b) * blockSpan}
	})
	// The committed candidate's two runs fill a job of the same length.
	run := time.Duration(recommended.requests) * 100 * time.Millisecond
	c := committed(t, 6, 10, func(_, _, r int) gatetest.Spec {
		return gatetest.Spec{Offset: time.Duration(r) * run, JobDrift: 0.10, JobLength: time.Duration(recommended.repeats) * run}
	})
	t.Logf("10%% drift, A/B: %v", ab)
	t.Logf("no drift, A/B: %v", still)
	t.Logf("10%% drift, committed baseline: %v", c)
	atMost(t, "A/B under drift", ab, Fail, 0.01)
	if n, n0 := ab.whole[Pass]+ab.whole[Improved], still.whole[Pass]+still.whole[Improved]; n*10 < n0*9 {
		t.Errorf("A/B under drift passed %d of %d trials, without it %d: want at least 90%% as many", n, ab.n, n0)
	}
	flapped := c.n - c.whole[Pass] - c.whole[Improved]
	if flapped*10 < c.n || c.whole[Pass] == 0 {
		t.Errorf("committed under drift: %d of %d trials not pass, want a verdict that flaps (≥ 10%% not pass, some pass)", flapped, c.n)
	}
}

// TestNoiseBaselineOfThreeTrials is the case a trial-range rule could never decide: a
// baseline of 3 trials, one candidate run. With the trials' spread in the interval, a
// large regression fails and an unchanged candidate passes.
func TestNoiseBaselineOfThreeTrials(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	var base []*result.Record
	for i := 1; i <= 3; i++ {
		base = append(base, rec(f, uint64(i), gatetest.Spec{Trial: i, Noise: gpuNoise, NoiseSeed: int64(i)}))
	}
	store := storeOf(t, base)
	for _, c := range []struct {
		scale float64
		want  Verdict
	}{{1, Pass}, {1.5, Fail}} {
		res := evaluate(t, f, store, rec(f, 9, gatetest.Spec{GapScale: c.scale, Noise: gpuNoise, NoiseSeed: 9}))
		m := res.Workloads[0].Metrics[0]
		if m.Verdict != c.want || m.Method != MethodTrials || m.Noise == nil || m.Noise.Source != "trials" || m.Noise.TotalSD <= 0 {
			t.Errorf("×%v against 3 trials: %s by %s, noise %+v; want %s by trials", c.scale, m.Verdict, m.Method, m.Noise, c.want)
		}
	}
}
