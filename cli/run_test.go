package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/internal/waittest"
	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// testApp is an app whose environment is this machine's without a GPU.
func testApp(t *testing.T) (*app, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb)
	env := map[string]string{}
	a.getenv = func(k string) string { return env[k] }
	a.envOptions = func() envinfo.Options {
		return envinfo.Options{Getenv: a.getenv, ReadFile: os.ReadFile, GOOS: "linux", GOARCH: "amd64", NumCPU: 2, Now: time.Now, ToolVersion: "test"}
	}
	return a, &out, &errb
}

func startSim(t *testing.T, o sim.Options) string {
	t.Helper()
	r, err := sim.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r.URL
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "slogate.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const tinyConfig = `version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: small
    seed: 3
    requests: 40
    warmup: {requests: 2}
    arrival: {process: poisson, rate: 20}
    prompt_tokens: {dist: uniform, min: 20, max: 60}
    output_tokens: {dist: fixed, value: 12}
    timeout: 20s
    slo: {ttft: {p95: 2s}, itl: {p99: 1s}}
`

func TestRunAgainstSimulator(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, tinyConfig)
	dir := t.TempDir()
	a, out, errb := testApp(t)
	code := a.run(cmdCtx(t), []string{"run", "-c", cfg, "--target", url, "-o", dir})
	// A loaded CI machine may push dispatch lag over the 1 ms bound; that is exit 3 with
	// the record written, which this test accepts. Anything else is a failure.
	if code != ExitOK && !(code == ExitFailure && strings.Contains(errb.String(), "could not keep")) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errb)
	}
	// Before sending it warns that 40 requests of 11 gaps each cannot give ITL p99 the
	// 1,000 gaps (10 above it) a pass needs.
	if want := `warning: workload "small": itl_p99 needs 1000 gaps between chunks per run (10 beyond the percentile); a run of this workload gives about 440`; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errb)
	}
	path := filepath.Join(dir, "small.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The summary carries exactly the keys the gate and the report rely on.
	var doc struct {
		Summary map[string]json.RawMessage `json:"summary"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	sum := doc.Summary
	for _, k := range []string{"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "requests", "completed", "errors", "error_rate",
		"slo_attainment", "goodput_rps", "throughput_rps", "output_tokens_per_s", "dispatch_lag_ms", "client_saturated",
		"duration_s", "in_flight", "queue_depth", "kv_usage", "running", "preemptions", "kv_concurrency"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	rec, err := result.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	s := rec.Summary
	if s.Requests != 40 || s.Completed != 40 || len(rec.Requests) != 40 {
		t.Errorf("requests %d completed %d records %d; want 40 each", s.Requests, s.Completed, len(rec.Requests))
	}
	if rec.Warmup == nil || rec.Warmup.Requests != 2 {
		t.Errorf("warm-up %+v; want 2 requests reported apart", rec.Warmup)
	}
	// Output tokens are forced (the simulator accepts ignore_eos) and come from usage.
	for _, r := range rec.Requests {
		if r.OutputTokens != 12 || r.NoUsage {
			t.Fatalf("request %d: %d output tokens (no_usage %v), want 12 from usage", r.I, r.OutputTokens, r.NoUsage)
		}
	}
	env := rec.Environment
	if env["engine.name"] != "sim" || env["engine.version"] != sim.DefaultVersion || env["model.id"] != "sim-tiny" || env["gpu.name"] != "none" || rec.Hardware != "sim" {
		t.Errorf("environment %v hardware %q", env, rec.Hardware)
	}
	// The tiny profile: 64 blocks × 16 = 1024 tokens; a request is at most 60 + 12 = 72
	// tokens → 5 blocks (80 tokens) at p95 or less → at least 12 requests fit.
	k := s.KVConcurrency
	if k == nil || k.CapacityTokens != 1024 || k.Value != int(1024/int64(k.PerRequestTokens)) || k.PerRequestTokens%16 != 0 || k.PerRequestTokens > 80 {
		t.Errorf("kv_concurrency %+v", k)
	}
	if s.QueueDepth == nil || s.KVUsage == nil || rec.Series.Engine["kv_usage"] == nil {
		t.Errorf("server metrics missing: queue %v kv %v", s.QueueDepth, s.KVUsage)
	}
	if !strings.Contains(out.String(), "small: open loop, 40 requests") {
		t.Errorf("no summary table:\n%s", out)
	}
	// Every request was also appended to the journal as it finished, the record's
	// timelines line for line.
	jb, err := os.ReadFile(filepath.Join(dir, "small.journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(jb), "\n"), "\n")
	var head measure.JournalHead
	if err := json.Unmarshal([]byte(lines[0]), &head); err != nil || head.Schema != measure.JournalSchema || head.RunID != rec.RunID || head.Workload != "small" {
		t.Fatalf("journal head %q: %+v %v", lines[0], head, err)
	}
	measured := map[int]result.Request{}
	warm := 0
	for _, l := range lines[1:] {
		var q result.Request
		var jl measure.JournalLine
		jl.Request = &q
		if err := json.Unmarshal([]byte(l), &jl); err != nil {
			t.Fatalf("journal line %q: %v", l, err)
		}
		if jl.Warmup {
			warm++
		} else {
			measured[q.I] = q
		}
	}
	if warm != 2 || len(measured) != 40 {
		t.Errorf("journal: %d warm-up and %d measured requests, want 2 and 40", warm, len(measured))
	}
	for _, q := range rec.Requests {
		if j := measured[q.I]; j.EndUS != q.EndUS || j.FirstUS != q.FirstUS || len(j.ITLUS) != len(q.ITLUS) {
			t.Errorf("request %d: journal %+v, record %+v", q.I, j, q)
			break
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	dead := "http://" + waittest.HoldPort(t)
	cases := []struct {
		name   string
		config string
		args   []string
		code   int
		stderr string
	}{
		// Nothing listens: exit 3 before anything is measured.
		{"unreachable", tinyConfig, []string{"--target", dead}, ExitFailure, "engine unreachable"},
		// The engine serves another model than the pin: exit 3 naming both.
		{"wrong-model", strings.Replace(tinyConfig, "name: sim-tiny", "name: meta-llama/Llama-3.1-8B-Instruct", 1), []string{"--target", url}, ExitFailure, `serves model "sim-tiny", but model.name pins "meta-llama/Llama-3.1-8B-Instruct": set model.name in `},
		// An unknown workload name lists the valid ones.
		{"unknown-workload", tinyConfig, []string{"--target", url, "-w", "nope"}, ExitBadInput, `no workload "nope"; expected one of "small"`},
		// No URL anywhere.
		{"no-target", tinyConfig, nil, ExitBadInput, "no engine URL"},
		// A bad config is exit 2 with file:line:col.
		{"bad-config", strings.Replace(tinyConfig, "process: poisson", "process: possion", 1), []string{"--target", url}, ExitBadInput, `slogate.yaml:9:24: invalid arrival.process "possion"`},
		// The API key's variable is named but unset.
		{"missing-key", strings.Replace(tinyConfig, "engine: auto}", "engine: auto, api_key_env: SLOGATE_TEST_KEY}", 1), []string{"--target", url}, ExitBadInput, `"SLOGATE_TEST_KEY", which is not set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.config)
			a, out, errb := testApp(t)
			code := a.run(cmdCtx(t), append([]string{"run", "-c", cfg, "-o", t.TempDir()}, tc.args...))
			if code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("exit %d, want %d; stderr %q lacks %q\nstdout: %s", code, tc.code, errb.String(), tc.stderr, out)
			}
		})
	}
}

func TestRunInterruptedKeepsWhatWasMeasured(t *testing.T) {
	t.Parallel()
	// A slow engine and an interrupt once it has finished a few measured requests (not
	// after a fixed time, which a loaded machine may spend before the window opens): the
	// record is written, marked incomplete, and holds the requests sent so far.
	srv, err := sim.Start(context.Background(), sim.Options{Seed: 1, Faults: sim.Faults{Slowdown: 5}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := writeConfig(t, strings.Replace(tinyConfig, "requests: 40", "requests: 400", 1))
	dir := t.TempDir()
	a, _, errb := testApp(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		// 2 warm-up requests, then at least 4 measured ones.
		for srv.Server.Stats().Finished < 6 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	code := a.run(ctx, []string{"run", "-c", cfg, "--target", srv.URL, "-o", dir})
	if code != ExitFailure {
		t.Fatalf("exit %d, want 3; stderr %s", code, errb)
	}
	rec, err := result.Read(filepath.Join(dir, "small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Incomplete || rec.IncompleteReason != "interrupted" || len(rec.Requests) < 4 || len(rec.Requests) >= 400 {
		t.Errorf("incomplete %v (%q), %d requests", rec.Incomplete, rec.IncompleteReason, len(rec.Requests))
	}
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	a, out, _ := testApp(t)
	if code := a.run(cmdCtx(t), []string{"version"}); code != ExitOK || !strings.HasPrefix(out.String(), "slogate ") {
		t.Errorf("exit %d, output %q", code, out)
	}
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"frobnicate"}); code != ExitBadInput || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}
