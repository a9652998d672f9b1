package gate

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

func fptr(x float64) *float64 { return &x }

// testConfig is a workload file with one workload, "chat", and the given rules (the
// defaults when nil).
func testConfig(rules []workload.Rule) *workload.File {
	return &workload.File{
		Path:      "slogate.yaml",
		Target:    workload.Target{API: "chat"},
		Model:     workload.Model{Name: "meta-llama/Llama-3.1-8B-Instruct"},
		Workloads: []workload.Workload{{Name: "chat", Seed: 7, Requests: 500}},
		Gate: workload.GateConfig{
			Baselines: "baselines", Rules: rules, Drift: workload.DefaultDrift(),
			MissingBaseline: "warn", Resamples: 2000, Confidence: 0.95, Seed: 1,
		},
	}
}

// rec is a synthetic run of the config's workload (its hash, so it is comparable).
func rec(f *workload.File, seed uint64, s gatetest.Spec) *result.Record {
	if s.Hash == "" {
		s.Hash = workload.Hash(f, &f.Workloads[0])
	}
	return gatetest.Record(seed, s)
}

// storeOf holds baselines made from each group of records.
func storeOf(t testing.TB, groups ...[]*result.Record) Store {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, g := range groups {
		b, err := FromRecords(g, created)
		if err != nil {
			t.Fatal(err)
		}
		data, err := Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		fsys[RelPath(b.Workload, b.Hardware)] = &fstest.MapFile{Data: data}
	}
	return Store{FS: fsys, Dir: "baselines"}
}

