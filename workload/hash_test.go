package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// hashBase has one workload of each kind, so that every hashed field can be mutated.
const hashBase = `
version: 1
target: {url: "http://127.0.0.1:8000", api: chat, engine: vllm, api_key_env: KEY}
model: {name: m, revision: r1, precision: bf16}
workloads:
  - name: open
    seed: 7
    requests: 100
    warmup: {requests: 4}
    arrival: {process: gamma, burstiness: 2, profile: {steps: [{rate: 5, duration: 10s}, {rate: 9}]}}
    prompt_tokens: {dist: lognormal, p50: 100, p95: 300, max: 900}
    output_tokens: {dist: empirical, values: [10, 20, 30]}
    prefix_cache: {mode: shared, tokens: 64, groups: 2}
    slo: {ttft: {p95: 500ms}, itl: {p99: 100ms}}
    classes:
      - {name: a, weight: 2}
      - {name: b, weight: 1, output_tokens: 50, slo: {ttft: {p95: 1s}}}
  - name: closed
    duration: 1m
    arrival: {process: closed, users: 4, think: 1s}
    prompt_tokens: 8
    output_tokens: 8
  - name: replay
    requests: 7
    arrival: {process: trace, trace: trace.txt}
    prompt_tokens: {dist: empirical, file: lengths.txt}
    output_tokens: 8
`

// The same file reordered, restyled, commented, and with some defaults spelled out.
const hashBaseRestyled = `
# comments change nothing
workloads:
- arrival:
    profile:
      steps:
      - {duration: 10s, rate: 5}
      - rate: 9
    burstiness: 2
    process: gamma
  name: open
  classes:
  - weight: 2
    name: a
  - {slo: {ttft: {p95: 1000ms}}, output_tokens: {dist: fixed, value: 50}, weight: 1, name: b}
  output_tokens: {values: [10, 20, 30], dist: empirical}
  prompt_tokens: {max: 900, p95: 300, p50: 100, dist: lognormal, min: 1}
  prefix_cache: {groups: 2, tokens: 64, mode: shared}
  requests: 100
  seed: 7
  slo:
    itl: {p99: 100ms}
    ttft: {p95: 0.5s}
    attainment: 99%
  timeout: 2m
  warmup: {requests: 4}
  repeats: 1
- {name: closed, duration: 60s, prompt_tokens: 8, output_tokens: 8, arrival: {users: 4, think: 1s, process: closed, think_dist: fixed}}
- name: replay
  requests: 7
  output_tokens: 8
  prompt_tokens: {file: lengths.txt, dist: empirical}
  arrival: {trace: trace.txt, process: trace}
model: {revision: r1, name: m}
target: {api: chat}
version: 1
`

