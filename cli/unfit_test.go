package cli

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// saturateNth makes the n-th record a's runs measure (counting from 1) one whose load
// generator could not keep up, as a loaded runner's would be, and returns what
// result.Record.Unfit says of it.
func saturateNth(a *app, n int32) *atomic.Value {
	var calls atomic.Int32
	why := &atomic.Value{}
	a.measured = func(rec *result.Record) {
		if calls.Add(1) != n {
			return
		}
		rec.Summary.ReaderSaturated = true
		rec.Summary.ReaderLagms = &result.LagSummary{P50: 1, P99: 42, Max: 60}
		rec.MaxReaderLagMS = 25
		why.Store(rec.Unfit())
	}
	return why
}

// TestABUnfitBlockEndsTheJob: an A/B job whose third block did not measure the engine
// (its load generator could not keep up) stops there: exit 3, naming the block, its
// side and the reason; the three blocks measured are written and no fourth is run.
// (It used to run every remaining block, spending the GPU time, and be refused only by
// the gate at the end.)
func TestABUnfitBlockEndsTheJob(t *testing.T) {
	t.Parallel()
	base, cand := startSim(t, sim.Options{Seed: 1}), startSim(t, sim.Options{Seed: 2})
	cfg := writeConfig(t, strings.Replace(tinyConfig, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1))
	dir := t.TempDir()
	a, out, errb := testApp(t)
	why := saturateNth(a, 3)
	code := a.run(cmdCtx(t), []string{"ab", "-c", cfg, "--baseline-target", base, "--candidate-target", cand, "--blocks", "8", "-o", dir})
	if code != ExitFailure {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errb)
	}
	w, _ := why.Load().(string)
	if !strings.Contains(w, "could not keep up") {
		t.Fatalf("the third record was not made unfit: %q", w)
	}
	// Block 3 of the layout ABBA... is the candidate's (B).
	if want := "the job stops at block 3 (candidate side), which did not measure the engine: " + w; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errb)
	}
	for _, f := range []string{"small.ab1.baseline.json", "small.ab2.candidate.json", "small.ab3.candidate.json"} {
		if _, err := result.Read(filepath.Join(dir, f)); err != nil {
			t.Errorf("block measured before the stop: %v", err)
		}
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "small.ab4.*")); len(got) != 0 {
		t.Errorf("a fourth block ran after an unfit one: %v", got)
	}
	// The workload's thin ITL p99 tail (440 gaps a run) is warned of once for the job,
	// not once per block.
	if n := strings.Count(errb.String(), "itl_p99 needs 1000 gaps between chunks per run"); n != 1 {
		t.Errorf("the thin tail was warned of %d times in three blocks, want once:\n%s", n, errb)
	}
}

// TestCalibrationAndRepeatsRefuseAnUnfitRun: calibrate and run's repeats refuse a run
// that did not measure the engine by the one check, result.Record.Unfit, and say its
// words: calibrate stops at that run (exit 3, no further run), a repeat exits 3 with its
// record kept.
func TestCalibrationAndRepeatsRefuseAnUnfitRun(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	body := strings.Replace(tinyConfig, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1)
	cfg := writeConfig(t, body)

	t.Run("calibrate", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		a, out, errb := testApp(t)
		why := saturateNth(a, 2)
		code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--target", url, "--runs", "4", "-o", dir})
		w, _ := why.Load().(string)
		if code != ExitFailure || w == "" || !strings.Contains(errb.String(), w) {
			t.Fatalf("exit %d, want 3 saying %q\n%s\n%s", code, w, out, errb)
		}
		if _, err := os.Stat(filepath.Join(dir, "small.c3.json")); err == nil {
			t.Error("a third calibration run was made after an unfit one")
		}
	})
	t.Run("repeats", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		a, out, errb := testApp(t)
		why := saturateNth(a, 2)
		repeats := writeConfig(t, strings.Replace(body, "    seed: 3\n", "    seed: 3\n    repeats: 3\n", 1))
		code := a.run(cmdCtx(t), []string{"run", "-c", repeats, "--target", url, "-o", dir})
		w, _ := why.Load().(string)
		if code != ExitFailure || w == "" || !strings.Contains(errb.String(), "small: "+w) {
			t.Fatalf("exit %d, want 3 saying %q\n%s\n%s", code, w, out, errb)
		}
		if _, err := result.Read(filepath.Join(dir, "small.t2.json")); err != nil {
			t.Errorf("the unfit repeat's record: %v", err)
		}
	})
}

