package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
)

// verdictComment is a one-workload gate result with the given verdict, as the gate would
// give it, and the meta ci writes: the commits, the baseline's last change, the links.
func verdictComment(v gate.Verdict) Comment {
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	drift := []gate.DriftResult{
		{Field: "engine.name", Baseline: "vllm", Candidate: "vllm", Status: gate.DriftSame, Policy: gate.PolicyFail, Verdict: gate.Pass},
		{Field: "engine.version", Baseline: "0.9.0", Candidate: "0.9.1", Status: gate.DriftChanged, Policy: gate.PolicyExpected, Verdict: gate.Pass},
		{Field: "model.id", Baseline: "meta-llama/Llama-3.1-8B-Instruct", Candidate: "meta-llama/Llama-3.1-8B-Instruct", Status: gate.DriftSame, Policy: gate.PolicyFail, Verdict: gate.Pass},
	}
	goodput := gate.MetricResult{Metric: "goodput", Unit: "req/s", Direction: "higher", Tolerance: 0.05, Method: gate.MethodBootstrap, Baseline: fp(7.9), Candidate: fp(7.85), Ratio: fp(0.994), Lo: fp(0.97), Hi: fp(1.02), Resolution: 0.02, Verdict: gate.Pass}
	itl := gate.MetricResult{Metric: "itl_p99", Unit: "ms", Direction: "lower", Tolerance: 0.15, Method: gate.MethodBootstrap, Baseline: fp(58), Candidate: fp(59), Ratio: fp(1.017), Lo: fp(0.95), Hi: fp(1.09), Resolution: 0.06, Verdict: gate.Pass}
	kv := gate.MetricResult{Metric: "kv_concurrency", Unit: "requests", Direction: "higher", Tolerance: 0.01, Method: gate.MethodExact, Baseline: fp(120), Candidate: fp(120), Ratio: fp(1), Lo: fp(1), Hi: fp(1), Verdict: gate.Pass}
	w := gate.WorkloadResult{Name: "chat-demo", Hardware: "sim", WorkloadHash: "sha256:aaaa", BaselineHash: "sha256:aaaa",
		BaselinePath: "baselines/chat-demo/sim.json", BaselineCreated: &created, HistoryPath: "baselines/chat-demo/sim.history.jsonl",
		Verdict: v, Drift: drift, Trials: gate.TrialCounts{Baseline: 1, Candidate: 1}}
	switch v {
	case gate.Improved:
		goodput.Candidate, goodput.Ratio, goodput.Lo, goodput.Hi, goodput.Verdict = fp(9.1), fp(1.15), fp(1.09), fp(1.21), gate.Improved
	case gate.Warn:
		itl.Candidate, itl.Ratio, itl.Lo, itl.Hi, itl.Verdict = fp(68), fp(1.17), fp(1.08), fp(1.26), gate.Warn
	case gate.Fail:
		itl.Candidate, itl.Ratio, itl.Lo, itl.Hi, itl.Verdict = fp(77), fp(1.33), fp(1.24), fp(1.41), gate.Fail
		kv.Candidate, kv.Ratio, kv.Lo, kv.Hi, kv.Verdict = fp(90), fp(0.75), fp(0.75), fp(0.75), gate.Fail
	case gate.Incomparable:
		w.BaselineHash = "sha256:bbbb"
		w.Reason = "workload changed: baseline hash sha256:bbbb, run hash sha256:aaaa; refresh the baseline with `slogate baseline update`"
		goodput, itl, kv = gate.MetricResult{}, gate.MetricResult{}, gate.MetricResult{}
	case gate.NoBaseline:
		w.BaselineHash, w.BaselineCreated, w.HistoryPath, w.Drift, w.Trials.Baseline = "", nil, "", nil, 0
		w.Reason = "no baseline at baselines/chat-demo/sim.json (is gate.baselines right?): create it from these run records with `slogate baseline update -c slogate.yaml -r RESULTS_DIR` on sim hardware and commit it; the gate fails until it exists; set gate.missing_baseline: allow while bootstrapping"
		goodput, itl, kv = gate.MetricResult{}, gate.MetricResult{}, gate.MetricResult{}
	case gate.Error:
		w.Reason = "the gate refuses to judge this run: the load generator was saturated (dispatch lag p99 14.991 ms > 5 ms): the run measured the client, not the engine; rerun on a less loaded machine or shard the run"
		goodput, itl, kv = gate.MetricResult{}, gate.MetricResult{}, gate.MetricResult{}
	}
	for _, m := range []gate.MetricResult{goodput, itl, kv} {
		if m.Metric != "" {
			w.Metrics = append(w.Metrics, m)
		}
	}
	g := &gate.Result{Schema: gate.ResultSchema, Verdict: v, Config: "slogate.yaml", Baselines: "baselines", Resamples: 2000, Confidence: 0.95, Seed: 1, Workloads: []gate.WorkloadResult{w}}
	gen := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	meta := &Meta{Schema: MetaSchema, Generated: gen, Marker: "<!-- slogate:sticky:slogate.yaml -->", Config: "slogate.yaml",
		RepoURL: "https://github.com/acme/serving", RunURL: "https://github.com/acme/serving/actions/runs/42",
		HeadSHA: "0123456789abcdef0123456789abcdef01234567", BaseSHA: "fedcba9876543210fedcba9876543210fedcba98",
		Baselines: []BaselineOrigin{{Path: "baselines/chat-demo/sim.json", Commit: "feedc0ffee0012345678feedc0ffee0012345678", Date: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}}}
	return Comment{Marker: meta.Marker, Gate: g, Meta: meta, RunURL: meta.RunURL, Generated: gen}
}

