package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const gateConfig = `version: 1
target: {url: "http://127.0.0.1:8000", api: chat}
model: {name: meta-llama/Llama-3.1-8B-Instruct}
workloads:
  - name: chat
    seed: 7
    requests: 500
    arrival: {process: poisson, rate: 10}
    prompt_tokens: {dist: fixed, value: 800}
    output_tokens: {dist: lognormal, p50: 200, p95: 700, max: 1500}
    slo:
      ttft: {p95: 500ms}
      tpot: {p95: 50ms}
gate:
  rules:
    goodput: {direction: higher, tolerance: 5%}
    itl_p99: {direction: lower, tolerance: 10%}
    ttft_p95: {direction: lower, tolerance: 20%}
    tpot_mean: {direction: lower, tolerance: 10%}
    kv_concurrency: {direction: higher, tolerance: 1%}
    error_rate: {max: 0.5%}
  drift: {engine.version: expected}
  max_baseline_age: 720h
`

// gateEnv is a repository: a config, a results directory and a baselines directory
// beside the config (gate.baselines' default).
type gateEnv struct {
	t         *testing.T
	dir       string
	config    string
	results   string
	baselines string
	hash      string
	now       time.Time
}

func newGateEnv(t *testing.T, extra string) *gateEnv {
	t.Helper()
	dir := t.TempDir()
	e := &gateEnv{t: t, dir: dir, config: filepath.Join(dir, "slogate.yaml"), results: filepath.Join(dir, "out"),
		baselines: filepath.Join(dir, "baselines"), now: time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC)}
	if err := os.WriteFile(e.config, []byte(gateConfig+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := workload.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	e.hash = workload.Hash(f, &f.Workloads[0])
	return e
}

// record writes a synthetic run record of workload chat into dir (the results dir when "").
func (e *gateEnv) record(dir string, seed uint64, s gatetest.Spec) *result.Record {
	e.t.Helper()
	if dir == "" {
		dir = e.results
	}
	if s.Hash == "" {
		s.Hash = e.hash
	}
	if s.KVConcurrency == 0 {
		s.KVConcurrency = 80
	}
	r := gatetest.Record(seed, s)
	name := r.Workload + ".json"
	if r.Trial > 0 {
		name = recordPath("", r.Workload, r.Trial, 2)
	}
	if err := result.Write(filepath.Join(dir, name), r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// baseline writes the baseline of rec as baseline update would.
func (e *gateEnv) baseline(rec *result.Record) string {
	e.t.Helper()
	b, err := gate.FromRecords([]*result.Record{rec}, e.now)
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := gate.Write(e.baselines, b)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// run runs a command in-process with a fixed clock and no GPU.
func (e *gateEnv) run(args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb)
	a.now = func() time.Time { return e.now }
	a.getenv = func(string) string { return "" }
	a.envOptions = func() envinfo.Options {
		return envinfo.Options{GOOS: "linux", GOARCH: "amd64", NumCPU: 2, Now: a.now, ToolVersion: "v0.1.0"}
	}
	cmds := map[string]func(*app, context.Context, []string) int{
		"gate": (*app).cmdGate, "baseline": (*app).cmdBaseline, "audit": (*app).cmdAudit,
	}
	code = cmds[args[0]](a, cmdCtx(e.t), args[1:])
	return code, out.String(), errb.String()
}

func TestGateRoundTrip(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, "")
	e.record("", 1, gatetest.Spec{ErrorRate: 0.002})
	code, out, errs := e.run("baseline", "update", "-c", e.config, "-r", e.results)
	want := filepath.Join(e.baselines, "chat", "h100-80gb-hbm3-x1.json")
	if code != ExitOK || !strings.Contains(out, "wrote "+want) {
		t.Fatalf("baseline update: exit %d, stdout %q, stderr %q; want 0 and %s written", code, out, errs, want)
	}
	jsonPath := filepath.Join(e.dir, "gate.json")
	code, out, errs = e.run("gate", "-c", e.config, "-r", e.results, "--json", jsonPath)
	if code != ExitOK {
		t.Fatalf("gate on the baseline's own records: exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res gate.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Verdict != gate.Pass || len(res.Workloads) != 1 || len(res.Workloads[0].Metrics) != 6 {
		t.Fatalf("result %s with %d workloads; want pass, one workload of 6 rules:\n%s", res.Verdict, len(res.Workloads), data)
	}
	for _, m := range res.Workloads[0].Metrics {
		if m.Method == gate.MethodAbsolute {
			continue
		}
		if m.Ratio == nil || *m.Ratio != 1 {
			t.Errorf("%s: ratio %v, want exactly 1 (the same records on both sides)", m.Metric, m.Ratio)
		}
	}
	if !strings.Contains(out, "slogate gate: pass") || !strings.Contains(out, "itl_p99") {
		t.Errorf("table:\n%s", out)
	}
}

func TestGateRegression(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, "")
	e.baseline(e.record(t.TempDir(), 1, gatetest.Spec{}))
	env := gatetest.Env()
	env["engine.version"] = "0.6.4" // the upgrade under test: expected
	e.record("", 2, gatetest.Spec{GapScale: 1.3, Env: env})
	code, out, errs := e.run("gate", "-c", e.config, "-r", e.results)
	if code != ExitGateFailed {
		t.Fatalf("ITL ×1.3: exit %d, want 1\n%s%s", code, out, errs)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "itl_p99 ") {
			row = l
		}
	}
	if !strings.HasSuffix(row, "FAIL") || !strings.Contains(out, "engine.version  0.6.3 -> 0.6.4") {
		t.Errorf("itl_p99 row %q; want FAIL, and the expected engine change shown:\n%s", row, out)
	}
}

func TestGateBadBaselineFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		data func(e *gateEnv) []byte
		want string
	}{
		{"truncated", func(e *gateEnv) []byte {
			b, _ := os.ReadFile(e.baseline(e.record(e.t.TempDir(), 1, gatetest.Spec{Requests: 50})))
			return b[:len(b)/3]
		}, "truncated or corrupt JSON"},
		{"not JSON", func(*gateEnv) []byte { return []byte("version: 1\n") }, "truncated or corrupt JSON"},
		{"a run record", func(e *gateEnv) []byte {
			b, _ := result.Marshal(gatetest.Record(1, gatetest.Spec{Requests: 5}))
			return b
		}, "a run record"},
		{"another workload's", func(e *gateEnv) []byte {
			p := e.baseline(e.record(e.t.TempDir(), 1, gatetest.Spec{Requests: 50, Workload: "rag"}))
			b, _ := os.ReadFile(p)
			return b
		}, `baseline of workload "rag", not "chat"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newGateEnv(t, "")
			data := c.data(e)
			path := filepath.Join(e.baselines, "chat", "h100-80gb-hbm3-x1.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			e.record("", 2, gatetest.Spec{})
			code, out, errs := e.run("gate", "-c", e.config, "-r", e.results)
			if code != ExitBadInput || !strings.Contains(errs, path) || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s and %q\n%s", code, errs, path, c.want, out)
			}
		})
	}
}

func TestGateVerdictExits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		extra    string
		baseline *gatetest.Spec // nil: no baseline
		cand     gatetest.Spec
		code     int
		want     string
	}{
		// The workload was edited since the baseline: incomparable is not a pass.
		{"workload changed", "", &gatetest.Spec{Hash: "sha256:old"}, gatetest.Spec{}, ExitGateFailed, "workload changed: baseline hash sha256:old"},
		// No baseline yet: its own verdict, and a failing exit by default...
		{"missing baseline fails", "", nil, gatetest.Spec{}, ExitGateFailed, "NO_BASELINE"},
		// ...unless the repository allows it while it bootstraps.
		{"missing baseline allowed", "  missing_baseline: allow\n", nil, gatetest.Spec{}, ExitOK, "gate.missing_baseline: allow lets this through"},
		// The load generator fell behind: the gate refuses to judge (exit 3).
		{"client-saturated", "", &gatetest.Spec{}, gatetest.Spec{ClientSaturated: true}, ExitFailure, "load generator was saturated"},
		{"incomplete", "", &gatetest.Spec{}, gatetest.Spec{Incomplete: true}, ExitFailure, "incomplete (engine crashed)"},
		// A cold run that the engine's prefix cache served is refused with the figure; a
		// few hits within the bound are judged.
		{"cold run with hits", "", &gatetest.Spec{}, gatetest.Spec{ColdHits: 0.4}, ExitFailure, "a cold run found 40.0% ("},
		{"cold run within the bound", "", &gatetest.Spec{}, gatetest.Spec{ColdHits: 0.01}, ExitOK, "chat on h100-80gb-hbm3-x1: pass"},
		// A driver change nobody declared is shown and warns; the gate still passes.
		{"unexpected drift", "", &gatetest.Spec{}, gatetest.Spec{Env: map[string]string{"gpu.driver": "555.42.02"}}, ExitOK, "gpu.driver  550.54.15 -> 555.42.02  WARN"},
		// A model revision that moved fails by the default drift policy.
		{"model changed", "", &gatetest.Spec{}, gatetest.Spec{Env: map[string]string{"model.revision": "5206a32e"}}, ExitGateFailed, "model.revision"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newGateEnv(t, c.extra)
			if c.baseline != nil {
				e.baseline(e.record(t.TempDir(), 1, *c.baseline))
			}
			if c.cand.Env != nil {
				env := gatetest.Env()
				for k, v := range c.cand.Env {
					env[k] = v
				}
				c.cand.Env = env
			}
			e.record("", 2, c.cand)
			code, out, errs := e.run("gate", "-c", e.config, "-r", e.results)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, want %d with %q in:\n%s%s", code, c.code, c.want, out, errs)
			}
		})
	}
}

func TestGateBadInput(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, "")
	e.record("", 1, gatetest.Spec{})
	bad := filepath.Join(e.dir, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bad, "x.json"), []byte("{"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no results flag", []string{"gate", "-c", e.config}, "-r RESULTS_DIR is required"},
		{"no results dir", []string{"gate", "-c", e.config, "-r", filepath.Join(e.dir, "nope")}, "nope"},
		{"corrupt record", []string{"gate", "-c", e.config, "-r", bad}, "x.json"},
		{"unknown workload", []string{"gate", "-c", e.config, "-r", e.results, "-w", "rag"}, `no workload "rag"`},
		{"baseline without update", []string{"baseline", "-c", e.config}, `expected the subcommand "update"`},
		{"audit of a corrupt record", []string{"audit", "-c", e.config, "-r", filepath.Join(bad, "x.json")}, "x.json"},
	} {
		code, _, errs := e.run(c.args...)
		if code != ExitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, code, errs, c.want)
		}
	}
}

func TestBaselineUpdateRefuses(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, "")
	e.record("", 1, gatetest.Spec{ClientSaturated: true})
	code, out, errs := e.run("baseline", "update", "-c", e.config, "-r", e.results)
	if code != ExitFailure || !strings.Contains(errs, "load generator was saturated") || strings.Contains(out, "wrote") {
		t.Errorf("saturated record: exit %d, stdout %q, stderr %q; want 3, refused, nothing written", code, out, errs)
	}
	if _, err := os.Stat(e.baselines); !os.IsNotExist(err) {
		t.Errorf("baselines directory created for a refused record: %v", err)
	}

	e = newGateEnv(t, "")
	e.record("", 1, gatetest.Spec{Hash: "sha256:stale"})
	code, _, errs = e.run("baseline", "update", "-c", e.config, "-r", e.results)
	if code != ExitBadInput || !strings.Contains(errs, "another definition") {
		t.Errorf("stale record: exit %d, stderr %q; want 2", code, errs)
	}
}

func TestBaselineUpdateTrials(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, "")
	// Three trials are one run's when the workload repeats three times.
	if err := os.WriteFile(e.config, []byte(strings.Replace(gateConfig, "    seed: 7\n", "    seed: 7\n    repeats: 3\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		e.record("", uint64(i), gatetest.Spec{Trial: i})
	}
	code, out, errs := e.run("baseline", "update", "-c", e.config, "-r", e.results, "--baselines", filepath.Join(e.dir, "elsewhere"))
	if code != ExitOK || !strings.Contains(out, "3 trial(s), 1500 requests") || !strings.Contains(out, filepath.Join(e.dir, "elsewhere", "chat")) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = e.run("gate", "-c", e.config, "-r", e.results, "--baselines", filepath.Join(e.dir, "elsewhere"))
	if code != ExitOK || !strings.Contains(out, "trials") {
		t.Errorf("three trials against themselves: exit %d\n%s%s", code, out, errs)
	}
}

func TestAudit(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, "")
	e.baseline(e.record(t.TempDir(), 1, gatetest.Spec{}))
	for _, c := range []struct {
		name string
		age  time.Duration
		env  map[string]string
		code int
		want string
	}{
		{"fresh, same environment", time.Hour, nil, ExitOK, "compared 9 fields: engine.name"},
		// A driver that moved warns by default: shown, not failed.
		{"driver moved", time.Hour, map[string]string{"gpu.driver": "555.42.02"}, ExitOK, "gpu.driver  550.54.15 -> 555.42.02"},
		// The model revision's default policy is fail.
		{"model moved", time.Hour, map[string]string{"model.revision": "5206a32e"}, ExitGateFailed, "FAIL (drift policy fail)"},
		// max_baseline_age: 720h in the config.
		{"too old", 31 * 24 * time.Hour, nil, ExitGateFailed, "OLDER THAN 30 days"},
	} {
		env := gatetest.Env()
		for k, v := range c.env {
			env[k] = v
		}
		rec := e.record(t.TempDir(), 2, gatetest.Spec{Env: env})
		p := filepath.Join(t.TempDir(), "rec.json")
		if err := result.Write(p, rec); err != nil {
			t.Fatal(err)
		}
		e.now = time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC).Add(c.age)
		code, out, errs := e.run("audit", "-c", e.config, "-r", p)
		if code != c.code || !strings.Contains(out, c.want) || !strings.Contains(out, "vllm 0.6.3") {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", c.name, code, c.code, c.want, out, errs)
		}
	}
	// Without -r, this machine (no GPU here: hardware cpu) is the reference; the H100
	// baseline is listed but not compared. An audit that compared nothing used to say
	// pass and exit 0: it says so and fails.
	e.now = time.Date(2025, 3, 2, 10, 0, 0, 0, time.UTC)
	code, out, errs := e.run("audit", "-c", e.config)
	if code != ExitGateFailed || !strings.Contains(out, "not compared (hardware h100-80gb-hbm3-x1; the reference is cpu)") || !strings.Contains(out, "slogate audit: NOTHING COMPARED (0 of 1 baseline") {
		t.Errorf("audit of this machine: exit %d\n%s%s", code, out, errs)
	}
}

// TestGateThroughMain checks the wiring of the commands in Main.
func TestGateThroughMain(t *testing.T) {
	t.Parallel()
	if _, ok := commands()["gate"]; !ok {
		t.Skip("gate, baseline and audit are not registered in commands() yet")
	}
	e := newGateEnv(t, "")
	e.record("", 1, gatetest.Spec{})
	var out, errb bytes.Buffer
	if code := Main([]string{"baseline", "update", "-c", e.config, "-r", e.results}, &out, &errb); code != ExitOK {
		t.Fatalf("baseline update: exit %d: %s", code, errb.String())
	}
	os.WriteFile(filepath.Join(e.baselines, "chat", "h100-80gb-hbm3-x1.json"), []byte(`{"schema": "slogate.run/v1"}`), 0o644)
	if code := Main([]string{"gate", "-c", e.config, "-r", e.results}, &out, &errb); code != ExitBadInput || !strings.Contains(errb.String(), "h100-80gb-hbm3-x1.json") {
		t.Errorf("gate with a run record as baseline: exit %d: %s", code, errb.String())
	}
}

// TestGateDemoConfigWrongBaselines: `slogate gate -c cli/demo.yaml -r DIR` looks for the
// baseline under cli/baselines, where there is none. That used to pass with a warning (a
// typo in gate.baselines turned CI green); it is the no_baseline verdict and exit 1.
func TestGateDemoConfigWrongBaselines(t *testing.T) {
	t.Parallel()
	f, err := workload.Load("demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec := gatetest.Record(1, gatetest.Spec{Workload: "chat-demo", Hash: workload.Hash(f, &f.Workloads[0]), Hardware: "sim"})
	if err := result.Write(filepath.Join(dir, "chat-demo.json"), rec); err != nil {
		t.Fatal(err)
	}
	e := &gateEnv{t: t, now: time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC)}
	code, out, errs := e.run("gate", "-c", "demo.yaml", "-r", dir)
	if code != ExitGateFailed {
		t.Errorf("exit %d, want %d:\n%s%s", code, ExitGateFailed, out, errs)
	}
	for _, want := range []string{"NO_BASELINE", "no baseline at " + filepath.Join("baselines", "chat-demo", "sim.json"), "slogate baseline update -c demo.yaml"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSONSurvivesNonFiniteFloats(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gate.json")
	v := &struct {
		Ratio  float64
		Values []float64
	}{math.Inf(1), []float64{1, math.NaN()}}
	if err := writeJSON(path, v); err != nil {
		t.Fatalf("writeJSON: %v", err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"Ratio": 0`) {
		t.Errorf("written:\n%s", data)
	}
}

