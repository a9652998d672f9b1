package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/sim"
)

// A workload that asks for a sweep (sweep:) gets one from slogate ci: mode baseline commits
// a sweep baseline beside the run's, and mode gate sweeps the candidate too, so that the
// comment's fleet section prices the capacity the SLO allows on both sides instead of
// saying that no sweep was run.
func TestCISweepsWorkloadsThatAskForIt(t *testing.T) {
	t.Parallel()
	long(t)
	url := startSim(t, sim.Options{Seed: 1})
	dir := t.TempDir()
	cfg := strings.Replace(tinyConfig, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n    sweep: {min_rate: 8, max_rate: 16, precision: 60%, step_requests: 20}\n", 1) +
		"gate:\n  baselines: baselines\n  drift: {tool.version: ignore}\n  rules:\n    goodput: {direction: higher, tolerance: 50%}\n    error_rate: {max: 5%}\n" +
		"capacity: {peak_rps: 50, target_utilization: 60%, headroom: 30%, redundancy: 1, gpu_hour_usd: 2.5}\n"
	if err := os.WriteFile(filepath.Join(dir, "slogate.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "pr.json"), []byte(`{"pull_request":{"number":7,"head":{"repo":{"full_name":"acme/serving","fork":false}},"base":{"repo":{"full_name":"acme/serving"}}}}`), 0o644)
	gh := newFakeGitHub(t)
	env := func(mode, event string) map[string]string {
		return map[string]string{
			"INPUT_CONFIG": "slogate.yaml", "INPUT_MODE": mode, "INPUT_TARGET": url, "INPUT_GITHUB-TOKEN": "tok-1",
			"INPUT_WORKING-DIRECTORY": dir, "GITHUB_API_URL": gh.srv.URL, "GITHUB_REPOSITORY": "acme/serving",
			"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": filepath.Join(dir, "pr.json"),
			"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42", "GITHUB_SHA": "0123456789abcdef",
		}
	}
	e := env("baseline", "push")
	e["INPUT_GITHUB-TOKEN"] = ""
	if code, log, _ := ciStep(t, e); code != ExitOK {
		t.Fatalf("baseline: exit %d\n%s", code, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "baselines", "small", "sim.sweep.json")); err != nil {
		t.Fatalf("no sweep baseline: %v", err)
	}
	code, log, _ := ciStep(t, env("gate", "pull_request"))
	if code != ExitOK {
		t.Fatalf("gate: exit %d\n%s", code, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "slogate-out", "small.sweep.json")); err != nil {
		t.Fatalf("no candidate sweep: %v", err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "slogate-out", "comment.md"))
	if !strings.Contains(string(md), "GPUs by throughput") || strings.Contains(string(md), "no sweep among the results") {
		t.Errorf("the fleet section does not price both sweeps:\n%s", md)
	}
}