func evaluate(t testing.TB, f *workload.File, store Store, runs ...*result.Record) *Result {
	t.Helper()
	res, err := Evaluate(Input{Config: f, Runs: runs, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("result does not encode as JSON: %v", err)
	}
	return res
}

func metric(t testing.TB, w WorkloadResult, name string) MetricResult {
	t.Helper()
	for _, m := range w.Metrics {
		if m.Metric == name {
			return m
		}
	}
	t.Fatalf("no metric %s in %+v", name, w.Metrics)
	return MetricResult{}
}

// everyMetric is a rule for each family of metric the gate computes.
var everyMetric = []workload.Rule{
	{Metric: "goodput", Direction: "higher", Tolerance: 0.05},
	{Metric: "throughput", Direction: "higher", Tolerance: 0.05},
	{Metric: "output_tokens_per_s", Direction: "higher", Tolerance: 0.05},
	{Metric: "slo_attainment", Direction: "higher", Tolerance: 0.02},
	{Metric: "error_rate", Direction: "lower", Tolerance: 0.5},
	{Metric: "kv_concurrency", Direction: "higher", Tolerance: 0.01},
	{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10},
	{Metric: "itl_p50", Direction: "lower", Tolerance: 0.10},
	{Metric: "itl_mean", Direction: "lower", Tolerance: 0.10},
	{Metric: "itl_max", Direction: "lower", Tolerance: 0.50},
	{Metric: "ttft_p95", Direction: "lower", Tolerance: 0.20},
	{Metric: "ttft_p999", Direction: "lower", Tolerance: 0.50},
	{Metric: "tpot_p95", Direction: "lower", Tolerance: 0.10},
	{Metric: "tpot_mean", Direction: "lower", Tolerance: 0.10},
	{Metric: "e2e_p99", Direction: "lower", Tolerance: 0.10},
	{Metric: "e2e_max", Direction: "lower", Tolerance: 0.50},
}

// TestRoundTrip: a baseline made from records, then the gate on the same records,
// gives every ratio exactly 1: both sides go through the same rounding. Each rule
// passes but those this one run cannot decide: the percentiles whose tail 500 requests
// barely measure (ttft_p999 rests on half a value above it, e2e_p99 on five) cannot
// pass whatever their interval, and output tokens per second and the error rate have
// intervals wider than their tolerance. They are inconclusive, say why, and make the
// gate inconclusive.
func TestRoundTrip(t *testing.T) {
	f := testConfig(everyMetric)
	r := rec(f, 1, gatetest.Spec{ErrorRate: 0.02, KVConcurrency: 80})
	res := evaluate(t, f, storeOf(t, []*result.Record{r}), r)
	if res.Verdict != Inconclusive || len(res.Workloads) != 1 {
		t.Fatalf("verdict %s with %d workloads, want inconclusive with 1", res.Verdict, len(res.Workloads))
	}
	w := res.Workloads[0]
	if len(w.Metrics) != len(everyMetric) {
		t.Fatalf("%d metrics, want %d", len(w.Metrics), len(everyMetric))
	}
	undecided := map[string]string{
		"ttft_p999": "rests on 0.5 values beyond it", "e2e_p99": "rests on 4.9 values beyond it",
		"output_tokens_per_s": "narrower than this comparison's resolution", "error_rate": "narrower than this comparison's resolution",
	}
	for _, m := range w.Metrics {
		want := Pass
		if why, ok := undecided[m.Metric]; ok {
			want = Inconclusive
			if !strings.Contains(m.Undecided, why) && !slices.ContainsFunc(m.Warnings, func(s string) bool { return strings.Contains(s, why) }) {
				t.Errorf("%s: undecided %q and warnings %q do not say %q", m.Metric, m.Undecided, m.Warnings, why)
			}
			if m.Undecided == "" {
				t.Errorf("%s: inconclusive without saying what would decide it", m.Metric)
			}
		}
		if m.Verdict != want || m.Ratio == nil || *m.Ratio != 1 || *m.Lo > 1 || *m.Hi < 1 {
			t.Errorf("%s: %s, ratio %v [%v, %v]; want %s at exactly 1 inside its interval (%v)", m.Metric, m.Verdict, val(m.Ratio), val(m.Lo), val(m.Hi), want, m.Warnings)
		}
		if *m.Baseline != *m.Candidate {
			t.Errorf("%s: baseline %v, candidate %v; want equal", m.Metric, *m.Baseline, *m.Candidate)
		}
	}
	if m := metric(t, w, "itl_p99"); m.Method != MethodBootstrap || m.Resolution <= 0 || m.Unit != UnitMS {
		t.Errorf("itl_p99: method %s, resolution %v, unit %s; want a bootstrap with a resolution, in ms", m.Method, m.Resolution, m.Unit)
	}
	if m := metric(t, w, "kv_concurrency"); m.Method != MethodExact || *m.Candidate != 80 {
		t.Errorf("kv_concurrency: method %s, value %v; want exact, 80", m.Method, val(m.Candidate))
	}
	if m := metric(t, w, "error_rate"); math.Abs(*m.Candidate-0.02) > 0.015 {
		t.Errorf("error_rate %v, want about 2%%", *m.Candidate)
	}
	for _, d := range w.Drift {
		if d.Status != DriftSame {
			t.Errorf("drift on %s between a run and itself: %+v", d.Field, d)
		}
	}
}

func val(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestVerdicts runs the whole gate on independent runs with injected changes.
func TestVerdicts(t *testing.T) {
	f := testConfig(nil) // the defaults: goodput −5%, itl_p99 +10%, kv −1%, error_rate ≤ 0.5%
	base := rec(f, 1, gatetest.Spec{Requests: 2000, KVConcurrency: 80})
	store := storeOf(t, []*result.Record{base})
	for _, c := range []struct {
		name   string
		spec   gatetest.Spec
		metric string
		want   Verdict
		whole  Verdict
	}{
		// Another run of the same thing: nothing to see.
		{"same", gatetest.Spec{}, "itl_p99", Pass, Pass},
		// Every gap 30% longer: a clear ITL regression fails itl_p99.
		{"itl x1.3", gatetest.Spec{GapScale: 1.3}, "itl_p99", Fail, Fail},
		// 5% slower inside a 10% tolerance passes.
		{"itl x1.05", gatetest.Spec{GapScale: 1.05}, "itl_p99", Pass, Pass},
		// 30% faster: improved, a hint to refresh the baseline; the other rules passed,
		// and the workload with them.
		{"itl x0.7", gatetest.Spec{GapScale: 0.7}, "itl_p99", Improved, Pass},
		// Fewer KV slots, beyond the 1% tolerance: deterministic, fails on the number.
		{"kv 80->70", gatetest.Spec{KVConcurrency: 70}, "kv_concurrency", Fail, Fail},
		// 3% timeouts break the absolute error-rate limit, and goodput with it.
		{"errors", gatetest.Spec{ErrorRate: 0.03}, "error_rate", Fail, Fail},
	} {
		s := c.spec
		s.Requests = 2000
		if s.KVConcurrency == 0 {
			s.KVConcurrency = 80
		}
		res := evaluate(t, f, store, rec(f, 99, s))
		m := metric(t, res.Workloads[0], c.metric)
		if m.Verdict != c.want || res.Verdict != c.whole {
			t.Errorf("%s: %s %s (ratio %v [%v, %v]), gate %s; want %s, gate %s",
				c.name, c.metric, m.Verdict, val(m.Ratio), val(m.Lo), val(m.Hi), res.Verdict, c.want, c.whole)
		}
	}
}

func TestITLRegressionFails(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	base := rec(f, 1, gatetest.Spec{})
	cand := rec(f, 2, gatetest.Spec{GapScale: 1.3})
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
	m := metric(t, res.Workloads[0], "itl_p99")
	if m.Verdict != Fail || *m.Lo <= 1.1 {
		t.Errorf("itl ×1.3: %s, ratio %v [%v, %v]; want fail with the whole interval above 1.1", m.Verdict, *m.Ratio, *m.Lo, *m.Hi)
	}
}

func TestWorkloadChanged(t *testing.T) {
	f := testConfig(nil)
	base := rec(f, 1, gatetest.Spec{Hash: "sha256:old", KVConcurrency: 80})
	cand := rec(f, 2, gatetest.Spec{KVConcurrency: 80})
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
	w := res.Workloads[0]
	if res.Verdict != Incomparable || w.Verdict != Incomparable {
		t.Errorf("verdict %s/%s, want incomparable", res.Verdict, w.Verdict)
	}
	for _, want := range []string{"workload changed: baseline hash sha256:old, run hash " + cand.WorkloadHash, "slogate baseline update"} {
		if !strings.Contains(w.Reason, want) {
			t.Errorf("reason %q; want it to say %q", w.Reason, want)
		}
	}
	// Absolute limits still apply to the run alone; relative rules compare nothing.
	if m := metric(t, w, "error_rate"); m.Method != MethodAbsolute || m.Verdict != Pass {
		t.Errorf("error_rate: %s %s; want the absolute check to pass", m.Method, m.Verdict)
	}
	// A relative-only rule compares nothing here, and is not shown as if it passed.
	if len(w.Metrics) != 1 {
		t.Errorf("metrics %+v; want only error_rate's absolute check", w.Metrics)
	}
}

// TestWorkloadChangedNamesTheKeys: a baseline and a run that carry their workload's
// form say which keys changed, old and new, not two hashes; records made from another
// definition than the config's now are bad input naming the keys, unless the gate is
// asked to judge them as they were made, which then warns with the same keys.
func TestWorkloadChangedNamesTheKeys(t *testing.T) {
	old := testConfig(nil)
	now := testConfig(nil)
	now.Workloads[0].Seed = 8
	withForm := func(f *workload.File, seed uint64) *result.Record {
		r := rec(f, seed, gatetest.Spec{KVConcurrency: 80})
		r.WorkloadForm = workload.Form(f, &f.Workloads[0])
		return r
	}
	res := evaluate(t, now, storeOf(t, []*result.Record{withForm(old, 1)}), withForm(now, 2))
	w := res.Workloads[0]
	if w.Verdict != Incomparable || !slices.Equal(w.Changed, []string{"seed: 7 → 8"}) || !strings.Contains(w.Reason, "workload changed since the baseline: seed: 7 → 8") || strings.Contains(w.Reason, "sha256:") {
		t.Errorf("verdict %s, changed %q, reason %q: want incomparable naming seed 7 → 8", w.Verdict, w.Changed, w.Reason)
	}

	// Records of the old definition gated with the config as it is now.
	stale := withForm(old, 2)
	_, err := Evaluate(Input{Config: now, Runs: []*result.Record{stale}, Store: storeOf(t, []*result.Record{withForm(old, 1)})})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "seed: 7 → 8") || !strings.Contains(err.Error(), "--allow-changed-config") {
		t.Errorf("stale records: %v, want bad input naming seed 7 → 8 and the flag", err)
	}
	res, err = Evaluate(Input{Config: now, Runs: []*result.Record{stale}, Store: storeOf(t, []*result.Record{withForm(old, 1)}), AllowChangedConfig: true})
	if err != nil || !slices.ContainsFunc(res.Workloads[0].Warnings, func(s string) bool { return strings.Contains(s, "seed: 7 → 8") }) {
		t.Errorf("stale records allowed: %v, warnings %q: want judged with a warning naming seed 7 → 8", err, res.Workloads[0].Warnings)
	}
}

func TestMissingBaseline(t *testing.T) {
	for _, c := range []struct {
		policy string
		errors float64
		want   Verdict
		blocks bool
	}{
		// The default: its own verdict, which fails the gate (a typo in gate.baselines
		// must not turn CI green).
		{"fail", 0, NoBaseline, true},
		// Bootstrapping: the verdict stays no_baseline, and the gate lets it through.
		{"allow", 0, NoBaseline, false},
		// warn, the older spelling of allow.
		{"warn", 0, NoBaseline, false},
		// Absolute limits apply even without a baseline, and an allowed missing baseline
		// does not hide them.
		{"allow", 0.05, Fail, true},
	} {
		f := testConfig(nil)
		f.Gate.MissingBaseline = c.policy
		res := evaluate(t, f, Store{FS: fstest.MapFS{}, Dir: "baselines"}, rec(f, 1, gatetest.Spec{ErrorRate: c.errors}))
		w := res.Workloads[0]
		if w.Verdict != c.want || res.Blocks() != c.blocks {
			t.Errorf("missing_baseline %s, error rate %v: %s (blocks %v), want %s (blocks %v)", c.policy, c.errors, w.Verdict, res.Blocks(), c.want, c.blocks)
		}
		for _, s := range []string{"no baseline at baselines/chat/h100-80gb-hbm3-x1.json", "slogate baseline update", "gate.missing_baseline: allow"} {
			if !strings.Contains(w.Reason, s) {
				t.Errorf("reason %q; want %q", w.Reason, s)
			}
		}
	}
}

// TestNoBaselineRanks: a missing baseline ranks below incomparable, so that allowing
// missing baselines never lets an incomparable or failing workload through.
func TestNoBaselineRanks(t *testing.T) {
	for _, c := range []struct {
		vs   []Verdict
		want Verdict
	}{
		{[]Verdict{Pass, NoBaseline}, NoBaseline},
		{[]Verdict{Warn, NoBaseline, Improved}, NoBaseline},
		{[]Verdict{NoBaseline, Incomparable}, Incomparable},
		{[]Verdict{NoBaseline, Fail}, Fail},
		{[]Verdict{Error, NoBaseline}, Error},
	} {
		if got := Worst(c.vs...); got != c.want {
			t.Errorf("Worst(%v) = %s, want %s", c.vs, got, c.want)
		}
		r := &Result{Verdict: Worst(c.vs...), AllowMissingBaseline: true}
		if got := r.Blocks(); got != (c.want != NoBaseline) {
			t.Errorf("%v allowed: blocks %v", c.vs, got)
		}
	}
}

func TestUnfitRunIsError(t *testing.T) {
	f := testConfig(nil)
	base := rec(f, 1, gatetest.Spec{})
	for _, s := range []gatetest.Spec{{ClientSaturated: true}, {Incomplete: true}, {ColdHits: 0.4}} {
		res := evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 2, s))
		if res.Verdict != Error || !strings.Contains(res.Workloads[0].Reason, "refuses to judge") {
			t.Errorf("%+v: %s (%s); want error, refused", s, res.Verdict, res.Workloads[0].Reason)
		}
		// Refused, but the reader still learns what it would have been compared with.
		if w := res.Workloads[0]; w.BaselineCreated == nil || len(w.Drift) == 0 || len(w.Metrics) != 0 {
			t.Errorf("%+v: baseline created %v, %d drift fields, %d metrics; want the baseline and its drift, no metrics", s, w.BaselineCreated, len(w.Drift), len(w.Metrics))
		}
	}
}

