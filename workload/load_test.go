package workload

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/config")

// chdirRoot runs the test from the repository root, so that file names in messages read
// "testdata/config/NAME.yaml" as a user running slogate from the root would see them.
func chdirRoot(t *testing.T) {
	t.Helper()
	t.Chdir("..")
	if _, err := os.Stat("testdata/config"); err != nil {
		t.Fatalf("testdata/config not found from the repository root: %v", err)
	}
}

// TestGolden loads every testdata/config/NAME.yaml and compares the whole error output
// (or "ok") with NAME.out. Files named valid_* must load; errors_* and the syntax and
// empty cases must not, so that -update cannot bless a regression silently.
func TestGolden(t *testing.T) {
	chdirRoot(t)
	files, err := filepath.Glob("testdata/config/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d golden configs, want at least 10", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			_, err := Load(file)
			got := "ok\n"
			if err != nil {
				got = err.Error() + "\n"
				var es Errors
				if !errors.As(err, &es) {
					t.Errorf("error is %T, want Errors", err)
				}
			}
			valid := strings.HasPrefix(name, "valid_")
			if valid != (err == nil) {
				t.Errorf("valid=%v by name, but Load returned:\n%s", valid, got)
			}
			golden := filepath.Join("testdata/config", name+".out")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./workload -run TestGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (-want +got):\n%s", golden, cmp.Diff(string(want), got))
			}
		})
	}
}

// TestErrorsInFileOrder checks the ordering contract on the file with many mistakes:
// the lines of the report never go backwards.
func TestErrorsInFileOrder(t *testing.T) {
	chdirRoot(t)
	_, err := Load("testdata/config/errors_many.yaml")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("got %v, want Errors", err)
	}
	if len(es) < 6 {
		t.Fatalf("got %d errors, want at least 6 (one per mistake):\n%v", len(es), err)
	}
	for i := 1; i < len(es); i++ {
		a, b := es[i-1], es[i]
		if b.Line < a.Line || (b.Line == a.Line && b.Col < a.Col) {
			t.Errorf("error %d (%d:%d) comes before error %d (%d:%d)", i, b.Line, b.Col, i-1, a.Line, a.Col)
		}
		if a.File != "testdata/config/errors_many.yaml" {
			t.Errorf("error %d names file %q", i-1, a.File)
		}
	}
	// errors.As reaches a single Error through Errors.
	var one Error
	if !errors.As(err, &one) || one != es[0] {
		t.Errorf("errors.As(Error) = %v, want the first error %v", one, es[0])
	}
}