// TestCommentGoldenPerVerdict: the comment for every verdict says what was compared and
// what to do next.
func TestCommentGoldenPerVerdict(t *testing.T) {
	for _, c := range []struct {
		v    gate.Verdict
		want []string // what the reader must be told
	}{
		{gate.Pass, []string{"Compared head [`0123456789ab`]", "last changed in [`feedc0ffee00`]", "9 days ago", "Hardware key: <code>sim</code>", "Engine: baseline <code>vllm 0.9.0</code>, candidate <code>vllm 0.9.1</code>"}},
		{gate.Improved, []string{"**Next:** the whole interval is better", "slogate baseline update -c slogate.yaml -r slogate-out", "mode: baseline"}},
		{gate.Warn, []string{"pass with warnings"}},
		{gate.Fail, []string{"**What regressed:**", "`itl_p99` 58 ms → 77 ms: +33.0%, interval [+24.0%, +41.0%], beyond the tolerance +15%", "`kv_concurrency` 120 requests → 90 requests: -25.0% (exact), beyond the tolerance −1%"}},
		{gate.Incomparable, []string{"**What changed:** the definition of workload", "`git diff feedc0ffee00 -- slogate.yaml`"}},
		{gate.NoBaseline, []string{"**no baseline**", "**Next:** create the baseline", "check `gate.baselines`", "(not found)"}},
		{gate.Error, []string{"**Not judged:**", "load generator was saturated"}},
	} {
		t.Run(string(c.v), func(t *testing.T) {
			got := Markdown(verdictComment(c.v))
			checkGolden(t, filepath.Join("testdata", "comment", string(c.v)+".golden.md"), []byte(got))
			for _, s := range c.want {
				if !strings.Contains(got, s) {
					t.Errorf("%s comment lacks %q", c.v, s)
				}
			}
			for _, s := range []string{"[HTML report](https://github.com/acme/serving/actions/runs/42#artifacts)", "[workflow run](https://github.com/acme/serving/actions/runs/42)"} {
				if !strings.Contains(got, s) {
					t.Errorf("%s comment lacks the link %q", c.v, s)
				}
			}
		})
	}
}

// TestCommentStatesTheFamilyRate: the footer says each rule's false-fail rate at its edge
// and the job's bound over its rules.
func TestCommentStatesTheFamilyRate(t *testing.T) {
	c := verdictComment(gate.Pass)
	c.Gate.Family = &gate.Family{Rules: 2, PerRule: 0.025, Bound: 0.05}
	want := "Each of the 2 rules judged by an interval fails an engine at its tolerance's edge at most 2.5% of the time; this job, failing when any does, at most 5%."
	if got := Markdown(c); !strings.Contains(got, want) {
		t.Errorf("the comment does not say %q:\n%s", want, got)
	}
}