// TestDriftWithPassingMetrics: an undeclared change is reported, and decides the verdict,
// even when every metric passes.
func TestDriftWithPassingMetrics(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "goodput", Direction: "higher", Tolerance: 0.05}})
	f.Gate.Drift = []workload.DriftPolicy{{Field: "engine.version", Policy: "expected"}, {Field: "gpu.driver", Policy: "fail"}}
	base := rec(f, 1, gatetest.Spec{})
	for _, c := range []struct {
		name   string
		change map[string]string
		want   Verdict
	}{
		{"engine upgrade under test", map[string]string{"engine.version": "0.6.4"}, Pass},
		{"driver moved underneath", map[string]string{"gpu.driver": "555.42.02"}, Fail},
		{"unlisted field", map[string]string{"host.kernel": "6.8.0"}, Pass}, // only on one side: unknown
		{"unlisted field changed", map[string]string{"gpu.cuda": "12.6"}, Warn},
	} {
		env := gatetest.Env()
		for k, v := range c.change {
			env[k] = v
		}
		res := evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 1, gatetest.Spec{Env: env}))
		w := res.Workloads[0]
		if w.Verdict != c.want || w.Metrics[0].Verdict != Pass {
			t.Errorf("%s: %s (goodput %s); want %s with goodput passing", c.name, w.Verdict, w.Metrics[0].Verdict, c.want)
		}
	}
}