func TestLoadFull(t *testing.T) {
	chdirRoot(t)
	f, err := Load("testdata/config/valid_full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	maxErr := 0.005
	ttft := func(p float64, d time.Duration) SLOTarget { return SLOTarget{"ttft", p, d} }
	itl := SLOTarget{"itl", 99, 200 * time.Millisecond}
	e2e := SLOTarget{"e2e", 99, 30 * time.Second}
	ragPrompt := LengthDist{Dist: DistUniform, Min: 1000, Max: 6000}
	ragOutput := LengthDist{Dist: DistFixed, Value: 256}
	want := &File{
		Path:    "testdata/config/valid_full.yaml",
		Version: 1,
		Target: Target{
			URL: "http://127.0.0.1:8000", API: "chat", Engine: "auto", APIKeyEnv: "SERVING_API_KEY",
			Start: &StartSpec{
				Command:      []string{"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--port", "8000"},
				ReadyTimeout: 20 * time.Minute,
			},
			Metrics: MetricsSpec{Interval: time.Second},
		},
		Model: Model{
			Name: "meta-llama/Llama-3.1-8B-Instruct", Revision: "0e9e39f249a16976918f6564b8830bc894c89659",
			Precision: "bf16", KVBytesPerToken: 131072, GPUMemoryUtilization: 0.9, BlockSize: 16,
		},
		Workloads: []Workload{
			{
				Name: "chat-steady", Seed: 7, Requests: 2000, Warmup: Warmup{32},
				Arrival:      Arrival{Process: "poisson", Rate: 12, Burstiness: 1, ThinkDist: "fixed"},
				PromptTokens: LengthDist{Dist: DistLognormal, Min: 1, P50: 800, P95: 3000, Max: 8000},
				OutputTokens: LengthDist{Dist: DistLognormal, Min: 1, P50: 200, P95: 700, Max: 1500},
				PrefixCache:  PrefixCache{Mode: PrefixCold},
				Timeout:      120 * time.Second,
				SLO: SLO{Attainment: 0.99, Targets: []SLOTarget{
					{"itl", 99, 200 * time.Millisecond}, {"tpot", 95, 50 * time.Millisecond}, ttft(95, 500*time.Millisecond),
				}},
				Repeats: 1,
			},
			{
				Name: "rag-mix", Seed: 11, Duration: 10 * time.Minute, Warmup: Warmup{16},
				Arrival: Arrival{Process: "gamma", Burstiness: 0.5, ThinkDist: "fixed",
					Profile: &RateProfile{Kind: "ramp", From: 2, To: 20, Over: 5 * time.Minute}},
				PromptTokens: ragPrompt,
				OutputTokens: ragOutput,
				PrefixCache:  PrefixCache{Mode: PrefixShared, Tokens: 512, Groups: 4},
				Timeout:      120 * time.Second,
				SLO:          SLO{Attainment: 0.99, AttainmentSet: true, Targets: []SLOTarget{e2e, itl, ttft(95, 800*time.Millisecond)}},
				Classes: []Class{
					{Name: "chat", Weight: 3, PromptTokens: ragPrompt, OutputTokens: ragOutput,
						SLO: SLO{Attainment: 0.99, Targets: []SLOTarget{e2e, itl, ttft(95, 800*time.Millisecond)}}},
					{Name: "rag", Weight: 1,
						PromptTokens: LengthDist{Dist: DistLognormal, Min: 1, P50: 4000, P95: 7000, Max: 8000},
						OutputTokens: ragOutput,
						SLO:          SLO{Attainment: 0.99, Targets: []SLOTarget{e2e, itl, ttft(95, 2*time.Second)}}},
					{Name: "batch", Weight: 0.5, PromptTokens: ragPrompt,
						OutputTokens: LengthDist{Dist: DistFixed, Value: 1024},
						SLO: SLO{Attainment: 0.95, AttainmentSet: true, Targets: []SLOTarget{
							{"e2e", 99, 90 * time.Second}, itl, ttft(95, 800*time.Millisecond)}}},
				},
				Repeats: 1,
			},
			{
				Name: "agent-steps", Seed: 3, Requests: 600,
				Arrival: Arrival{Process: "constant", Burstiness: 1, ThinkDist: "fixed",
					Profile: &RateProfile{Kind: "steps", Steps: []RateStep{
						{5, 30 * time.Second}, {10, 30 * time.Second}, {20, 0}}}},
				PromptTokens: LengthDist{Dist: DistEmpirical, Values: []int{120, 340, 560, 2048, 4096}},
				OutputTokens: LengthDist{Dist: DistUniform, Min: 32, Max: 512},
				PrefixCache:  PrefixCache{Mode: PrefixCold},
				Timeout:      120 * time.Second,
				SLO: SLO{Attainment: 0.99, Targets: []SLOTarget{
					{"tpot", 95, 60 * time.Millisecond}, ttft(99, time.Second)}},
				IgnoreEOS: &yes, Repeats: 3, MaxDispatchLag: 2 * time.Millisecond,
			},
		},
		Gate: GateConfig{
			Baselines: "baselines/",
			Rules: []Rule{
				{Metric: "goodput", Direction: "higher", Tolerance: 0.05},
				{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10},
				{Metric: "kv_concurrency", Direction: "higher", Tolerance: 0.01},
				{Metric: "error_rate", Max: &maxErr},
			},
			Drift: []DriftPolicy{
				// the file's entries in file order, then the defaults it does not name
				{"engine.version", "expected"}, {"gpu.driver", "warn"}, {"gpu.cuda", "warn"}, {"model.revision", "fail"},
				{"engine.name", "fail"}, {"model.id", "fail"}, {"gpu.name", "fail"}, {"gpu.count", "fail"},
				{"engine.image", "warn"}, {"tool.version", "ignore"}, {"tool.commit", "ignore"},
			},
			MissingBaseline: "fail", Resamples: 2000, Confidence: 0.95, Seed: 1,
		},
		Capacity: &CapacityConfig{PeakRPS: 50, TargetUtilization: 0.6, Headroom: 0.3, Redundancy: 1, GPUHourUSD: 2.5},
	}
	if diff := cmp.Diff(want, f, floatsNear()); diff != "" {
		t.Errorf("Load(valid_full) (-want +got):\n%s", diff)
	}
}

// floatsNear compares floats with a relative margin: "10%" parses as 10/100, which need
// not be the same float64 as the literal 0.10.
func floatsNear() cmp.Option {
	return cmp.Comparer(func(a, b float64) bool {
		d := a - b
		if d < 0 {
			d = -d
		}
		return d <= 1e-12*(1+max(a, -a, b, -b))
	})
}

// TestLoadDefaultsAndFiles checks defaults of an almost empty file, the values read from
// trace and lengths files, and the closed-loop file's percentages and units.
func TestLoadDefaultsAndFiles(t *testing.T) {
	chdirRoot(t)
	min, err := Load("testdata/config/valid_minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := min.Workloads[0]
	wantW := Workload{
		Name: "smoke", Seed: 1, Requests: 50,
		Arrival:      Arrival{Process: "constant", Rate: 5, Burstiness: 1, ThinkDist: "fixed"},
		PromptTokens: LengthDist{Dist: DistFixed, Value: 128},
		OutputTokens: LengthDist{Dist: DistFixed, Value: 32},
		PrefixCache:  PrefixCache{Mode: PrefixCold},
		Timeout:      120 * time.Second,
		SLO:          SLO{Attainment: 0.99},
		Repeats:      1, // max_dispatch_lag 0: derived from the SLO when the run starts
	}
	if diff := cmp.Diff(wantW, w); diff != "" {
		t.Errorf("minimal workload (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DefaultRules(), min.Gate.Rules); diff != "" {
		t.Errorf("rules of a file without rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DefaultDrift(), min.Gate.Drift); diff != "" {
		t.Errorf("drift of a file without drift (-want +got):\n%s", diff)
	}
	if min.Capacity != nil {
		t.Errorf("Capacity = %+v, want nil without a capacity section", min.Capacity)
	}
	if min.Target.API != "chat" || min.Target.Engine != "auto" || min.Target.Metrics.Interval != time.Second ||
		min.Model.BlockSize != 16 || min.Model.GPUMemoryUtilization != 0.9 || min.Gate.Baselines != "baselines" ||
		min.Gate.MissingBaseline != "fail" || min.Gate.Resamples != 2000 || min.Gate.Confidence != 0.95 || min.Gate.Seed != 1 {
		t.Errorf("file defaults wrong: target %+v model %+v gate %+v", min.Target, min.Model, min.Gate)
	}

	tr, err := Load("testdata/config/valid_trace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := tr.Workloads[0].Arrival
	wantOffsets := []time.Duration{0, 120 * time.Millisecond, 250 * time.Millisecond, 251 * time.Millisecond,
		252 * time.Millisecond, 1500 * time.Millisecond, 2 * time.Second}
	if a.Trace != "trace.txt" || !cmp.Equal(a.Offsets, wantOffsets) {
		t.Errorf("trace %q offsets %v, want trace.txt %v", a.Trace, a.Offsets, wantOffsets)
	}
	p := tr.Workloads[0].PromptTokens
	if want := (LengthDist{Dist: DistEmpirical, File: "lengths.txt", Max: 2048, Values: []int{128, 256, 256, 512, 1024, 4096}}); !cmp.Equal(p, want) {
		t.Errorf("empirical lengths %+v, want %+v", p, want)
	}

	cl, err := Load("testdata/config/valid_closed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cw := cl.Workloads[0]
	if cw.Arrival.Users != 8 || cw.Arrival.Think != 500*time.Millisecond || cw.Arrival.ThinkDist != "exponential" {
		t.Errorf("closed arrival %+v", cw.Arrival)
	}
	if cw.PrefixCache != (PrefixCache{Mode: PrefixShared, Tokens: 512, Groups: 1}) {
		t.Errorf("scalar shared prefix = %+v, want the shared defaults", cw.PrefixCache)
	}
	wantSLO := []SLOTarget{{"e2e", 50, time.Second}, {"e2e", 99.9, 5 * time.Second}, {"itl", 99.9, 100 * time.Millisecond}}
	if !cmp.Equal(cw.SLO.Targets, wantSLO) {
		t.Errorf("SLO targets %v, want %v (sorted, p999 = p99.9)", cw.SLO.Targets, wantSLO)
	}
	if got := cl.Model.GPUMemoryUtilization; got < 0.8499 || got > 0.8501 {
		t.Errorf("gpu_memory_utilization 85%% = %v", got)
	}
	if arch := cl.Model.Architecture; arch == nil || *arch != (Architecture{Layers: 5, KVHeads: 4, HeadDim: 8, DTypeBytes: 2, TensorParallel: 1}) {
		t.Errorf("architecture %+v", arch)
	}
	if s := cl.Target.Start; s == nil || s.ReadyTimeout != 2*time.Minute || s.Env["LLAMA_ARG_THREADS"] != "2" {
		t.Errorf("start %+v", s)
	}
	rules := cl.Gate.Rules
	if len(rules) != 2 || rules[0].Metric != "e2e_p99" || rules[0].Max == nil || *rules[0].Max != 5000 ||
		rules[1].Metric != "slo_attainment" || rules[1].Min == nil || *rules[1].Min != 0.99 {
		t.Errorf("rules %+v: want a latency max in milliseconds (5000) and a fraction min (0.99)", rules)
	}
	if cl.Gate.MaxBaselineAge != 720*time.Hour || cl.Gate.Resamples != 5000 || cl.Gate.Seed != 42 {
		t.Errorf("gate %+v", cl.Gate)
	}
}

// TestParseScalars covers the value syntaxes one key at a time: what is accepted, and
// the exact message of what is not.
func TestParseScalars(t *testing.T) {
	base := func(line string) string {
		return "version: 1\nmodel: {name: m}\nworkloads:\n  - name: w\n    requests: 1\n" +
			"    arrival: {process: poisson, rate: 1}\n    prompt_tokens: 8\n    output_tokens: 8\n" + line + "\n"
	}
	tests := []struct {
		line  string
		check func(*File) bool
		err   string
	}{
		// durations need a unit, and the message says so
		{line: "    timeout: 30", err: `t.yaml:9:14: invalid timeout "30": a duration needs a unit, e.g. "30s"; units are "ns", "us", "ms", "s", "m", "h"`},
		// a quoted number is still a number without a unit
		{line: `    timeout: "2.5"`, err: `t.yaml:9:14: invalid timeout "2.5": a duration needs a unit, e.g. "2.5s"; units are "ns", "us", "ms", "s", "m", "h"`},
		// compound Go durations work
		{line: "    timeout: 1h30m", check: func(f *File) bool { return f.Workloads[0].Timeout == 90*time.Minute }},
		// percentages and fractions are the same value
		{line: "    slo: {attainment: 99.9%}", check: func(f *File) bool { return near(f.Workloads[0].SLO.Attainment, 0.999) }},
		{line: "    slo: {attainment: 0.999}", check: func(f *File) bool { return f.Workloads[0].SLO.Attainment == 0.999 }},
		// a fraction over 1 is refused rather than read as a percentage
		{line: "    slo: {attainment: 99}", err: `t.yaml:9:23: invalid slo.attainment "99": must be more than 0 and at most 100%; a bare number is a fraction, write "99%" for 99 percent`},
		// a percentage needs a number
		{line: "    slo: {attainment: lots%}", err: `t.yaml:9:23: invalid slo.attainment "lots%": expected a fraction such as 0.05 or a percentage such as "5%"`},
		// ignore_eos: unset is nil (engine decides), false is an explicit false
		{line: "    ignore_eos: false", check: func(f *File) bool { return f.Workloads[0].IgnoreEOS != nil && !*f.Workloads[0].IgnoreEOS }},
		{line: "", check: func(f *File) bool { return f.Workloads[0].IgnoreEOS == nil }},
		// YAML 1.1 booleans are strings in yaml.v3 and are refused, not guessed
		{line: "    ignore_eos: yes", err: `t.yaml:9:17: invalid ignore_eos "yes": expected true or false`},
		// seed 0 is a valid seed, distinct from the default 1
		{line: "    seed: 0", check: func(f *File) bool { return f.Workloads[0].Seed == 0 }},
		// an overflowing duration is out of range, with the range, not "expected a duration"
		{line: "    timeout: 9999999999h", err: `t.yaml:9:14: invalid timeout "9999999999h": out of range: durations go up to 2562047h47m16.854775807s (about 292 years)`},
		// an overflowing integer is out of range, with the range
		{line: "    seed: 99999999999999999999", err: `t.yaml:9:11: invalid seed "99999999999999999999": out of range: integers go from -9223372036854775808 to 9223372036854775807`},
		{line: "    repeats: 9999999999", err: `t.yaml:9:14: invalid repeats "9999999999": out of range: must be from -2147483648 to 2147483647`},
		// a number too large for a float
		{line: "capacity: {peak_rps: 1e999, target_utilization: 60%}", err: `t.yaml:9:22: invalid capacity.peak_rps "1e999": out of range: numbers go up to 1.7976931348623157e+308`},
		// a duplicate key is reported at its second occurrence
		{line: "    requests: 2", err: `t.yaml:9:5: duplicate key "requests" in "workloads[0]"; first given at line 5`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(base(tt.line)))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("error\n got: %v\nwant: %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !tt.check(f) {
				t.Errorf("loaded workload %+v does not satisfy the check", f.Workloads[0])
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestParseResolvesAgainstConfigDir checks that a relative trace path follows the
// config's directory, not the process's working directory.
func TestParseResolvesAgainstConfigDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "arrivals.txt"), []byte("0s\n1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "version: 1\nmodel: {name: m}\nworkloads:\n  - name: w\n    requests: 2\n" +
		"    arrival: {process: trace, trace: arrivals.txt}\n    prompt_tokens: 8\n    output_tokens: 8\n"
	f, err := Parse(filepath.Join(dir, "slogate.yaml"), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Workloads[0].Arrival.Offsets; !cmp.Equal(got, []time.Duration{0, time.Second}) {
		t.Errorf("offsets %v", got)
	}
	if _, err := Parse("elsewhere/slogate.yaml", []byte(cfg)); err == nil ||
		!strings.Contains(err.Error(), `cannot read trace elsewhere/arrivals.txt`) {
		t.Errorf("from another directory: got %v, want a read error naming elsewhere/arrivals.txt", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || !strings.HasSuffix(es[0].Error(), "nope.yaml: cannot read: no such file or directory") {
		t.Errorf("got %v", err)
	}
}

// FuzzParse checks that no input makes the loader panic, and that a file that loads
// hashes without panicking.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"valid_full", "errors_many", "errors_types", "errors_lengths", "errors_gate"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "config", name+".yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err == nil {
			for i := range file.Workloads {
				_ = Hash(file, &file.Workloads[i])
			}
		} else if err.Error() == "" {
			t.Error("empty error message")
		}
	})
}

// TestAliasExpansionBounded checks that a small file whose aliases expand to a huge tree
// is refused instead of walked: 400 workloads × 400 classes from a few kilobytes.
func TestAliasExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nmodel: {name: m}\nc: &c {name: c, weight: 1}\nw: &w\n  name: w\n  classes: [")
	for i := range 400 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*c")
	}
	b.WriteString("]\nworkloads: [")
	for i := range 400 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*w")
	}
	b.WriteString("]\n")
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Fatalf("got %.300v..., want the expansion limit", err)
	}
}

// TestLoadedWorkloadsGenerate checks the contract between the loader and the generator:
// every workload of every valid example is accepted as loaded, and an open loop yields
// a schedule.
func TestLoadedWorkloadsGenerate(t *testing.T) {
	chdirRoot(t)
	files, err := filepath.Glob("testdata/config/valid_*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		f, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.Workloads {
			w := &f.Workloads[i]
			g, err := NewGenerator(w)
			if err != nil {
				t.Errorf("%s %s: NewGenerator: %v", file, w.Name, err)
				continue
			}
			if w.Arrival.Process != ArrivalClosed && len(g.Arrivals()) == 0 {
				t.Errorf("%s %s: open loop with no arrivals", file, w.Name)
			}
			if it := g.Request(0); it.PromptTokens < 1 || it.OutputTokens < 1 {
				t.Errorf("%s %s: request 0 has lengths %d/%d", file, w.Name, it.PromptTokens, it.OutputTokens)
			}
		}
	}
}

// TestParseDocuments covers files that are not one YAML mapping.
func TestParseDocuments(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		// a second document would otherwise be ignored without a word
		{"two documents", "version: 1\nmodel: {name: m}\nworkloads: [{name: w, requests: 1, arrival: {process: poisson, rate: 1}, prompt_tokens: 1, output_tokens: 1}]\n---\nversion: 2\n", "d.yaml:4:1: a workload file holds one YAML document; a second one starts here"},
		// comments only is as empty as nothing
		{"only comments", "# nothing here\n", `d.yaml:1:1: the file is empty; expected a mapping with "version", "target", "model", "workloads", "gate", "capacity"`},
		// a list at the top level
		{"a list", "- a\n- b\n", `d.yaml:1:1: invalid file: expected a mapping with "version", "target", "model", "workloads", "gate", "capacity"`},
		// merge keys are not supported and are named as unknown keys
		{"merge key", "base: &b {version: 1}\n<<: *b\n", `d.yaml:1:1: unknown key "base" at the top level`},
		// an unclosed bracket points at the line that opens it
		{"unclosed", "version: 1\nmodel: {name: m\nworkloads: []\n", "d.yaml:2:1: YAML syntax error: did not find expected ',' or '}'"},
		// a tab in the indentation
		{"tab", "version: 1\nmodel:\n\tname: m\n", "d.yaml:3:1: YAML syntax error: found character that cannot start any token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("d.yaml", []byte(tt.src))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got\n%v\nwant a report starting with\n%s", err, tt.want)
			}
		})
	}
}
