package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// TestPlanFromCalibration: slogate plan reads the calibration stored with a workload's
// baseline and the engine starts of its records, and prints each mode's GPU minutes
// from them; without a calibration it assumes a spread and says so.
func TestPlanFromCalibration(t *testing.T) {
	t.Parallel()
	cfgPath := writeConfig(t, strings.Replace(tinyConfig, "    slo:", "    repeats: 3\n    slo:", 1))
	f, err := workload.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(cfgPath)
	recDir := t.TempDir()
	var recs []*result.Record
	for i := 1; i <= 4; i++ {
		r := gatetest.Record(uint64(i), gatetest.Spec{Workload: "small", Requests: 200, Trial: i, Noise: sim.NoisePresets["gpu"], NoiseSeed: int64(i)})
		r.Warmup = &result.WarmupSummary{EngineStartS: 60}
		recs = append(recs, r)
		if err := result.Write(filepath.Join(recDir, "small.c"+itoa(i)+".json"), r); err != nil {
			t.Fatal(err)
		}
	}
	a, out, errb := testApp(t)
	// Before any calibration: the spread is assumed, and said to be.
	if code := a.run(cmdCtx(t), []string{"plan", "-c", cfgPath, "--baselines", filepath.Join(dir, "none")}); code != ExitOK || !strings.Contains(out.String(), "assumed: no calibration") || !strings.Contains(out.String(), "measure it with slogate calibrate") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	// The plan says what the p99 rule needs of a run, and that 40 requests of 12 tokens
	// (11 gaps each) fall short of it.
	if want := "itl_p99 needs 1000 gaps between chunks per run (10 beyond the percentile); a run of this workload gives about 440: the rule cannot pass"; !strings.Contains(out.String(), want) {
		t.Errorf("plan does not say what the p99 rule needs (%q):\n%s", want, out)
	}
	b, err := gate.FromRecords(recs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if b.Noise, err = gate.Calibrate(f, recs, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	bdir := filepath.Join(dir, "baselines")
	if _, err := gate.Write(bdir, b); err != nil {
		t.Fatal(err)
	}
	a, out, errb = testApp(t)
	code := a.run(cmdCtx(t), []string{"plan", "-c", cfgPath, "--baselines", bdir, "--records", recDir, "--blocks", "16"})
	got := out.String()
	// 40 requests at 20 req/s: a run of 2 s, a warm-up of 0.1 s; a start of 60 s from
	// the records. A/B with restarts: 16 × 62.1 s = 16.56 minutes.
	for _, want := range []string{"engine start 60 s (median of 4 recorded starts)", "calibration of 4 runs", "16 of at most 16"} {
		if !strings.Contains(got, want) {
			t.Errorf("the plan does not say %q:\n%s", want, got)
		}
	}
	// The workload's 3 repeats: the committed baseline on one start (60 s + 3 × 2.1 s)
	// and on a start each (3 × 62.1 s).
	for _, want := range []string{`(?m)^A/B, restarts +16\.6 `, `(?m)^committed baseline +1\.1 `, `(?m)^committed, a start per repeat +3\.1 `} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("the plan does not match %q:\n%s", want, got)
		}
	}
	if code != ExitOK || strings.Contains(got, "assumed") {
		t.Errorf("exit %d\n%s\n%s", code, got, errb)
	}
}

// TestPlanBadInput: a flag out of range is exit 2, quoting it and what is valid.
func TestPlanBadInput(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, tinyConfig)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--start-cost", "0s"}, "--start-cost 0s: want a duration above 0"},
		{[]string{"--blocks", "10"}, "--blocks 10: want a multiple of 4"},
		{[]string{"--min-blocks", "6", "--blocks", "4"}, "--min-blocks 6: want an even number from 4 to --blocks 4"},
		{[]string{"--min-blocks", "4", "--blocks", "32", "--futility-from", "6"}, "--futility-from 6: want 0 (never) or an even block from 8"},
		{[]string{"--min-blocks", "4", "--final-share", "1"}, "--final-share 1: want a share of the error rate from 0"},
		{[]string{"--final-share", "0.5"}, "--final-share 0.5: a job of a fixed 16 blocks is judged by the fixed interval"},
	} {
		a, _, errb := testApp(t)
		if code := a.run(cmdCtx(t), append([]string{"plan", "-c", cfg}, c.args...)); code != ExitBadInput || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, errb, c.want)
		}
	}
	closed := writeConfig(t, strings.Replace(tinyConfig, "arrival: {process: poisson, rate: 20}", "arrival: {process: closed, users: 2}", 1))
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"plan", "-c", closed}); code != ExitBadInput || !strings.Contains(errb.String(), `arrival "closed" without a rate`) {
		t.Errorf("closed loop: exit %d, %s", code, errb)
	}
}

// TestPlanRefusesAnUnreadableBaseline (finding 8): a truncated baseline is not passed
// over as "no calibration": plan exits 2 naming it.
func TestPlanRefusesAnUnreadableBaseline(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, tinyConfig)
	bad := filepath.Join(filepath.Dir(cfg), "baselines", "small", "cpu.json")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	if err := os.WriteFile(bad, []byte(`{"schema": "slogate.baseline/v1", "work`), 0o644); err != nil {
		t.Fatal(err)
	}
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"plan", "-c", cfg}); code != ExitBadInput || !strings.Contains(errb.String(), bad) {
		t.Errorf("exit %d, want 2 naming %s:\n%s%s", code, bad, out, errb)
	}
}