func TestCompareEnv(t *testing.T) {
	base := map[string]string{"engine.version": "0.6.3", "gpu.driver": "550", "gpu.cuda": "12.4", "model.revision": "abc", "tool.version": "v1", "host.os": "Ubuntu", "gpu.name": "H100"}
	cand := map[string]string{"engine.version": "0.6.4", "gpu.driver": "555", "gpu.cuda": "12.6", "model.revision": "abc", "tool.version": "v2", "runner.name": "gpu-1", "gpu.name": ""}
	pol := []workload.DriftPolicy{
		{Field: "engine.version", Policy: "expected"}, {Field: "gpu.driver", Policy: "warn"},
		{Field: "gpu.cuda", Policy: "fail"}, {Field: "tool.version", Policy: "ignore"},
	}
	want := map[string]struct {
		status string
		v      Verdict
	}{
		"engine.version": {DriftChanged, Pass}, // expected: the change under test
		"gpu.driver":     {DriftChanged, Warn}, // warn
		"gpu.cuda":       {DriftChanged, Fail}, // fail
		"tool.version":   {DriftChanged, Pass}, // ignore
		"model.revision": {DriftSame, Pass},    // unchanged
		"host.os":        {DriftUnknown, Pass}, // baseline only: unknown, not drift
		"runner.name":    {DriftUnknown, Pass}, // candidate only
		"gpu.name":       {DriftUnknown, Pass}, // empty on one side counts as unknown
	}
	got := CompareEnv(base, cand, pol)
	if len(got) != len(want) {
		t.Fatalf("%d fields, want %d: %+v", len(got), len(want), got)
	}
	for i, d := range got {
		if i > 0 && got[i-1].Field >= d.Field {
			t.Errorf("fields not in order: %s before %s", got[i-1].Field, d.Field)
		}
		w := want[d.Field]
		if d.Status != w.status || d.Verdict != w.v {
			t.Errorf("%s: %s %s, want %s %s", d.Field, d.Status, d.Verdict, w.status, w.v)
		}
	}
	if d := got[0]; d.Field != "engine.version" || !d.Drifted() == (d.Policy == PolicyWarn) {
		t.Errorf("Drifted on an expected change: %+v", d)
	}
}

