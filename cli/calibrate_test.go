package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/result"
)

// startedSimConfig is tinyConfig with an engine that target.start launches: this test
// binary serving the simulator with the given sim flags.
func startedSimConfig(t *testing.T, simArgs string) string {
	t.Helper()
	addr := waittest.HoldPort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(tinyConfig, "target: {api: completions, engine: auto}",
		"target:\n  url: http://"+addr+"\n  api: completions\n  start:\n    command: ["+self+"]\n    env: {SLOGATE_TEST_SIM_ADDR: \""+addr+"\", SLOGATE_TEST_SIM_ARGS: \""+simArgs+"\"}\n    ready_timeout: 60s", 1)
	return strings.Replace(cfg, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1)
}

// seededStartsConfig is startedSimConfig whose k-th engine start draws its noise from
// the k-th of seeds (cycling), so that starts vary by a known amount.
func seededStartsConfig(t *testing.T, simArgs string, seeds ...int) string {
	t.Helper()
	var ss []string
	for _, s := range seeds {
		ss = append(ss, strconv.Itoa(s))
	}
	counter := filepath.Join(t.TempDir(), "starts")
	return strings.Replace(startedSimConfig(t, simArgs), "SLOGATE_TEST_SIM_ARGS:",
		"SLOGATE_TEST_SIM_SEEDS: \""+strings.Join(ss, ",")+"\", SLOGATE_TEST_SIM_COUNTER: \""+counter+"\", SLOGATE_TEST_SIM_ARGS:", 1)
}

// TestCalibrateStoresTheSpread: three A/A runs, each on a fresh start of an engine whose
// speed varies by start, become a baseline whose calibration holds every gated metric's
// run-to-run spread; the gate then judges a run against it by that spread.
func TestCalibrateStoresTheSpread(t *testing.T) {
	t.Parallel()
	long(t)
	// Three starts at speeds ×0.63, ×1.29 and ×1.56 (seeds 3, 5, 14 at a log-sd of 0.3).
	cfg := writeConfig(t, seededStartsConfig(t, "--noise-speed-sd 0.3", 3, 5, 14))
	dir := t.TempDir()
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--runs", "3", "-o", dir}); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	for i := 1; i <= 3; i++ {
		rec, err := result.Read(filepath.Join(dir, "small.c"+string(rune('0'+i))+".json"))
		if err != nil {
			t.Errorf("calibration record %d: %v", i, err)
			continue
		}
		// Each calibration run kept its requests in a journal as they finished, as run
		// does: one line per request after the head, warm-up ones included.
		j, err := os.ReadFile(filepath.Join(dir, "small.c"+string(rune('0'+i))+".journal.jsonl"))
		if n := strings.Count(string(j), "\n"); err != nil || n != 1+len(rec.Requests)+rec.Warmup.Requests {
			t.Errorf("calibration run %d: journal of %d lines (%v), want a head and %d requests", i, n, err, len(rec.Requests)+rec.Warmup.Requests)
		}
	}
	store := gate.DirStore(filepath.Join(filepath.Dir(cfg), "baselines"))
	first, err := result.Read(filepath.Join(dir, "small.c1.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := store.Lookup("small", gate.HardwareOf(first))
	if err != nil || b == nil {
		t.Fatalf("baseline: %v %v\n%s", b, err, out)
	}
	if len(b.Trials) != 3 || b.Noise == nil || b.Noise.Runs != 3 || !b.Noise.Restarts {
		t.Fatalf("baseline trials %d, noise %+v", len(b.Trials), b.Noise)
	}
	var itl *gate.MetricSpread
	for i, m := range b.Noise.Metrics {
		if m.Metric == "itl_p99" {
			itl = &b.Noise.Metrics[i]
		}
	}
	// The three starts' speeds differ: so do their runs.
	if itl == nil || itl.DF != 2 || len(itl.Values) != 3 || itl.RunSD <= 0 {
		t.Fatalf("itl_p99 spread %+v", itl)
	}
	if !strings.Contains(out.String(), "itl_p99") || !strings.Contains(out.String(), "run-to-run") {
		t.Errorf("stdout does not report the spread:\n%s", out)
	}

	// A run gated against the calibrated baseline is judged by its spread.
	a2, out2, errb2 := testApp(t)
	res := t.TempDir()
	if code := a2.run(cmdCtx(t), []string{"run", "-c", cfg, "-o", res}); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out2, errb2)
	}
	a3, out3, errb3 := testApp(t)
	gj := filepath.Join(t.TempDir(), "gate.json")
	code := a3.run(cmdCtx(t), []string{"gate", "-c", cfg, "-r", res, "--json", gj})
	if code != ExitOK && code != ExitGateFailed && code != ExitInconclusive {
		t.Fatalf("gate: exit %d\n%s\n%s", code, out3, errb3)
	}
	g, err := os.ReadFile(gj)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(g), `"method": "calibrated"`) || !strings.Contains(string(g), `"source": "calibration"`) {
		t.Errorf("gate.json does not use the calibration:\n%s", g)
	}
}

