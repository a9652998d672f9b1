package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// TestCIModeABAndCalibration: mode baseline with calibrate-runs writes a calibrated
// baseline; mode ab on a pull request takes the baseline side from the base commit's
// config (git show BASE:./slogate.yaml), measures both in alternating blocks, gates the
// candidate against it and comments once. Its job is sequential with a final share
// (inputs min-blocks and final-share): at most 8 blocks, which its sequences cannot cut
// short (they exclude nothing on fewer than four pairs), so it is judged at block 8 by
// the fixed interval, and says so.
func TestCIModeABAndCalibration(t *testing.T) {
	t.Parallel()
	long(t)
	dir := t.TempDir()
	head := startedSimConfig(t, "--slowdown 5")
	baseCfg := startedSimConfig(t, "--slowdown 5")
	if err := os.WriteFile(filepath.Join(dir, "slogate.yaml"), []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	gh := newFakeGitHub(t)
	prEvent := filepath.Join(dir, "pr.json")
	os.WriteFile(prEvent, []byte(`{"pull_request":{"number":7,"head":{"sha":"0123456789abcdef","repo":{"full_name":"acme/serving","fork":false}},"base":{"sha":"fedcba9876543210","repo":{"full_name":"acme/serving"}}}}`), 0o644)
	pushEvent := filepath.Join(dir, "push.json")
	os.WriteFile(pushEvent, []byte(`{"ref":"refs/heads/main"}`), 0o644)
	var shown []string
	git := func(ctx context.Context, d string, args ...string) ([]byte, error) {
		if len(args) == 2 && args[0] == "show" {
			shown = append(shown, args[1])
			return []byte(baseCfg), nil
		}
		return fakeGit(ctx, d, args...)
	}
	ci := func(mode, event, eventPath string, extra map[string]string) (int, string) {
		t.Helper()
		env := map[string]string{
			"INPUT_CONFIG": "slogate.yaml", "INPUT_MODE": mode, "INPUT_GITHUB-TOKEN": "tok-1",
			"INPUT_WORKING-DIRECTORY": dir, "GITHUB_API_URL": gh.srv.URL, "GITHUB_REPOSITORY": "acme/serving",
			"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": eventPath, "GITHUB_OUTPUT": filepath.Join(dir, "out-"+mode),
			"GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary-"+mode), "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42",
		}
		for k, v := range extra {
			env[k] = v
		}
		a, out, errb := testApp(t)
		a.getenv = func(k string) string { return env[k] }
		a.git = git
		code := a.run(cmdCtx(t), []string{"ci"})
		return code, out.String() + errb.String()
	}

	// A sequential calibration of 3 to 4 runs (calibrate --min-runs), an engine start
	// every 2 runs (calibrate --restart-every).
	code, log := ci("baseline", "push", pushEvent, map[string]string{"INPUT_CALIBRATE-RUNS": "4", "INPUT_CALIBRATE-MIN-RUNS": "3", "INPUT_CALIBRATE-RESTART-EVERY": "2", "INPUT_GITHUB-TOKEN": ""})
	if code != ExitOK {
		t.Fatalf("baseline: exit %d\n%s", code, log)
	}
	b, _, err := gate.DirStore(filepath.Join(dir, "baselines")).Lookup("small", "sim")
	if err != nil || b == nil || b.Noise == nil || b.Noise.Runs < 3 || b.Noise.Runs > 4 || len(b.Trials) != b.Noise.Runs {
		t.Fatalf("calibrated baseline %+v %v\n%s", b, err, log)
	}
	if ri := b.Noise.RunInfo; len(ri) < 3 || ri[0].Start != 0 || ri[1].Start != 0 || ri[2].Start != 1 {
		t.Errorf("the calibration's runs by engine start %+v, want two runs a start", ri)
	}
	for _, m := range b.Noise.Metrics {
		if c := m.Components; c == nil || c.RunsSD == nil || c.StartMeansSD == nil {
			t.Errorf("%s: components %+v, want runs of one server and the starts' means", m.Metric, c)
		}
	}
	if st := b.Noise.Stop; st == nil || st.MinRuns != 3 || st.MaxRuns != 4 || st.Runs != b.Noise.Runs || !strings.Contains(log, "stopped after") {
		t.Fatalf("the calibration's stop %+v, want 3 to 4 runs\n%s", st, log)
	}

	abInputs := map[string]string{"INPUT_BLOCKS": "8", "INPUT_MIN-BLOCKS": "4", "INPUT_FINAL-SHARE": "0.5"}
	code, log = ci("ab", "pull_request", prEvent, abInputs)
	if code == ExitGateFailed {
		// The same engine on both sides, restarted every block: a fail is the machine's
		// load on one side's blocks. Under the race suite one job read ITL p99 25 ms on
		// every baseline block and 35-47 ms on every candidate block (14 ms on both,
		// alone): once more, and twice in a row fails.
		t.Logf("an A/A job failed, the machine too busy to judge it? once more:\n%s", log)
		shown = nil
		code, log = ci("ab", "pull_request", prEvent, abInputs)
	}
	if code != ExitOK && code != ExitInconclusive { // the same engine: never a fail
		t.Fatalf("ab: exit %d\n%s", code, log)
	}
	if len(shown) != 1 || shown[0] != "fedcba9876543210:./slogate.yaml" {
		t.Errorf("git show calls %q", shown)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "slogate-out", "gate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res gate.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	w := res.Workloads[0]
	// The same engine on both sides: pass, or undecided on eight blocks, never fail.
	if w.Trials != (gate.TrialCounts{Baseline: 4, Candidate: 4}) || (res.Verdict != gate.Pass && res.Verdict != gate.Warn && res.Verdict != gate.Inconclusive) {
		t.Errorf("ab: verdict %s, trials %+v\n%s", res.Verdict, w.Trials, log)
	}
	if w.Stopped == nil || !strings.Contains(w.Stopped.Why, "judged there by the blocks' fixed interval at 97.5% confidence (--final-share 0.5)") {
		t.Errorf("ab: stopped %+v, want judged at block 8 by the fixed interval", w.Stopped)
	}
	if rec, err := result.Read(filepath.Join(dir, "slogate-out", "small.ab1.baseline.json")); err != nil || rec.AB.FinalShare != 0.5 || rec.AB.MinBlocks != 4 {
		t.Errorf("block 1's record: %v %+v", err, rec)
	}
	gh.mu.Lock()
	defer gh.mu.Unlock()
	if len(gh.comments) != 1 || !strings.Contains(gh.comments[0].Body, "ABBA") {
		t.Errorf("comments %+v", gh.comments)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".slogate-base-*")); len(matches) != 0 {
		t.Errorf("the base config was left behind: %v", matches)
	}
}