func TestTrials(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	var base, same, slow []*result.Record
	for i := 1; i <= 5; i++ {
		base = append(base, rec(f, uint64(i), gatetest.Spec{Trial: i}))
		same = append(same, rec(f, uint64(10+i), gatetest.Spec{Trial: i}))
		slow = append(slow, rec(f, uint64(20+i), gatetest.Spec{Trial: i, GapScale: 1.4}))
	}
	store := storeOf(t, base)
	for _, c := range []struct {
		name string
		runs []*result.Record
		want Verdict
	}{
		{"five trials of the same", same, Pass},
		// 5 against 5 separate completely by chance 1 time in 252: enough to fail.
		{"five trials 40% slower", slow, Fail},
	} {
		res := evaluate(t, f, store, c.runs...)
		w := res.Workloads[0]
		m := w.Metrics[0]
		if m.Verdict != c.want || m.Method != MethodTrials || len(m.CandidateTrials) != 5 || len(m.BaselineTrials) != 5 {
			t.Errorf("%s: %s by %s with %d/%d trial values; want %s by trials", c.name, m.Verdict, m.Method, len(m.BaselineTrials), len(m.CandidateTrials), c.want)
		}
		if w.Trials != (TrialCounts{5, 5}) || len(w.CandidateSummaries) != 5 || len(w.BaselineSummaries) != 5 {
			t.Errorf("%s: trials %+v, %d/%d summaries", c.name, w.Trials, len(w.BaselineSummaries), len(w.CandidateSummaries))
		}
	}
}