// TestCalibrateRestartEveryAndAppend: four runs with an engine start every two split the
// spread between runs of one server and between engine starts; two more runs of a later
// job appended to the same baseline (an engine start each, the default) join its
// calibration, their engine starts numbered after the first job's. The runs all fall on
// one day, so the days' part is lacking, and the calibration says so.
func TestCalibrateRestartEveryAndAppend(t *testing.T) {
	t.Parallel()
	long(t)
	cfg := writeConfig(t, startedSimConfig(t, "--noise-speed-sd 0.3"))
	dir := t.TempDir()
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--runs", "4", "--restart-every", "2", "-o", dir}); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	// Two starts served four runs: the engine log of each start, none for the others.
	for i, want := range []bool{true, false, true, false} {
		if _, err := os.Stat(filepath.Join(dir, "engine.c"+itoa(i+1)+".log")); (err == nil) != want {
			t.Errorf("run %d: engine log %v, want one %v", i+1, err, want)
		}
	}
	if !strings.Contains(out.String(), "between engine starts ±") || !strings.Contains(out.String(), "between days not measured") {
		t.Errorf("stdout does not give the spread by source:\n%s", out)
	}
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--runs", "2", "--append", "-o", t.TempDir()}); code != ExitOK {
		t.Fatalf("append: exit %d\n%s\n%s", code, out, errb)
	}
	b := calibratedBaseline(t, cfg, dir)
	var starts []int
	for _, x := range b.Noise.RunInfo {
		starts = append(starts, x.Start)
	}
	if len(b.Trials) != 6 || b.Noise.Runs != 6 || fmt.Sprint(starts) != "[0 0 1 1 2 3]" {
		t.Fatalf("after append: %d trials, %d runs, starts %v", len(b.Trials), b.Noise.Runs, starts)
	}
	for _, m := range b.Noise.Metrics {
		c := m.Components
		if c == nil || c.RunsSD == nil || c.StartsSD == nil || c.DaysSD != nil || strings.Join(c.Lacks, ",") != gate.LacksDays {
			t.Errorf("%s: components %+v", m.Metric, c)
			continue
		}
		// The starts' means spread by the part between starts and what their runs add.
		if c.StartMeansSD == nil || *c.StartMeansSD < *c.StartsSD {
			t.Errorf("%s: start_means_sd %v, want at least between_starts_sd %v", m.Metric, c.StartMeansSD, *c.StartsSD)
		}
	}
}

// TestCalibrateSpreadFlagsRefused: --restart-every without target.start, and --append
// without a baseline to append to, are bad input.
func TestCalibrateSpreadFlagsRefused(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, tinyConfig)
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--restart-every", "2"}); code != ExitBadInput || !strings.Contains(errb.String(), "--restart-every 2: ") || !strings.Contains(errb.String(), "has no target.start") {
		t.Errorf("--restart-every without target.start: exit %d, %s", code, errb)
	}
	started := writeConfig(t, startedSimConfig(t, ""))
	a, _, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", started, "--runs", "1", "--append", "-o", t.TempDir()}); code != ExitBadInput || !strings.Contains(errb.String(), "to append to") {
		t.Errorf("--append without a baseline: exit %d, %s", code, errb)
	}
}