func loadHashBase(t *testing.T, src string) *File {
	t.Helper()
	// Parsed as if it sat in testdata/config, beside trace.txt and lengths.txt.
	f, err := Parse(filepath.Join("..", "testdata", "config", "hashbase.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestHashStableAcrossFormatting(t *testing.T) {
	a, b := loadHashBase(t, hashBase), loadHashBase(t, hashBaseRestyled)
	for i := range a.Workloads {
		ha, hb := Hash(a, &a.Workloads[i]), Hash(b, &b.Workloads[i])
		if ha != hb {
			t.Errorf("workload %s: %s != %s after reordering keys, restyling and spelling out defaults", a.Workloads[i].Name, ha, hb)
		}
		if !strings.HasPrefix(ha, "sha256:") || len(ha) != len("sha256:")+64 {
			t.Errorf("hash %q is not sha256:<64 hex>", ha)
		}
	}
	// Hashing twice gives the same answer (no map order, no pointer identity).
	if Hash(a, &a.Workloads[0]) != Hash(a, &a.Workloads[0]) {
		t.Error("hash is not deterministic")
	}
}

func TestHashMutations(t *testing.T) {
	const open, closed, replay = 0, 1, 2
	tests := []struct {
		name    string
		wl      int
		mutate  func(f *File, w *Workload)
		changes bool
	}{
		// what is sent and how it is judged: each must change the hash
		{"api decides the request body", open, func(f *File, w *Workload) { f.Target.API = "completions" }, true},
		{"model name", open, func(f *File, w *Workload) { f.Model.Name = "m2" }, true},
		{"model revision", open, func(f *File, w *Workload) { f.Model.Revision = "r2" }, true},
		{"seed picks lengths and prompts", open, func(f *File, w *Workload) { w.Seed = 8 }, true},
		{"request count", open, func(f *File, w *Workload) { w.Requests = 101 }, true},
		{"duration", closed, func(f *File, w *Workload) { w.Duration = 2 * time.Minute }, true},
		{"warm-up count", open, func(f *File, w *Workload) { w.Warmup.Requests = 5 }, true},
		{"arrival process", open, func(f *File, w *Workload) { w.Arrival.Process = ArrivalPoisson }, true},
		{"gamma burstiness", open, func(f *File, w *Workload) { w.Arrival.Burstiness = 3 }, true},
		{"rate", open, func(f *File, w *Workload) { w.Arrival.Rate = 4 }, true},
		{"profile step rate", open, func(f *File, w *Workload) { w.Arrival.Profile.Steps[1].Rate = 10 }, true},
		{"profile step duration", open, func(f *File, w *Workload) { w.Arrival.Profile.Steps[0].Duration = 11 * time.Second }, true},
		{"profile kind", open, func(f *File, w *Workload) {
			w.Arrival.Profile = &RateProfile{Kind: "ramp", From: 5, To: 9, Over: 10 * time.Second}
		}, true},
		{"closed users", closed, func(f *File, w *Workload) { w.Arrival.Users = 5 }, true},
		{"closed think", closed, func(f *File, w *Workload) { w.Arrival.Think = 2 * time.Second }, true},
		{"closed think distribution", closed, func(f *File, w *Workload) { w.Arrival.ThinkDist = "exponential" }, true},
		{"trace offsets (the data, not the path)", replay, func(f *File, w *Workload) { w.Arrival.Offsets[1]++ }, true},
		{"prompt length p50", open, func(f *File, w *Workload) { w.PromptTokens.P50 = 101 }, true},
		{"prompt length clip", open, func(f *File, w *Workload) { w.PromptTokens.Max = 901 }, true},
		{"output empirical values", open, func(f *File, w *Workload) { w.OutputTokens.Values[2] = 31 }, true},
		{"empirical values loaded from a file", replay, func(f *File, w *Workload) { w.PromptTokens.Values[0] = 129 }, true},
		{"prefix mode", open, func(f *File, w *Workload) { w.PrefixCache = PrefixCache{Mode: PrefixCold} }, true},
		{"prefix tokens", open, func(f *File, w *Workload) { w.PrefixCache.Tokens = 65 }, true},
		{"prefix groups", open, func(f *File, w *Workload) { w.PrefixCache.Groups = 3 }, true},
		{"timeout turns slow successes into errors", open, func(f *File, w *Workload) { w.Timeout = time.Minute }, true},
		{"SLO limit", open, func(f *File, w *Workload) { w.SLO.Targets[0].Limit++ }, true},
		{"SLO percentile", open, func(f *File, w *Workload) { w.SLO.Targets[0].Percentile = 99.9 }, true},
		{"SLO attainment", open, func(f *File, w *Workload) { w.SLO.Attainment = 0.95 }, true},
		{"class weight", open, func(f *File, w *Workload) { w.Classes[0].Weight = 3 }, true},
		{"class name", open, func(f *File, w *Workload) { w.Classes[1].Name = "c" }, true},
		{"class lengths", open, func(f *File, w *Workload) { w.Classes[1].OutputTokens.Value = 51 }, true},
		{"class SLO", open, func(f *File, w *Workload) { w.Classes[1].SLO.Targets[0].Limit++ }, true},
		{"class order", open, func(f *File, w *Workload) { w.Classes[0], w.Classes[1] = w.Classes[1], w.Classes[0] }, true},
		{"ignore_eos set where unset", open, func(f *File, w *Workload) { v := false; w.IgnoreEOS = &v }, true},

		// what neither changes the traffic nor the SLO verdict: the hash must not move
		{"workload name", open, func(f *File, w *Workload) { w.Name = "renamed" }, false},
		{"target url (--target overrides it)", open, func(f *File, w *Workload) { f.Target.URL = "http://10.0.0.1:9000" }, false},
		{"engine adapter", open, func(f *File, w *Workload) { f.Target.Engine = "auto" }, false},
		{"api key variable", open, func(f *File, w *Workload) { f.Target.APIKeyEnv = "OTHER" }, false},
		{"engine start command", open, func(f *File, w *Workload) { f.Target.Start = &StartSpec{Command: []string{"x"}} }, false},
		// How engines are swapped between A/B blocks changes how they are brought up,
		// never what is sent.
		{"swap mode", open, func(f *File, w *Workload) { f.Target.Swap = &SwapSpec{Mode: SwapSleep, Level: 1} }, false},
		{"metrics scraping", open, func(f *File, w *Workload) { f.Target.Metrics.Interval = 5 * time.Second }, false},
		{"model precision is informational", open, func(f *File, w *Workload) { f.Model.Precision = "fp8" }, false},
		{"kv bytes per token", open, func(f *File, w *Workload) { f.Model.KVBytesPerToken = 1 }, false},
		{"gate rules", open, func(f *File, w *Workload) { f.Gate.Rules = nil }, false},
		{"gate resamples", open, func(f *File, w *Workload) { f.Gate.Resamples = 9999 }, false},
		{"capacity", open, func(f *File, w *Workload) { f.Capacity = &CapacityConfig{PeakRPS: 1} }, false},
		{"repeats", open, func(f *File, w *Workload) { w.Repeats = 5 }, false},
		{"max dispatch lag", open, func(f *File, w *Workload) { w.MaxDispatchLag = time.Second }, false},
		{"trace path with the same offsets", replay, func(f *File, w *Workload) { w.Arrival.Trace = "copy.txt" }, false},
		{"lengths file path with the same values", replay, func(f *File, w *Workload) { w.PromptTokens.File = "copy.txt" }, false},
		{"config path", open, func(f *File, w *Workload) { f.Path = "elsewhere.yaml" }, false},
		{"think time of an open loop does not apply", open, func(f *File, w *Workload) { w.Arrival.ThinkDist = "exponential" }, false},
		{"burstiness of a closed loop does not apply", closed, func(f *File, w *Workload) { w.Arrival.Burstiness = 7 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := loadHashBase(t, hashBase)
			after := loadHashBase(t, hashBase)
			tt.mutate(after, &after.Workloads[tt.wl])
			hb, ha := Hash(before, &before.Workloads[tt.wl]), Hash(after, &after.Workloads[tt.wl])
			if changed := hb != ha; changed != tt.changes {
				t.Errorf("hash changed = %v, want %v", changed, tt.changes)
			}
		})
	}
}

// TestHashCorpusVersion checks that the corpus version is part of the canonical form: a
// new corpus sends other prompts.
func TestHashCorpusVersion(t *testing.T) {
	f := loadHashBase(t, hashBase)
	w := &f.Workloads[0]
	if hashWith(f, w, CorpusVersion) != Hash(f, w) {
		t.Fatal("Hash does not use CorpusVersion")
	}
	if hashWith(f, w, CorpusVersion+"x") == Hash(f, w) {
		t.Error("a different corpus version gives the same hash")
	}
}

// TestHashGolden pins the hashes of the valid example files: a change of the canonical
// form makes every committed baseline incomparable, so it must be deliberate (update
// with -update and say so).
func TestHashGolden(t *testing.T) {
	chdirRoot(t)
	files, err := filepath.Glob("testdata/config/valid_*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid configs: %v", err)
	}
	var b strings.Builder
	for _, file := range files {
		f, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.Workloads {
			fmt.Fprintf(&b, "%s %s %s\n", filepath.Base(file), f.Workloads[i].Name, Hash(f, &f.Workloads[i]))
		}
	}
	golden := "testdata/config/hashes.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("workload hashes changed (-want +got); every baseline becomes incomparable:\n%s", diff)
	}
}