func TestMissingData(t *testing.T) {
	f := testConfig([]workload.Rule{
		{Metric: "max_sustainable_rps", Direction: "higher", Tolerance: 0.05},
		{Metric: "kv_concurrency", Direction: "higher", Tolerance: 0.01},
		// A direction left out: the metric's own (lower for a latency).
		{Metric: "ttft_p95", Tolerance: 0.2},
	})
	base := rec(f, 1, gatetest.Spec{})
	for _, c := range []struct {
		name string
		kv   int
		want Verdict
	}{
		// Neither side knows its KV capacity: nothing to compare, said as a warning.
		{"kv on neither side", 0, Warn},
	} {
		res := evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 2, gatetest.Spec{KVConcurrency: c.kv}))
		w := res.Workloads[0]
		// Run records and no sweep: the rule says how to get one (TestSweep* cover sweeps).
		if m := metric(t, w, "max_sustainable_rps"); m.Verdict != Warn || !strings.Contains(strings.Join(m.Warnings, ";"), "run `slogate sweep") {
			t.Errorf("max_sustainable_rps: %s %v; want warn, no sweep", m.Verdict, m.Warnings)
		}
		if m := metric(t, w, "kv_concurrency"); m.Verdict != c.want {
			t.Errorf("%s: kv_concurrency %s, want %s (%v)", c.name, m.Verdict, c.want, m.Warnings)
		}
		if m := metric(t, w, "ttft_p95"); m.Direction != "lower" || m.Verdict != Pass {
			t.Errorf("ttft_p95 without a direction: %s %s, want lower, pass", m.Direction, m.Verdict)
		}
	}
	// The baseline had a KV capacity and the run has none: that is a change, not a pass.
	kvBase := rec(f, 1, gatetest.Spec{KVConcurrency: 80})
	res := evaluate(t, f, storeOf(t, []*result.Record{kvBase}), rec(f, 2, gatetest.Spec{}))
	if m := metric(t, res.Workloads[0], "kv_concurrency"); m.Verdict != Incomparable {
		t.Errorf("kv lost: %s, want incomparable", m.Verdict)
	}
}

func TestAbsoluteRules(t *testing.T) {
	f := testConfig([]workload.Rule{
		{Metric: "error_rate", Max: fptr(0.005)},
		{Metric: "slo_attainment", Min: fptr(0.99)},
		{Metric: "ttft_p95", Max: fptr(400)}, // ms
	})
	base := rec(f, 1, gatetest.Spec{})
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 2, gatetest.Spec{ErrorRate: 0.02, TTFTScale: 3}))
	w := res.Workloads[0]
	for _, name := range []string{"error_rate", "slo_attainment", "ttft_p95"} {
		m := metric(t, w, name)
		if m.Verdict != Fail || m.Method != MethodAbsolute || m.Direction != "" || m.Ratio != nil {
			t.Errorf("%s: %s by %s (direction %q, ratio %v); want an absolute fail without a ratio", name, m.Verdict, m.Method, m.Direction, val(m.Ratio))
		}
		if m.Baseline == nil {
			t.Errorf("%s: no baseline value shown beside the absolute check", name)
		}
	}
}

