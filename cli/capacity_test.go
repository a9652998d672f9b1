package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/result"
)

// handSweep writes a sweep record whose operating point passed at rate with the given
// mean E2E, KV-limited concurrency (0: unknown) and attempts/completed.
func handSweep(t *testing.T, rate, e2eMS float64, kv, attempts, completed int) string {
	t.Helper()
	s := &result.Sweep{Workload: "chat", WorkloadHash: "sha256:ab", Hardware: "h100-80gb-hbm3-x1", SLOAttainmentTarget: 0.99,
		Environment: map[string]string{"engine.name": "vllm", "engine.version": "0.8.5", "gpu.count": "1"},
		Params:      result.SweepParams{MinRPS: 1, MaxRPS: 1000, Factor: 2, Process: "poisson", Precision: 0.05, StepDurationS: 30},
		Bound:       result.BoundSLO, MaxSustainableRPS: &rate}
	fail := rate * 1.04
	s.FirstFailingRPS = &fail
	s.Steps = []result.SweepStep{
		{Step: 1, Phase: "ramp", RateRPS: rate, Verdict: result.StepPass, Requests: attempts, Completed: completed, SLOAttainment: 0.995, E2EMeanms: e2eMS},
		{Step: 2, Phase: "ramp", RateRPS: fail, Verdict: result.StepFail, Requests: 100, Completed: 100, SLOAttainment: 0.9, E2EMeanms: 3 * e2eMS},
	}
	if kv > 0 {
		s.Steps[0].KVConcurrency = &result.KVConcurrency{Value: kv, CapacityTokens: int64(kv) * 4096, PerRequestTokens: 4096, Source: "engine"}
	}
	p := filepath.Join(t.TempDir(), "chat.sweep.json")
	if err := result.WriteSweep(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCapacityTextbookCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		record func(t *testing.T) string
		args   []string
		want   []string
	}{
		// 50 req/s × 0.2 GPU-s (a GPU sustains 5 req/s within the SLO) ÷ 0.6 → 17 GPUs.
		{"throughput", func(t *testing.T) string { return handSweep(t, 5, 1000, 0, 100, 100) },
			[]string{"--peak-rps", "50", "--target-utilization", "0.6"},
			[]string{"GPU-seconds per request = 1 GPU per replica / 5 req/s = 0.2 GPU-s", "ceil(50 req/s × 0.2 GPU-s / 0.6 utilization) = 17", "GPUs required: 17 (throughput-bound)"}},
		// Little's law: 20 req/s at 2 s each → 40 requests in flight.
		{"littles-law", func(t *testing.T) string { return handSweep(t, 100, 2000, 64, 100, 100) },
			[]string{"--peak-rps", "20"},
			[]string{"= 20 req/s × 2 s mean E2E = 40 requests"}},
		// One GPU serves 20 req/s, but 40 requests in flight need 4 GPUs of KV memory
		// holding 10 each: the memory count wins.
		{"memory-bound", func(t *testing.T) string { return handSweep(t, 20, 2000, 10, 100, 100) },
			[]string{"--peak-rps", "20"},
			[]string{"GPUs by memory = ceil(40 / 10) = 4 replicas × 1 GPU = 4", "the memory bound wins (throughput bound: 1)", "GPUs required: 4 (memory-bound)"}},
		// No retries: 0.5 GPU-s at $3.60 per GPU-hour is $0.0005 per completed request.
		{"cost", func(t *testing.T) string { return handSweep(t, 2, 1000, 0, 100, 100) },
			[]string{"--peak-rps", "10", "--gpu-hour-usd", "3.6"},
			[]string{"= $0.0005\n"}},
		// 20% retries (120 attempts for 100 completions) raise it by 20%, to $0.0006.
		{"retries", func(t *testing.T) string { return handSweep(t, 2, 1000, 0, 120, 100) },
			[]string{"--peak-rps", "10", "--gpu-hour-usd", "3.6"},
			[]string{"× 120 attempts / 100 completed × $3.60 / 3600 s = $0.0006\n"}},
		// Headroom, N+1 and replicas of 4 GPUs: 40 × 0.5 = 20 → +30% 26 → 28 (whole
		// replicas) → +4 = 32.
		{"headroom-redundancy-tp", func(t *testing.T) string { return handSweep(t, 8, 1000, 100, 100, 100) },
			[]string{"--peak-rps", "40", "--headroom", "30%", "--redundancy", "1", "--gpus-per-replica", "4"},
			[]string{"ceil(20 × 1.3) = 28 GPUs", "= 28 + 1 × 4 = 32 GPUs", "GPUs required: 32"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, out, errb := testApp(t)
			code := a.run(cmdCtx(t), append([]string{"capacity", "-r", tc.record(t)}, tc.args...))
			if code != ExitOK {
				t.Fatalf("exit %d; stderr %s", code, errb)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out.String(), "single run") {
				t.Errorf("a sweep record warned as a single run:\n%s", out)
			}
		})
	}
}