// TestFourTimesSlowerNeverExitsZero: against a baseline calibrated with four 60-request
// A/A runs, a candidate four times slower must not exit 0 under the default fail-on:
// its ITL p99 fails, or is at worst inconclusive (exit 4), never pass or warn. (It
// used to read "3.960, interval [0, ∞], WARN" and exit 0.)
func TestFourTimesSlowerNeverExitsZero(t *testing.T) {
	t.Parallel()
	base := startSim(t, sim.Options{Seed: 1})
	slow := startSim(t, sim.Options{Seed: 2, Faults: sim.Faults{Slowdown: 4}})
	cfg := writeConfig(t, strings.Replace(strings.Replace(tinyConfig, "requests: 40", "requests: 60", 1), "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1))
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--target", base, "--runs", "4", "-o", t.TempDir()}); code != ExitOK {
		t.Fatalf("calibrate: exit %d\n%s\n%s", code, out, errb)
	}
	dir := t.TempDir()
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", cfg, "--target", slow, "-o", dir}); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errb)
	}
	gdir := t.TempDir()
	a, out, errb = testApp(t)
	code := a.run(cmdCtx(t), []string{"gate", "-c", cfg, "-r", dir, "--json", filepath.Join(gdir, "gate.json")})
	if code == ExitOK {
		t.Fatalf("a candidate 4x slower exited 0\n%s\n%s", out, errb)
	}
	res := abGateJSON(t, gdir, code, out, errb)
	m := metricNamed(res.Workloads[0], "itl_p99")
	if m == nil || m.Method != gate.MethodCalibrated || (m.Verdict != gate.Fail && m.Verdict != gate.Inconclusive) {
		t.Fatalf("itl_p99 %+v: want a calibrated comparison that fails or is inconclusive\n%s", m, out)
	}
	if want := map[gate.Verdict]int{gate.Fail: ExitGateFailed, gate.Inconclusive: ExitInconclusive}[res.Verdict]; code != want {
		t.Errorf("verdict %s exit %d, want %d", res.Verdict, code, want)
	}
}

// TestABSleepSwapFutileIsNeverABarePass: an engine against itself with sleep swaps,
// sequential with a futility stop from block 8 under a 2% ITL p99 tolerance that no
// number of blocks up to 16 could decide: the job stops futile, and every rule judged by
// its blocks is inconclusive or passes with its interval inside the tolerance, never a
// pass with no interval (which it used to print, exit 0).
func TestABSleepSwapFutileIsNeverABarePass(t *testing.T) {
	t.Parallel()
	long(t)
	sw := sim.Swap{SleepMode: true, DevMode: true, SleepTime: 10 * time.Millisecond, WakeTime: 20 * time.Millisecond}
	ra, rb := startSwapSim(t, sw), startSwapSim(t, sw)
	rules := "gate:\n  rules:\n    goodput: {direction: higher, tolerance: 5%}\n    itl_p99: {direction: lower, tolerance: 2%}\n"
	withRules := func(cfg string) string {
		raw, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return writeConfig(t, string(raw)+rules)
	}
	base, cand := withRules(swapConfig(t, ra.URL, "{mode: sleep}")), withRules(swapConfig(t, rb.URL, "{mode: sleep}"))
	j := runABJob(t, cand, base, "--blocks", "16", "--min-blocks", "4", "--futility-from", "8")
	w := j.res.Workloads[0]
	if w.Stopped == nil {
		t.Fatalf("the job did not say how it stopped\n%s", j.errb)
	}
	for _, m := range w.Metrics {
		if m.Method != gate.MethodBlocks {
			continue
		}
		switch {
		case m.Verdict == gate.Inconclusive:
			if m.Undecided == "" {
				t.Errorf("%s: inconclusive without saying what would decide it", m.Metric)
			}
		case m.Verdict == gate.Pass:
			if m.Lo == nil || m.Hi == nil || (m.Direction == "lower" && *m.Hi > 1+m.Tolerance) || (m.Direction == "higher" && *m.Lo < 1-m.Tolerance) {
				t.Errorf("%s passed without its interval inside the tolerance: [%v, %v]", m.Metric, m.Lo, m.Hi)
			}
		case m.Verdict == gate.Improved:
			// The machine's load, not the engine, can make one side's blocks read
			// better (under the race suite ITL p99 did, with 16 blocks): that is the
			// rule's false-improve rate, not a bare pass, so long as an interval
			// wholly better than the tolerance says so (docs/noise.md's improved).
			if m.Lo == nil || m.Hi == nil || (m.Direction == "lower" && *m.Hi >= 1-m.Tolerance) || (m.Direction == "higher" && *m.Lo <= 1+m.Tolerance) {
				t.Errorf("%s improved without its interval wholly better than its tolerance: [%v, %v]", m.Metric, m.Lo, m.Hi)
			}
		default:
			t.Errorf("%s: %s, an engine against itself: want pass, improved or inconclusive", m.Metric, m.Verdict)
		}
	}
	if want := map[gate.Verdict]int{gate.Improved: ExitOK, gate.Pass: ExitOK, gate.Inconclusive: ExitInconclusive}[j.res.Verdict]; j.code != want || (j.res.Verdict != gate.Improved && j.res.Verdict != gate.Pass && j.res.Verdict != gate.Inconclusive) {
		t.Errorf("verdict %s exit %d\n%s", j.res.Verdict, j.code, j.errb)
	}
	t.Logf("stopped %+v; verdict %s", w.Stopped, j.res.Verdict)
}