func TestZeroOnBothSides(t *testing.T) {
	// No errors before, none now: a relative error-rate rule has 0/0, which is no change.
	f := testConfig([]workload.Rule{{Metric: "error_rate", Direction: "lower", Tolerance: 0.1}})
	base := rec(f, 1, gatetest.Spec{})
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 2, gatetest.Spec{}))
	if m := res.Workloads[0].Metrics[0]; m.Verdict != Pass || *m.Ratio != 1 {
		t.Errorf("0 errors on both sides: %s, ratio %v; want pass at 1", m.Verdict, val(m.Ratio))
	}
	// Errors where there were none: no ratio, and the gate says what rule would work.
	res = evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 2, gatetest.Spec{ErrorRate: 0.05}))
	if m := res.Workloads[0].Metrics[0]; m.Verdict != Incomparable || !strings.Contains(strings.Join(m.Warnings, ";"), "give this rule an absolute limit") {
		t.Errorf("errors from 0: %s %v; want incomparable with a hint", m.Verdict, m.Warnings)
	}
}

func TestEvaluateInputErrors(t *testing.T) {
	f := testConfig(nil)
	r := rec(f, 1, gatetest.Spec{})
	empty := Store{FS: fstest.MapFS{}, Dir: "baselines"}
	bad := Store{FS: fstest.MapFS{"chat/h100-80gb-hbm3-x1.json": {Data: []byte(`{"schema": "slogate.run/v1"}`)}}, Dir: "baselines"}
	for _, c := range []struct {
		name string
		in   Input
		file bool
		want string
	}{
		{"no runs", Input{Config: f, Store: empty}, false, "no run records"},
		{"unknown workload", Input{Config: f, Runs: []*result.Record{r}, Store: empty, Workloads: []string{"rag"}}, false, `no workload "rag"`},
		{"two of one trial", Input{Config: f, Runs: []*result.Record{r, r}, Store: empty}, false, "two run records of trial 0"},
		{"bad baseline", Input{Config: f, Runs: []*result.Record{r}, Store: bad}, true, "baselines/chat/h100-80gb-hbm3-x1.json: a run record"},
	} {
		_, err := Evaluate(c.in)
		var ie *InputError
		var fe *FileError
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
		case c.file && !errors.As(err, &fe), !c.file && !errors.As(err, &ie):
			t.Errorf("%s: %v (%T)", c.name, err, err)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	// Records of a workload the file does not define are said, not judged.
	other := rec(f, 1, gatetest.Spec{Workload: "rag"})
	res := evaluate(t, f, empty, r, other)
	if len(res.Workloads) != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `"rag"`) {
		t.Errorf("workloads %d, warnings %v; want chat judged and rag named", len(res.Workloads), res.Warnings)
	}
}

