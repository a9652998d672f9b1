package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// swapConfig is tinyConfig against url, with target.swap set to swap (YAML flow form).
// Sleeps and wakes are bounded by seconds (testSwapTimeouts) where swap does not say:
// the defaults of minutes would hold a test on an engine that never wakes.
func swapConfig(t *testing.T, url, swap string) string {
	t.Helper()
	swap = withSwapTimeouts(swap)
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target: {url: "+url+", api: completions, engine: auto, swap: "+swap+"}", 1)
	return writeConfig(t, strings.Replace(cfg, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1))
}

// withSwapTimeouts adds sleep_timeout and wake_timeout of 30 s to a target.swap in YAML
// flow form where it sets neither.
func withSwapTimeouts(swap string) string {
	for _, k := range []string{"sleep_timeout", "wake_timeout"} {
		if !strings.Contains(swap, k) {
			swap = strings.TrimSuffix(swap, "}") + ", " + k + ": 30s}"
		}
	}
	return swap
}

// startSwapSim serves a simulator with swap sw in the test process, its steps five times
// the profile's (ITL gaps of about 18 ms): at the profile's own 3.6 ms a busy test
// process's scheduling delays doubled one block's ITL p99 against another's of the same
// engine.
func startSwapSim(t *testing.T, sw sim.Swap) *sim.Running {
	t.Helper()
	r, err := sim.Start(context.Background(), sim.Options{Seed: 1, Swap: sw, Faults: sim.Faults{Slowdown: 5}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// TestABSwapsWithoutRestarts runs A/B jobs between two simulated engines that stay up
// for the whole job, put aside and brought back between blocks as target.swap says. Every
// block is measured without an error (no request reached an engine put aside), records
// what bringing its engine up cost, and the job's totals in gate.json are the sums: for
// ABBA, sleep puts both engines aside before block 1 and then wakes A, swaps to B for
// block 2 (A sleeps, B wakes), keeps B for block 3 and swaps back for block 4.
func TestABSwapsWithoutRestarts(t *testing.T) {
	t.Parallel()
	long(t)
	const sleepT, wakeT = 20 * time.Millisecond, 40 * time.Millisecond
	for _, c := range []struct {
		name          string
		swap          string
		sim           sim.Swap
		sleeps, wakes int
	}{
		// vLLM's sleep mode: two initial sleeps, then two more and three wakes.
		{"sleep", "{mode: sleep, wake_timeout: 30s}", sim.Swap{SleepMode: true, DevMode: true, SleepTime: sleepT, WakeTime: wakeT}, 4, 3},
		// SGLang's memory release counts the same way.
		{"memory_release", "{mode: memory_release}", sim.Swap{MemorySaver: true, SleepTime: sleepT, WakeTime: wakeT}, 4, 3},
		// Resident engines are left alone: nothing to count.
		{"resident", "{mode: resident}", sim.Swap{}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // independent jobs, each with its own engines
			ra, rb := startSwapSim(t, c.sim), startSwapSim(t, c.sim)
			base, cand := swapConfig(t, ra.URL, c.swap), swapConfig(t, rb.URL, c.swap)
			dir := t.TempDir()
			a, out, errb := testApp(t)
			code := a.run(cmdCtx(t), []string{"ab", "-c", cand, "--baseline-config", base, "--blocks", "4", "-o", dir})
			res := abGateJSON(t, dir, code, out, errb)
			checkAAOnUnknownStarts(t, res, code, errb) // once: ITL p99 20.5 ms on A's blocks, 24–27 ms on B's
			var sum result.ABSwap
			for k, side := range "ABBA" {
				name := result.SideBaseline
				if side == 'B' {
					name = result.SideCandidate
				}
				rec, err := result.Read(filepath.Join(dir, "small.ab"+itoa(k+1)+"."+name+".json"))
				if err != nil {
					t.Fatal(err)
				}
				if rec.AB == nil || rec.AB.Swap == nil || rec.AB.Swap.Mode != c.name || rec.AB.Restarted {
					t.Fatalf("block %d: ab %+v", k+1, rec.AB)
				}
				if len(rec.Summary.Errors) != 0 || rec.Summary.PrefixCache == nil || rec.Summary.PrefixCache.Hits != 0 {
					t.Errorf("block %d: errors %v, prefix cache %+v", k+1, rec.Summary.Errors, rec.Summary.PrefixCache)
				}
				sum.Add(rec.AB.Swap)
				// Block 3 runs on the engine block 2 brought up: nothing to do.
				if k == 2 && rec.AB.Swap.Seconds() != 0 {
					t.Errorf("block 3 kept block 2's engine, yet cost %+v", rec.AB.Swap)
				}
			}
			tot := res.Workloads[0].Swap
			if tot == nil || tot.Mode != c.name || tot.Sleeps != c.sleeps || tot.Wakes != c.wakes || tot.Starts != 0 ||
				tot.Sleeps != sum.Sleeps || tot.Wakes != sum.Wakes || tot.WakeS != sum.WakeS {
				t.Fatalf("job totals %+v, want %d sleeps and %d wakes, the sum of the blocks' %+v", tot, c.sleeps, c.wakes, sum)
			}
			// Each wake and sleep took at least its configured time (a lower bound holds on
			// any machine).
			if tot.WakeS < float64(c.wakes)*wakeT.Seconds() || tot.SleepS < float64(c.sleeps)*sleepT.Seconds() {
				t.Errorf("wakes %.3f s and sleeps %.3f s: less than the engines take", tot.WakeS, tot.SleepS)
			}
			if md, _ := os.ReadFile(filepath.Join(dir, "comment.md")); !strings.Contains(string(md), "engines swapped by "+strings.ReplaceAll(c.name, "_", `\_`)) {
				t.Errorf("the comment does not say how the engines were swapped:\n%s", md)
			}
			// The job leaves engines it did not start awake, as it found them.
			for _, r := range []*sim.Running{ra, rb} {
				resp, err := http.Post(r.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"sim-tiny","prompt":"hi","max_tokens":2}`))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s after the job: %d, want it awake", r.URL, resp.StatusCode)
				}
			}
		})
	}
}

// TestABSwapRefusedBeforeMeasuring: a server that does not offer the declared way of
// putting it aside fails the job with exit 2 before any block, naming the endpoint and
// what the server must be started with.
func TestABSwapRefusedBeforeMeasuring(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		swap string
		sim  sim.Swap
		want []string
	}{
		// vLLM without VLLM_SERVER_DEV_MODE: the routes are 404.
		{"no dev mode", "{mode: sleep}", sim.Swap{SleepMode: true},
			[]string{"target.swap.mode sleep for the baseline side", "(GET /is_sleeping): HTTP 404", "--enable-sleep-mode and VLLM_SERVER_DEV_MODE=1"}},
		// Dev mode without --enable-sleep-mode: the probe answers, the first sleep does not.
		{"no sleep mode", "{mode: sleep}", sim.Swap{DevMode: true},
			[]string{"putting the baseline engine aside", "(POST /sleep?level=1): HTTP 400", "--enable-sleep-mode"}},
		// SGLang without --enable-memory-saver accepts a release that frees nothing.
		{"no memory saver", "{mode: memory_release}", sim.Swap{},
			[]string{"(GET /server_info): enable_memory_saver is false", "--enable-memory-saver"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ra, rb := startSwapSim(t, c.sim), startSwapSim(t, c.sim)
			base, cand := swapConfig(t, ra.URL, c.swap), swapConfig(t, rb.URL, c.swap)
			dir := t.TempDir()
			a, out, errb := testApp(t)
			code := a.run(cmdCtx(t), []string{"ab", "-c", cand, "--baseline-config", base, "--blocks", "4", "-o", dir})
			if code != ExitBadInput {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitBadInput, out, errb)
			}
			for _, w := range c.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb)
				}
			}
			if got, _ := filepath.Glob(filepath.Join(dir, "small.ab*")); len(got) != 0 {
				t.Errorf("blocks measured before the refusal: %v", got)
			}
		})
	}
}

// TestABWakeTimeoutKeepsBlocks: a candidate engine whose wake never finishes fails the
// job with exit 3 once its wake_timeout passes, and the baseline block measured before
// stays on disk, record and journal.
func TestABWakeTimeoutKeepsBlocks(t *testing.T) {
	t.Parallel()
	ra := startSwapSim(t, sim.Swap{SleepMode: true, DevMode: true})
	rb := startSwapSim(t, sim.Swap{SleepMode: true, DevMode: true, WakeTime: time.Hour})
	base := swapConfig(t, ra.URL, "{mode: sleep}")
	cand := swapConfig(t, rb.URL, "{mode: sleep, wake_timeout: 1s}")
	dir := t.TempDir()
	a, out, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"ab", "-c", cand, "--baseline-config", base, "--blocks", "4", "-o", dir})
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFailure, out, errb)
	}
	for _, w := range []string{"bringing the candidate engine back (sleep, wake_timeout 1s)", "/wake_up"} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errb)
		}
	}
	rec, err := result.Read(filepath.Join(dir, "small.ab1.baseline.json"))
	if err != nil || rec.AB == nil || len(rec.Requests) == 0 {
		t.Fatalf("block 1 lost: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "small.ab1.baseline.journal.jsonl")); err != nil {
		t.Error(err)
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "small.ab2.*")); len(got) != 0 {
		t.Errorf("block 2 has files though its engine never woke: %v", got)
	}
}

// TestABSwapStartsEachEngineOnce: with target.start and target.swap, each engine is
// started once for the job (its start counted on the first block), slept and woken
// between blocks, and stopped at the end; no block starts an engine.
func TestABSwapStartsEachEngineOnce(t *testing.T) {
	t.Parallel()
	long(t)
	withSwap := func(simArgs string) string {
		cfg := startedSimConfig(t, simArgs)
		return writeConfig(t, strings.Replace(cfg, "  start:\n", "  swap: "+withSwapTimeouts("{mode: sleep}")+"\n  start:\n", 1))
	}
	base, cand := withSwap("--sleep-mode --dev-mode --wake-time 50ms"), withSwap("--sleep-mode --dev-mode --wake-time 50ms")
	dir := t.TempDir()
	a, out, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"ab", "-c", cand, "--baseline-config", base, "--blocks", "4", "-o", dir})
	res := abGateJSON(t, dir, code, out, errb)
	checkAAOnUnknownStarts(t, res, code, errb) // once in a loaded go test ./...
	if s := res.Workloads[0].Swap; s == nil || s.Mode != "sleep" || s.Starts != 2 || s.StartS <= 0 || s.Sleeps != 4 || s.Wakes != 3 {
		t.Fatalf("job totals %+v, want 2 starts, 4 sleeps, 3 wakes", s)
	}
	first, err := result.Read(filepath.Join(dir, "small.ab1.baseline.json"))
	if err != nil || first.AB.Swap.Starts != 2 || first.AB.Restarted {
		t.Fatalf("block 1 (%v): %+v", err, first.AB)
	}
	for _, side := range []string{result.SideBaseline, result.SideCandidate} {
		if _, err := os.Stat(filepath.Join(dir, "engine."+side+".log")); err != nil {
			t.Error(err)
		}
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "engine.ab*.log")); len(logs) != 0 {
		t.Errorf("blocks started engines: %v", logs)
	}
}

// TestABSwapAddsTheSpreadBetweenStarts: engines kept up through a job (sleep mode) keep
// the offset of their one start in every block, which the blocks cannot see. With a
// baseline calibrated over engine starts (here four starts of an engine whose speed
// varies by start), the sequential job's intervals add that spread once per side: each
// gated rule's noise says so (starts_sd, √2 times the calibration's between-start
// part) and its interval is at least that wide; the job says which calibration it used.
// Without a calibration the job warns that the spread is unknown and what to run.
func TestABSwapAddsTheSpreadBetweenStarts(t *testing.T) {
	t.Parallel()
	long(t)
	// Four starts at speeds ×0.63, ×0.93, ×1.29 and ×1.56 (seeds 3, 1, 5, 14 at a log-sd
	// of 0.3, steps four times the profile's so that a loaded host's delays do not
	// swamp them): a spread between starts well above a run's own, whatever the clock.
	// The three cases are independent jobs, each with its own engines: they run side by
	// side.
	sw := sim.Swap{SleepMode: true, DevMode: true, SleepTime: 10 * time.Millisecond, WakeTime: 20 * time.Millisecond}

	abJob := func(t *testing.T, rules, baselines string, args ...string) gate.WorkloadResult {
		t.Helper()
		ra, rb := startSwapSim(t, sw), startSwapSim(t, sw)
		withRules := func(cfg string) string {
			if rules == "" {
				return cfg
			}
			raw, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return writeConfig(t, string(raw)+rules)
		}
		base, cand := withRules(swapConfig(t, ra.URL, "{mode: sleep}")), withRules(swapConfig(t, rb.URL, "{mode: sleep}"))
		dir := t.TempDir()
		a, out, errb := testApp(t)
		code := a.run(cmdCtx(t), append([]string{"ab", "-c", cand, "--baseline-config", base, "--baselines", baselines, "-o", dir}, args...))
		raw, err := os.ReadFile(filepath.Join(dir, "gate.json"))
		if err != nil || (code != ExitOK && code != ExitGateFailed && code != ExitInconclusive) {
			t.Fatalf("exit %d, gate.json: %v\n%s\n%s", code, err, out, errb)
		}
		var res gate.Result
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		return res.Workloads[0]
	}

	t.Run("calibrated", func(t *testing.T) {
		t.Parallel()
		// ITL p50 carries each start's speed whatever the host does; ITL p99 of one run
		// is a handful of tokens, and on a loaded host (the race suite beside five other
		// jobs) the host's stalls in them outweighed the starts (within-run spread 0.34
		// against 0.31 between runs), so its part between starts came out 0.
		rules := "gate:\n  rules:\n    goodput: {direction: higher, tolerance: 5%}\n    itl_p50: {direction: lower, tolerance: 10%}\n    itl_p99: {direction: lower, tolerance: 10%}\n"
		calCfg := writeConfig(t, seededStartsConfig(t, "--slowdown 4 --noise-speed-sd 0.3", 3, 1, 5, 14)+rules)
		a, out, errb := testApp(t)
		if code := a.run(cmdCtx(t), []string{"calibrate", "-c", calCfg, "--runs", "4", "-o", t.TempDir()}); code != ExitOK {
			t.Fatalf("calibrate: exit %d\n%s\n%s", code, out, errb)
		}
		baselines := filepath.Join(filepath.Dir(calCfg), "baselines")
		w := abJob(t, rules, baselines, "--blocks", "12", "--min-blocks", "4")
		b, _, err := gate.DirStore(baselines).Lookup("small", w.Hardware)
		if err != nil || b == nil || b.Noise == nil {
			t.Fatalf("the calibrated baseline on %s: %v %v", w.Hardware, b, err)
		}
		if !slicesContains(w.Warnings, "the intervals add the spread between engine starts of the baseline's calibration") {
			t.Errorf("the job does not say it added the spread between starts: %q", w.Warnings)
		}
		checked := map[string]bool{}
		for _, m := range w.Metrics {
			ms := b.Noise.Lookup(m.Metric)
			if ms == nil || ms.Components == nil || ms.Components.StartsSD == nil || *ms.Components.StartsSD == 0 || m.Method != gate.MethodBlocks {
				continue
			}
			// The part as gate.StartSpread takes it: its own, or the whole spread of the
			// starts' means where that is the narrower (on 4 runs of 4 starts, mostly).
			sd, df, _, _ := gate.StartSpread(b.Noise, m.Metric, 0.95)
			want := math.Sqrt2 * sd
			t.Logf("%s: calibration's spread between starts %.3f, within a run %.3f; added %.3f on %.2f df", m.Metric, *ms.Components.StartsSD, ms.Components.WithinSD, sd, df)
			if m.Noise == nil || math.Abs(m.Noise.StartsSD-want) > 1e-5 || m.Noise.BetweenSD < m.Noise.StartsSD || math.Abs(m.Noise.StartsDF-df) > 0.01 {
				t.Errorf("%s: noise %+v, want starts_sd %.6f (√2 × %.6f) on %.2f df within between_sd", m.Metric, m.Noise, want, sd, df)
				continue
			}
			// The sequential interval is at least the start part's own at 95% (six pairs:
			// the pairs' sequence at 97.5% excludes something from five on).
			if m.Ratio == nil || m.Hi == nil || *m.Hi / *m.Ratio < math.Exp(1.96*want)*(1-1e-6) {
				t.Errorf("%s: ratio %v interval up to %v: narrower than the spread between starts (±%.1f%%) allows", m.Metric, m.Ratio, m.Hi, 100*(math.Exp(1.96*want)-1))
			}
			checked[m.Metric] = true
		}
		if !checked["itl_p50"] {
			t.Fatalf("ITL p50 had no spread between starts to add: calibration %+v, metrics %+v", b.Noise.Metrics, w.Metrics)
		}
	})

	// A calibration of two starts of two runs each whose part between starts came out 0
	// (set so here: with two starts it does about half the time) bounds it by the spread
	// of its starts' means, which calibrate stores (start_means_sd), and each rule says
	// so: starts_sd is √2 times that bound, not the spread of single runs.
	t.Run("a part of 0", func(t *testing.T) {
		t.Parallel()
		cfg := writeConfig(t, seededStartsConfig(t, "--slowdown 4 --noise-speed-sd 0.3", 3, 14))
		a, out, errb := testApp(t)
		recs := t.TempDir()
		if code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--runs", "4", "--restart-every", "2", "-o", recs}); code != ExitOK {
			t.Fatalf("calibrate: exit %d\n%s\n%s", code, out, errb)
		}
		dir := filepath.Join(filepath.Dir(cfg), "baselines")
		b := calibratedBaseline(t, cfg, recs)
		zero := 0.0
		bounds := map[string]float64{}
		for i := range b.Noise.Metrics {
			m := &b.Noise.Metrics[i]
			c := m.Components
			if c == nil || c.StartsSD == nil || c.StartMeansSD == nil || *c.StartMeansSD < *c.StartsSD || c.RunsSD == nil {
				t.Fatalf("%s: calibrate stored components %+v: want the starts' means and parts", m.Metric, c)
			}
			c.StartsSD = &zero
			bounds[m.Metric] = *c.StartMeansSD
		}
		if _, err := gate.Write(dir, b); err != nil {
			t.Fatal(err)
		}
		w := abJob(t, "", dir, "--blocks", "4")
		checked := 0
		for _, m := range w.Metrics {
			bound, ok := bounds[m.Metric]
			if !ok || m.Method != gate.MethodBlocks || bound == 0 {
				continue
			}
			if want := math.Round(math.Sqrt2*bound*1e6) / 1e6; m.Noise == nil || math.Abs(m.Noise.StartsSD-want) > 2e-6 {
				t.Errorf("%s: noise %+v, want starts_sd %.6f (√2 × the starts' means' spread %.6f)", m.Metric, m.Noise, want, bound)
			}
			if !slicesContains(m.Warnings, gate.StartBoundWhy) || !slicesContains(m.Warnings, "the interval adds that whole spread") {
				t.Errorf("%s: no warning of the bound: %q", m.Metric, m.Warnings)
			}
			checked++
		}
		if checked == 0 {
			t.Fatalf("no gated rule was judged by its blocks: %+v", w.Metrics)
		}
	})

	t.Run("uncalibrated", func(t *testing.T) {
		t.Parallel()
		w := abJob(t, "", t.TempDir(), "--blocks", "4")
		if !slicesContains(w.Warnings, "no calibration of the baseline was found") || !slicesContains(w.Warnings, "slogate calibrate --restart-every K") {
			t.Errorf("the job does not warn that the spread between starts is unknown: %q", w.Warnings)
		}
		for _, m := range w.Metrics {
			if m.Method != gate.MethodBlocks {
				continue
			}
			if m.Noise != nil && m.Noise.StartsSD != 0 {
				t.Errorf("%s: starts_sd %v without a calibration", m.Metric, m.Noise.StartsSD)
			}
			if !slicesContains(m.Warnings, "the spread between engine starts is unknown") {
				t.Errorf("%s: no warning that the interval leaves out the starts: %q", m.Metric, m.Warnings)
			}
		}
	})
}

// checkAAOnUnknownStarts checks an A/A job of one engine build on both sides, each
// engine started once for the job, without a calibration: what differs between the two
// starts is one offset the blocks cannot see, and the gate says it leaves it out. So a
// fail is possible, and each failed rule must carry that warning (exit 1); otherwise the
// job passes or is inconclusive, and it never errs.
func checkAAOnUnknownStarts(t *testing.T, res gate.Result, code int, errb fmt.Stringer) {
	t.Helper()
	if res.Verdict != gate.Fail {
		if (code != ExitOK && code != ExitInconclusive) || res.Verdict == gate.Error {
			t.Fatalf("exit %d verdict %s\n%s", code, res.Verdict, errb)
		}
		return
	}
	if code != ExitGateFailed {
		t.Fatalf("a fail exits %d, want 1\n%s", code, errb)
	}
	for _, m := range res.Workloads[0].Metrics {
		if m.Verdict == gate.Fail && !slicesContains(m.Warnings, "the spread between engine starts is unknown") {
			t.Fatalf("%s failed without the warning that the starts' spread is unknown: %+v\n%s", m.Metric, m, errb)
		}
	}
	t.Logf("the two engines' starts differed (a fail the gate warned of)")
}

// slicesContains says whether any of xs contains sub.
func slicesContains(xs []string, sub string) bool {
	for _, x := range xs {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}
