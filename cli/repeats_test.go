package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// TestRunRepeatsStopWhenDecided: against a baseline calibrated over four engine starts,
// a candidate of repeats 6 whose steps are four times as long (--slowdown 40 against 10)
// runs with --min-repeats 2: its trials stop as soon as ITL p99 is decided fail, before
// the sixth; the last trial's record says how many ran and why; the gate accepts the
// fewer records, judges the rule by the sequence its stop looked at, fails, and says in
// gate.json how many ran. An unchanged engine of repeats 3 with --min-repeats 3 runs
// every repeat, its last trial says so, and its gate accepts them.
//
// Its steps are long (≈ 20 ms against 80 ms): at 10 ms steps its calibration of four
// runs, measured beside the other tests and gate's Monte-Carlo suites, came out with an
// ITL p99 spread (the machine's stalls, not the engine's) wide enough that a candidate
// four times slower stayed undecided through its six runs, in one of three `go test
// ./...` runs. The repeats share one engine start, so their count cannot narrow the
// between-start part of that spread.
func TestRunRepeatsStopWhenDecided(t *testing.T) {
	quiet(t)
	long(t)
	withRepeats := func(cfg string, n int) string {
		return strings.Replace(cfg, "    seed: 3\n", "    seed: 3\n    repeats: "+itoa(n)+"\n", 1)
	}
	base := writeConfig(t, withRepeats(startedSimConfig(t, "--slowdown 10 --noise-speed-sd 0.05"), 6))
	baselines := filepath.Join(filepath.Dir(base), "baselines")
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", base, "--runs", "4", "-o", t.TempDir()}); code != ExitOK {
		t.Fatalf("calibrate: exit %d\n%s\n%s", code, out, errb)
	}

	cand := writeConfig(t, withRepeats(startedSimConfig(t, "--slowdown 40"), 6))
	dir := t.TempDir()
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", cand, "--min-repeats", "2", "--baselines", baselines, "-o", dir}); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errb)
	}
	var n int
	var last *result.Record
	for i := 1; i <= 6; i++ {
		rec, err := result.Read(filepath.Join(dir, "small.t"+itoa(i)+".json"))
		if err != nil {
			break
		}
		n, last = i, rec
	}
	if last == nil || n >= 6 || n < 2 {
		// What the gate makes of the trials says why they did not stop.
		g, gout, gerr := testApp(t)
		g.run(cmdCtx(t), []string{"gate", "-c", cand, "-r", dir, "--baselines", baselines})
		t.Fatalf("%d trials ran, want from 2 to 5\n%s\nthe gate on them:\n%s%s", n, errb, gout, gerr)
	}
	st := last.RepeatStop
	if st == nil || st.Reason != result.RepeatsDecided || st.Run != n || st.Repeats != 6 || st.MinRepeats != 2 || !strings.HasSuffix(st.Why, " decided fail") {
		t.Fatalf("the last trial's repeat_stop %+v, want decided fail after %d of 6", st, n)
	}
	// The rules the stop found decided fail: ITL p99 as a rule, and goodput too when
	// the four-times-longer steps cost it its SLO share early (under the race suite
	// goodput was decided first, after 2 runs).
	stopped := strings.Split(strings.TrimSuffix(st.Why, " decided fail"), ", ")
	for _, r := range stopped {
		if r != "itl_p99" && r != "goodput" {
			t.Fatalf("the last trial's repeat_stop %+v: stopped on %q, want itl_p99 or goodput", st, r)
		}
	}
	t.Logf("the regressed candidate stopped after %d of 6 trials: %s", n, st.Why)
	if !strings.Contains(errb.String(), "stopping after trial "+itoa(n)+" of at most 6") {
		t.Errorf("stderr does not say it stopped:\n%s", errb)
	}

	a, out, errb = testApp(t)
	gj := filepath.Join(t.TempDir(), "gate.json")
	code := a.run(cmdCtx(t), []string{"gate", "-c", cand, "-r", dir, "--baselines", baselines, "--json", gj})
	raw, err := os.ReadFile(gj)
	if err != nil {
		t.Fatalf("gate: exit %d, %v\n%s\n%s", code, err, out, errb)
	}
	var res gate.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	checkShownRatios(t, res, out.String(), "", "")
	w := res.Workloads[0]
	if code != ExitGateFailed || res.Verdict != gate.Fail || w.Repeats == nil || w.Repeats.Run != n || w.Trials.Candidate != n {
		t.Fatalf("gate: exit %d verdict %s, repeats %+v, trials %+v; want fail on %d trials\n%s", code, res.Verdict, w.Repeats, w.Trials, n, errb)
	}
	for _, m := range w.Metrics {
		if slices.Contains(stopped, m.Metric) && (m.Verdict != gate.Fail || m.Decided != "fail" || !slicesContains(m.Warnings, "sequential repeats")) {
			t.Errorf("%s: verdict %s decided %q warnings %q: want judged fail by the sequence", m.Metric, m.Verdict, m.Decided, m.Warnings)
		}
	}
	if !slicesContains(w.Warnings, "stopped after "+itoa(n)+" of at most 6 runs") {
		t.Errorf("gate.json does not say how many ran: %q", w.Warnings)
	}

	// The same engine as the baseline with repeats 3 (repeats are outside the workload
	// hash), looked at from the third: ran in full, accepted.
	same := writeConfig(t, withRepeats(startedSimConfig(t, "--slowdown 10 --noise-speed-sd 0.05"), 3))
	dir2 := t.TempDir()
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", same, "--min-repeats", "3", "--baselines", baselines, "-o", dir2}); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errb)
	}
	rec, err := result.Read(filepath.Join(dir2, "small.t3.json"))
	if err != nil || rec.RepeatStop == nil || rec.RepeatStop.Reason != result.RepeatsMax || rec.RepeatStop.Run != 3 || rec.RepeatStop.Repeats != 3 {
		t.Fatalf("trial 6: %v, repeat_stop %+v: want every repeat run", err, rec)
	}
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"gate", "-c", same, "-r", dir2, "--baselines", baselines}); code != ExitOK && code != ExitGateFailed && code != ExitInconclusive {
		t.Fatalf("gate of the full repeats: exit %d\n%s\n%s", code, out, errb)
	}
}

// TestGateRefusesMissingTrialsWithoutStop: fewer trial records than repeats, none saying
// its repeats stopped early, are still bad input (a run that did not finish).
func TestGateRefusesMissingTrialsWithoutStop(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, strings.Replace(tinyConfig, "    seed: 3\n", "    seed: 3\n    repeats: 3\n", 1))
	dir := t.TempDir()
	for i := 1; i <= 2; i++ {
		rec := &result.Record{Schema: result.Schema, Workload: "small", Trial: i}
		if err := result.Write(filepath.Join(dir, "small.t"+itoa(i)+".json"), rec); err != nil {
			t.Fatal(err)
		}
	}
	a, out, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"gate", "-c", cfg, "-r", dir})
	if code != ExitBadInput || !strings.Contains(errb.String(), "2 run records with trials [1 2], but repeats is 3") {
		t.Errorf("exit %d, want %d naming the trials\n%s\n%s", code, ExitBadInput, out, errb)
	}
}