func TestWorst(t *testing.T) {
	for _, c := range []struct {
		in   []Verdict
		want Verdict
	}{
		{nil, Pass},
		// Improved ranks below pass: one rule improved and another passed passed.
		{[]Verdict{Pass, Improved}, Pass},
		{[]Verdict{Improved}, Improved},
		{[]Verdict{Improved, Warn}, Warn},
		// Inconclusive is not a pass; it outranks a missing baseline, which a config may
		// allow, so that allowing one never lets an undecided rule through.
		{[]Verdict{Warn, Inconclusive, Pass}, Inconclusive},
		{[]Verdict{NoBaseline, Inconclusive}, Inconclusive},
		{[]Verdict{Inconclusive, Incomparable}, Incomparable},
		// Incomparable is not a pass, and outranks a warning.
		{[]Verdict{Warn, Incomparable}, Incomparable},
		{[]Verdict{Incomparable, Fail}, Fail},
		{[]Verdict{Fail, Error, Pass}, Error},
	} {
		if got := Worst(c.in...); got != c.want {
			t.Errorf("Worst(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

// BenchmarkGate is the whole gate on 10,000 requests of about 100 gaps per side, at the
// default rules and 2,000 resamples: decoding the baseline, preparing the candidate,
// the bootstrap comparisons and drift.
func BenchmarkGate(b *testing.B) {
	f := testConfig(nil)
	spec := gatetest.Spec{Requests: 10000, Rate: 50, OutputTokens: 101, KVConcurrency: 80}
	base := rec(f, 1, spec)
	cand := rec(f, 2, spec)
	store := storeOf(b, []*result.Record{base})
	b.ResetTimer()
	for b.Loop() {
		res, err := Evaluate(Input{Config: f, Runs: []*result.Record{cand}, Store: store})
		if err != nil || res.Verdict == Error {
			b.Fatal(err, res.Verdict)
		}
	}
}

// BenchmarkGateCalibratedRepeats is the gate on a candidate of 3 repeats of 2,000
// requests against a baseline calibrated on one engine start (6 runs), at the default
// rules and resamples: each calibrated rule pools the repeats' spread into the
// calibration's (withCandidate) on the resamples its comparison uses.
func BenchmarkGateCalibratedRepeats(b *testing.B) {
	f := testConfig(nil)
	f.Workloads[0].Repeats = 3
	spec := func(trial int) gatetest.Spec {
		return gatetest.Spec{Trial: trial, Requests: 2000, Rate: 50, OutputTokens: 101, KVConcurrency: 80}
	}
	var cal, cand []*result.Record
	for i := range 6 {
		cal = append(cal, rec(f, uint64(10+i), spec(i+1)))
	}
	for i := range 3 {
		cand = append(cand, rec(f, uint64(20+i), spec(i+1)))
	}
	bl, err := FromRecords(cal, created)
	if err != nil {
		b.Fatal(err)
	}
	if bl.Noise, err = Calibrate(f, cal, false, created); err != nil {
		b.Fatal(err)
	}
	store := storeWith(b, bl)
	b.ResetTimer()
	for b.Loop() {
		res, err := Evaluate(Input{Config: f, Runs: cand, Store: store})
		if err != nil || res.Verdict == Error {
			b.Fatal(err, res.Verdict)
		}
	}
}

// BenchmarkRunOf is preparing one record of 500 requests for the gate: each request's
// chunk gaps and per-token intervals, kept once where every chunk carried one token.
func BenchmarkRunOf(b *testing.B) {
	rec := gatetest.Record(1, gatetest.Spec{Requests: 500})
	b.ReportAllocs()
	for b.Loop() {
		runOf(rec)
	}
}

// TestFamilyStatesTheJobsFalseFailRate: gate.json says how many rules were judged by an
// interval and the job's false-fail bound over them; an exact rule, an absolute limit and
// a job with no baseline count none.
func TestFamilyStatesTheJobsFalseFailRate(t *testing.T) {
	limit := 0.05
	f := testConfig([]workload.Rule{
		{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10},
		{Metric: "ttft_p95", Direction: "lower", Tolerance: 0.20},
		{Metric: "goodput", Direction: "higher", Tolerance: 0.10},
		{Metric: "error_rate", Max: &limit},
	})
	base := rec(f, 1, gatetest.Spec{Requests: 300})
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 2, gatetest.Spec{Requests: 300}))
	if res.Family == nil || res.Family.Rules != 3 || res.Family.PerRule != 0.025 || math.Abs(res.Family.Bound-0.075) > 1e-9 {
		t.Fatalf("family %+v, want 3 rules at 2.5%% each, at most 7.5%% for the job", res.Family)
	}
	f.Gate.Confidence = 0.99
	if res := evaluate(t, f, storeOf(t, []*result.Record{base}), rec(f, 2, gatetest.Spec{Requests: 300})); res.Family == nil || math.Abs(res.Family.Bound-0.015) > 1e-9 {
		t.Errorf("at 99%%: family %+v, want at most 1.5%%", res.Family)
	}
	if res := evaluate(t, f, Store{FS: fstest.MapFS{}, Dir: "baselines"}, rec(f, 2, gatetest.Spec{Requests: 300})); res.Family != nil {
		t.Errorf("no baseline: family %+v, want none", res.Family)
	}
}

// TestVerdictsListEveryVerdictInSeverityOrder: Verdicts, the names the Action's
// documentation is checked against, are every verdict severity knows, best first.
func TestVerdictsListEveryVerdictInSeverityOrder(t *testing.T) {
	for i, v := range Verdicts {
		if severity(v) != i {
			t.Errorf("Verdicts[%d] = %s has severity %d", i, v, severity(v))
		}
	}
	if len(Verdicts) != severity(Error)+1 {
		t.Errorf("%d verdicts listed, severity knows %d", len(Verdicts), severity(Error)+1)
	}
}