// TestGateChangedConfig: run records made from another definition of their workload
// than the config has now are refused (exit 2), naming the key that changed, old and
// new; --allow-changed-config gates them as they were made, with a warning naming it.
// A baseline of another definition is incomparable (exit 1), and says which key changed
// rather than two hashes.
func TestGateChangedConfig(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, "")
	write := func(dir string, hash string, form json.RawMessage) {
		r := gatetest.Record(1, gatetest.Spec{Hash: hash, KVConcurrency: 80})
		r.WorkloadForm = form
		if err := result.Write(filepath.Join(dir, "chat.json"), r); err != nil {
			t.Fatal(err)
		}
	}
	old, err := workload.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	write(e.results, e.hash, workload.Form(old, &old.Workloads[0]))
	if code, out, errs := e.run("baseline", "update", "-c", e.config, "-r", e.results); code != ExitOK {
		t.Fatalf("baseline update: exit %d\n%s%s", code, out, errs)
	}
	if err := os.WriteFile(e.config, []byte(strings.Replace(gateConfig, "{dist: fixed, value: 800}", "{dist: fixed, value: 900}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "prompt_tokens.value: 800 → 900"
	code, out, errs := e.run("gate", "-c", e.config, "-r", e.results)
	if code != ExitBadInput || !strings.Contains(errs, key) || !strings.Contains(errs, "--allow-changed-config") {
		t.Errorf("records of the old definition: exit %d, want 2 naming %q and the flag\n%s%s", code, key, out, errs)
	}
	code, out, errs = e.run("gate", "-c", e.config, "-r", e.results, "--allow-changed-config")
	if code != ExitOK || !strings.Contains(out, key) {
		t.Errorf("records of the old definition, allowed: exit %d, want 0 with a warning naming %q\n%s%s", code, key, out, errs)
	}

	now, err := workload.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	write(fresh, workload.Hash(now, &now.Workloads[0]), workload.Form(now, &now.Workloads[0]))
	code, out, errs = e.run("gate", "-c", e.config, "-r", fresh)
	if code != ExitGateFailed || !strings.Contains(out, "workload changed since the baseline: "+key) || strings.Contains(out, "baseline hash sha256:") {
		t.Errorf("a new run against the old baseline: exit %d, want 1 naming %q, not the hashes\n%s%s", code, key, out, errs)
	}
}
