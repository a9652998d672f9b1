package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/sim"
)

// mixConfig is a workload of two classes whose prompts differ by a factor of five.
const mixConfig = `version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: mix
    seed: 5
    requests: 40
    warmup: {requests: 2}
    arrival: {process: poisson, rate: 20}
    prompt_tokens: {dist: uniform, min: 20, max: 40}
    output_tokens: {dist: fixed, value: 8}
    timeout: 20s
    max_dispatch_lag: 30s
    slo: {ttft: {p95: 5s}}
    classes:
      - {name: chat, weight: 3}
      - {name: rag, weight: 1, prompt_tokens: {dist: uniform, min: 150, max: 200}}
gate:
  baselines: baselines
  drift: {tool.version: ignore}
  rules:
    goodput: {direction: higher, tolerance: 50%}
    error_rate: {max: 5%}
`

// A multi-class workload end to end against the simulator: run, baseline, run again,
// gate, render. The terminal, the comment and the HTML report break the run down by
// class, from the records' summaries, and the comment sets the baseline's beside the
// candidate's.
func TestMultiClassBreakdownEndToEnd(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, mixConfig)
	dir := filepath.Dir(cfg)
	run := func(args ...string) (int, string) {
		t.Helper()
		a, out, errb := testApp(t)
		code := a.run(cmdCtx(t), args)
		return code, out.String() + errb.String()
	}
	base, cand := filepath.Join(dir, "base"), filepath.Join(dir, "cand")
	code, log := run("run", "-c", cfg, "--target", url, "-o", base)
	if code != ExitOK {
		t.Fatalf("baseline run: exit %d\n%s", code, log)
	}
	if !strings.Contains(log, "by class:") || !strings.Contains(log, "rag") || !strings.Contains(log, "chat") {
		t.Errorf("the terminal table has no per-class breakdown:\n%s", log)
	}
	if code, log := run("baseline", "update", "-c", cfg, "-r", base); code != ExitOK {
		t.Fatalf("baseline update: exit %d\n%s", code, log)
	}
	if code, log := run("run", "-c", cfg, "--target", url, "-o", cand); code != ExitOK {
		t.Fatalf("candidate run: exit %d\n%s", code, log)
	}
	gateJSON := filepath.Join(cand, "gate.json")
	if code, log := run("gate", "-c", cfg, "-r", cand, "--json", gateJSON); code != ExitOK && code != ExitGateFailed {
		t.Fatalf("gate: exit %d\n%s", code, log)
	}
	md, html := filepath.Join(dir, "comment.md"), filepath.Join(dir, "report.html")
	if code, log := run("report", "-r", cand, "--markdown", md, "--html", html); code != ExitOK {
		t.Fatalf("report: exit %d\n%s", code, log)
	}
	comment, _ := os.ReadFile(md)
	page, _ := os.ReadFile(html)
	main, _, _ := strings.Cut(string(comment), "<details>")
	t.Logf("the comment's main part:\n%s", main)
	for _, want := range []string{"| class (baseline → candidate) |", "| chat |", "| rag |"} {
		if !strings.Contains(main, want) {
			t.Errorf("the comment's main part lacks %q:\n%s", want, comment)
		}
	}
	if !strings.Contains(string(comment), "**By class**") {
		t.Errorf("the comment's details lack the candidate's per-class table:\n%s", comment)
	}
	for _, want := range []string{"<h2>By class</h2>", ">rag<", ">chat<", "goodput share"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	if strings.Contains(string(page), "TTFT by turn") {
		t.Error("a workload without sessions got a per-turn chart")
	}
}