func TestCapacityFromRunRecordWarns(t *testing.T) {
	t.Parallel()
	rec := &result.Record{Schema: result.Schema, Workload: "chat", Mode: "open", SLOAttainmentTarget: 0.99, Requests: []result.Request{}}
	rec.Summary = result.Summary{Requests: 100, Completed: 100, ThroughputRPS: 5, SLOAttainment: 1, E2Ems: result.Percentiles{Mean: 1000}}
	p := filepath.Join(t.TempDir(), "chat.json")
	if err := result.Write(p, rec); err != nil {
		t.Fatal(err)
	}
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"capacity", "-r", p, "--peak-rps", "50", "--target-utilization", "60%"}); code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, errb)
	}
	for _, w := range []string{"= 17\n", "warning: the per-GPU rate comes from a single run, not an SLO-bound sweep"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestCapacityTrafficFromConfig(t *testing.T) {
	t.Parallel()
	rec := handSweep(t, 5, 1000, 0, 100, 100)
	cfg := writeConfig(t, tinyConfig+"capacity: {peak_rps: 50, target_utilization: 60%, headroom: 30%, redundancy: 1, gpu_hour_usd: 2.5}\n")
	// The section alone: 17 → 23 with headroom → 24 with N+1.
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"capacity", "-r", rec, "-c", cfg}); code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, errb)
	}
	if !strings.Contains(out.String(), "GPUs required: 24") || !strings.Contains(out.String(), "per month = 24 GPUs × 730 h × $2.50 = $43,800.00") {
		t.Errorf("output:\n%s", out)
	}
	// A flag overrides its field only: no redundancy → 23.
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"capacity", "-r", rec, "-c", cfg, "--redundancy", "0"}); code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, errb)
	}
	if !strings.Contains(out.String(), "GPUs required: 23") {
		t.Errorf("output:\n%s", out)
	}
}

func TestCapacityBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clientLimited := filepath.Join(dir, "client.sweep.json")
	if err := result.WriteSweep(clientLimited, &result.Sweep{Workload: "chat", Bound: result.BoundClient,
		Steps: []result.SweepStep{{Step: 1, RateRPS: 500, Verdict: result.StepClient}}}); err != nil {
		t.Fatal(err)
	}
	notRecord := filepath.Join(dir, "other.json")
	os.WriteFile(notRecord, []byte(`{"schema": "something/v2"}`), 0o644)
	good := handSweep(t, 5, 1000, 0, 100, 100)
	noSection := writeConfig(t, tinyConfig)
	cases := []struct {
		name   string
		args   []string
		stderr string
	}{
		// The record is required.
		{"no-record", []string{"--peak-rps", "5"}, "name the sweep or run record with -r"},
		// A sweep the client limited has no capacity to size a fleet with.
		{"client-limited", []string{"-r", clientLimited, "--peak-rps", "5"}, "the load generator, not the engine, limited it"},
		// Another kind of JSON is named as such.
		{"not-a-record", []string{"-r", notRecord, "--peak-rps", "5"}, `schema "something/v2"`},
		// No traffic anywhere.
		{"no-traffic", []string{"-r", good}, "no traffic profile"},
		// A config without a capacity section and no --peak-rps.
		{"no-section", []string{"-r", good, "-c", noSection}, "has no capacity: section"},
		// Impossible utilization.
		{"bad-utilization", []string{"-r", good, "--peak-rps", "5", "--target-utilization", "150%"}, "target utilization 1.5"},
		// A bad fraction fails while flags are parsed.
		{"bad-fraction", []string{"-r", good, "--peak-rps", "5", "--headroom", "lots"}, `"lots" is not a fraction`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, out, errb := testApp(t)
			code := a.run(cmdCtx(t), append([]string{"capacity"}, tc.args...))
			if code != ExitBadInput || !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("exit %d, want 2; stderr %q lacks %q\nstdout: %s", code, errb, tc.stderr, out)
			}
		})
	}
}