// TestCalibrateStopsWhenDecided: calibrate --min-runs 3 --runs 10 against an engine
// whose starts differ by tens of percent stops after the third run: goodput (paced by
// the arrivals, the same every run) supports its 5% at once, and ITL p99's 2% is too
// narrow for that spread whatever seven more runs could show. The baseline holds the
// three runs and says why they stopped; stdout and stderr say so. --min-runs outside 3
// to --runs is bad input. (A rule of a spread that is not 0 decided supported is
// gate's TestLookCalibrationDecides: ITL p99 of 40 requests moved up to ×1.6 between
// runs of one engine on this shared host, too much to check here.)
func TestCalibrateStopsWhenDecided(t *testing.T) {
	t.Parallel()
	long(t)
	rules := "gate:\n  rules:\n    goodput: {direction: higher, tolerance: 5%}\n    itl_p99: {direction: lower, tolerance: 2%}\n"
	cfg := writeConfig(t, seededStartsConfig(t, "--slowdown 4 --noise-speed-sd 0.3", 3, 5, 14, 1)+rules)
	dir := t.TempDir()
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"calibrate", "-c", cfg, "--runs", "10", "--min-runs", "3", "-o", dir}); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	if _, err := os.Stat(filepath.Join(dir, "small.c4.json")); err == nil {
		t.Errorf("a fourth run was made after every rule was decided\n%s", errb)
	}
	b := calibratedBaseline(t, cfg, dir)
	st := b.Noise.Stop
	if len(b.Trials) != 3 || st == nil || st.Reason != gate.CalStopDecided || st.Runs != 3 || st.MinRuns != 3 || st.MaxRuns != 10 {
		t.Fatalf("%d trials, stop %+v: want decided after 3 of at most 10", len(b.Trials), st)
	}
	decided := map[string]string{}
	for _, l := range st.Rules {
		decided[l.Metric] = l.Decided
	}
	if decided["goodput"] != gate.CalSupported || decided["itl_p99"] != gate.CalTooNarrow {
		t.Errorf("decisions %v, want goodput supported and itl_p99 too narrow (%s)", decided, st.Why)
	}
	if !strings.Contains(errb.String(), "stopping after run 3 of at most 10") || !strings.Contains(out.String(), "stopped after 3 of at most 10 runs (decided)") || !strings.Contains(out.String(), "itl_p99 cannot support ±2%") {
		t.Errorf("the output does not say why the runs stopped:\nstdout:\n%s\nstderr:\n%s", out, errb)
	}

	for _, bad := range [][]string{{"--runs", "10", "--min-runs", "2"}, {"--runs", "4", "--min-runs", "5"}} {
		a, _, errb := testApp(t)
		if code := a.run(cmdCtx(t), append([]string{"calibrate", "-c", cfg}, bad...)); code != ExitBadInput || !strings.Contains(errb.String(), "--min-runs "+bad[3]+": want 0") {
			t.Errorf("%v: exit %d, %s", bad, code, errb)
		}
	}
}

