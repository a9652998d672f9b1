package cli

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slogate/slogate/sim"
)

// TestRunRefusesWorkloadOverContext: the simulator's tiny profile serves a 1,024-token
// context (max_model_len in /v1/models, as vLLM). A workload whose prompt can reach 1,000
// tokens and output 120 does not fit: run and sweep stop with exit 2 and the numbers before
// a single request is sent, and write no record.
func TestRunRefusesWorkloadOverContext(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, strings.NewReplacer(
		"prompt_tokens: {dist: uniform, min: 20, max: 60}", "prompt_tokens: {dist: uniform, min: 20, max: 1000}",
		"output_tokens: {dist: fixed, value: 12}", "output_tokens: {dist: uniform, min: 10, max: 120}",
	).Replace(tinyConfig))
	for _, cmd := range [][]string{
		{"run", "-c", cfg, "--target", url},
		{"sweep", "-c", cfg, "-w", "small", "--target", url},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			dir := t.TempDir()
			a, out, errb := testApp(t)
			code := a.run(cmdCtx(t), append(cmd, "-o", dir))
			if code != ExitBadInput {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitBadInput, out, errb)
			}
			for _, s := range []string{`workload "small"`, "context of 1024 tokens", "max_model_len", "prompt_tokens max 1000 + output_tokens max 120 = 1120 > 1024", "Nothing was sent"} {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr %q lacks %q", errb.String(), s)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("files written: %v", ents)
			}
		})
	}
	// The engine saw no generation request at all.
	if n := pageCounter(t, url, "vllm:prompt_tokens_total"); n != 0 {
		t.Errorf("the simulator processed %v prompt tokens, want 0: requests were sent", n)
	}

	// The same workload within the context runs.
	fits := strings.Replace(tinyConfig, "output_tokens: {dist: fixed, value: 12}", "output_tokens: {dist: fixed, value: 24}", 1)
	fits = strings.Replace(fits, "prompt_tokens: {dist: uniform, min: 20, max: 60}", "prompt_tokens: {dist: uniform, min: 20, max: 1000}", 1)
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, fits), "--target", url, "-o", t.TempDir()}); code == ExitBadInput {
		t.Errorf("1000 + 24 tokens in a 1024-token context refused: %s", errb)
	}
}

// pageCounter reads one counter from an engine's metrics page.
func pageCounter(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/v1") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no %s on the metrics page", name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A session workload whose longest session (system prompt + turns max × (user max +
// output max)) cannot fit the engine's context is refused with exit 2 at the sessions
// key, before anything is sent; a bad session key is exit 2 at its line and column.
func TestRunRefusesSessionsOverContext(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	const sessions = `version: 1
model: {name: sim-tiny}
workloads:
  - name: chat
    arrival: {process: poisson, rate: 5}
    sessions:
      count: 3
      turns: {dist: uniform, min: 2, max: %d}
      user_tokens: 100
      output_tokens: 60
      think_time: %s
`
	for _, tt := range []struct {
		turns int
		think string
		want  []string
	}{
		// 7 × (100 + 60) = 1120 tokens cannot fit a 1024-token context
		{7, "100ms", []string{"slogate.yaml:6:5: workload \"chat\" does not fit the engine's context of 1024 tokens per request",
			"system_prompt_tokens 0 + turns max 7 × (user_tokens max 100 + output_tokens max 60), is 1120 tokens > 1024", "Nothing was sent"}},
		// a lognormal think time without its max
		{5, "{dist: lognormal, p50: 1s, p95: 2s}", []string{"slogate.yaml:11:19: missing required key \"max\" in \"sessions.think_time\""}},
	} {
		body := fmt.Sprintf(sessions, tt.turns, tt.think)
		a, out, errb := testApp(t)
		dir := t.TempDir()
		code := a.run(cmdCtx(t), []string{"run", "-c", writeConfig(t, body), "--target", url, "-o", dir})
		if code != ExitBadInput {
			t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitBadInput, out, errb)
		}
		for _, s := range tt.want {
			if !strings.Contains(errb.String(), s) {
				t.Errorf("stderr %q lacks %q", errb.String(), s)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("files written: %v", ents)
		}
	}
	if n := pageCounter(t, url, "vllm:prompt_tokens_total"); n != 0 {
		t.Errorf("the simulator processed %v prompt tokens, want 0: requests were sent", n)
	}
}