// calibratedBaseline is the calibrated baseline of workload small that calibrate -c cfg
// -o dir wrote beside cfg; the test fails without one.
func calibratedBaseline(t *testing.T, cfg, dir string) *gate.Baseline {
	t.Helper()
	first, err := result.Read(filepath.Join(dir, "small.c1.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := gate.DirStore(filepath.Join(filepath.Dir(cfg), "baselines")).Lookup("small", gate.HardwareOf(first))
	if err != nil || b == nil || b.Noise == nil {
		t.Fatalf("baseline %v: %v", b, err)
	}
	return b
}

// TestRunRestartEvery: run --restart-every 2 with repeats 4 starts the engine afresh
// for trials 1 and 3: trials 1 and 2 share one start, 3 and 4 another, each record
// numbering its start; each start has its log. Without target.start the flag is
// refused, as is a negative K.
func TestRunRestartEvery(t *testing.T) {
	t.Parallel()
	long(t)
	cfg := writeConfig(t, strings.Replace(startedSimConfig(t, ""), "    seed: 3\n", "    seed: 3\n    repeats: 4\n", 1))
	dir := t.TempDir()
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", cfg, "--restart-every", "2", "-o", dir}); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	var at []time.Time
	for i := 1; i <= 4; i++ {
		rec, err := result.Read(filepath.Join(dir, "small.t"+strconv.Itoa(i)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Startup == nil || rec.Startup.Start != (i+1)/2 {
			t.Fatalf("trial %d: startup %+v, want start %d", i, rec.Startup, (i+1)/2)
		}
		at = append(at, rec.Startup.StartedAt)
	}
	if !at[0].Equal(at[1]) || !at[2].Equal(at[3]) || !at[1].Before(at[2]) {
		t.Errorf("engine starts at %v: want trials 1-2 on one start and 3-4 on a later one", at)
	}
	for _, log := range []string{"engine.log", "engine.start2.log"} {
		if _, err := os.Stat(filepath.Join(dir, log)); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct {
		cfg, k, want string
	}{
		{writeConfig(t, tinyConfig), "2", "has no target.start"},
		{cfg, "-1", "--restart-every -1: want 0"},
	} {
		a, _, errb := testApp(t)
		if code := a.run(cmdCtx(t), []string{"run", "-c", c.cfg, "--restart-every", c.k, "-o", t.TempDir()}); code != ExitBadInput || !strings.Contains(errb.String(), c.want) {
			t.Errorf("--restart-every %s: exit %d, want 2 saying %q:\n%s", c.k, code, c.want, errb)
		}
	}
}

// TestCIRestartEvery: the Action's restart-every input reaches the run: mode run with
// repeats 2 and restart-every 1 measures each trial on its own engine start.
func TestCIRestartEvery(t *testing.T) {
	t.Parallel()
	long(t)
	dir := t.TempDir()
	cfg := strings.Replace(startedSimConfig(t, ""), "    seed: 3\n", "    seed: 3\n    repeats: 2\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "slogate.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "pr.json"), []byte(`{"pull_request":{"number":7,"head":{"repo":{"full_name":"acme/serving","fork":false}},"base":{"repo":{"full_name":"acme/serving"}}}}`), 0o644)
	code, log, _ := ciStep(t, map[string]string{
		"INPUT_CONFIG": "slogate.yaml", "INPUT_MODE": "run", "INPUT_RESTART-EVERY": "1", "INPUT_WORKING-DIRECTORY": dir,
		"GITHUB_REPOSITORY": "acme/serving", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": filepath.Join(dir, "pr.json"),
	})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, log)
	}
	for i := 1; i <= 2; i++ {
		rec, err := result.Read(filepath.Join(dir, "slogate-out", "small.t"+strconv.Itoa(i)+".json"))
		if err != nil || rec.Startup == nil || rec.Startup.Start != i {
			t.Errorf("trial %d: %v, startup %+v: want its own start, number %d", i, err, rec, i)
		}
	}
}

// TestSpreadTextNoPartAboveTheWhole: calibrate's line for a metric whose runs' own
// sampling noise exceeds the spread between them says so, instead of listing a part
// bigger than the whole ("run-to-run ±1.9%, of which … within a run ±2.6%"); a stopped
// calibration's correction is shown beside what was measured.
func TestSpreadTextNoPartAboveTheWhole(t *testing.T) {
	got := spreadText(gate.MetricSpread{Metric: "itl_p99", RunSD: 0.019, WithinSD: 0.026, DF: 3}, 4)
	for _, want := range []string{"run-to-run ±1.9%", "each run's own sampling noise ±2.6%, more than the whole: these 4 runs spread less than their sampling noise alone"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "of which") {
		t.Errorf("%q lists a part bigger than the whole", got)
	}
	got = spreadText(gate.MetricSpread{Metric: "itl_p99", RunSD: 0.05, WithinSD: 0.03, DF: 9}, 10)
	if !strings.Contains(got, "each run's own sampling noise ±3.0%, and between runs beyond it ±4.0%") {
		t.Errorf("%q", got)
	}
	got = spreadText(gate.MetricSpread{Metric: "itl_p99", RunSD: 0.02, WithinSD: 0.01, DF: 7, StopFactor: 1.5}, 8)
	if !strings.Contains(got, "run-to-run ±3.0% (sd of the log; ±2.0% as measured, taken ×1.50 for the stop's selection)") {
		t.Errorf("%q", got)
	}
}
