package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
)

func gp(v float64) *float64 { return &v }

var gateCreated = time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC)

func gateFixtures() map[string]*gate.Result {
	return map[string]*gate.Result{
		// Every kind of row and workload the table can show.
		"table_fail": {
			Verdict: gate.Error, Config: "slogate.yaml", Baselines: "baselines", Resamples: 2000, Confidence: 0.95, Seed: 1,
			Warnings: []string{`run records of workload "old", which slogate.yaml does not define: not judged`},
			Workloads: []gate.WorkloadResult{
				{
					Name: "chat-steady", Hardware: "h100-80gb-hbm3-x1", BaselinePath: "baselines/chat-steady/h100-80gb-hbm3-x1.json",
					BaselineCreated: &gateCreated, Verdict: gate.Fail, Trials: gate.TrialCounts{Baseline: 1, Candidate: 1},
					Metrics: []gate.MetricResult{
						{Metric: "goodput", Unit: gate.UnitRPS, Direction: "higher", Tolerance: 0.05, Method: gate.MethodBootstrap, Baseline: gp(9.71), Candidate: gp(9.69), Ratio: gp(0.9979), Lo: gp(0.978), Hi: gp(1.018), Resolution: 0.0201, Verdict: gate.Pass},
						{Metric: "itl_p99", Unit: gate.UnitMS, Direction: "lower", Tolerance: 0.10, Method: gate.MethodBootstrap, Baseline: gp(45.23), Candidate: gp(58.81), Ratio: gp(1.3002), Lo: gp(1.262), Hi: gp(1.339), Resolution: 0.029, Verdict: gate.Fail},
						{Metric: "ttft_p95", Unit: gate.UnitMS, Direction: "lower", Tolerance: 0.01, Method: gate.MethodBootstrap, Baseline: gp(312.4), Candidate: gp(318.9), Ratio: gp(1.0208), Lo: gp(0.981), Hi: gp(1.062), Resolution: 0.041, Verdict: gate.Warn,
							Warnings: []string{"tolerance 1% is narrower than this comparison's resolution ±4.1%: it will flap on noise"}},
						{Metric: "kv_concurrency", Unit: gate.UnitRequests, Direction: "higher", Tolerance: 0.01, Method: gate.MethodExact, Baseline: gp(80), Candidate: gp(70), Ratio: gp(0.875), Lo: gp(0.875), Hi: gp(0.875), Verdict: gate.Fail},
						{Metric: "error_rate", Unit: gate.UnitFraction, Max: gp(0.005), Method: gate.MethodAbsolute, Baseline: gp(0), Candidate: gp(0.0015), Verdict: gate.Pass},
						{Metric: "max_sustainable_rps", Unit: gate.UnitRPS, Direction: "higher", Tolerance: 0.05, Method: gate.MethodNone, Verdict: gate.Warn,
							Warnings: []string{"no sweep data: max_sustainable_rps comes from a sweep run, and these records are not sweeps"}},
					},
					Drift: []gate.DriftResult{
						{Field: "engine.version", Baseline: "0.6.3", Candidate: "0.6.4", Status: gate.DriftChanged, Policy: gate.PolicyExpected, Verdict: gate.Pass},
						{Field: "gpu.cuda", Baseline: "12.4", Candidate: "12.4", Status: gate.DriftSame, Policy: gate.PolicyWarn, Verdict: gate.Pass},
						{Field: "gpu.driver", Baseline: "550.54.15", Candidate: "555.42.02", Status: gate.DriftChanged, Policy: gate.PolicyWarn, Verdict: gate.Warn},
						{Field: "host.kernel", Candidate: "6.8.0-45", Status: gate.DriftUnknown, Policy: gate.PolicyWarn, Verdict: gate.Pass},
						{Field: "model.revision", Baseline: "0e9e39f2", Candidate: "5206a32e\x1b[2J", Status: gate.DriftChanged, Policy: gate.PolicyFail, Verdict: gate.Fail},
						{Field: "tool.version", Baseline: "v0.1.0", Candidate: "v0.2.0", Status: gate.DriftChanged, Policy: gate.PolicyIgnore, Verdict: gate.Pass},
					},
				},
				{
					Name: "rag", Hardware: "h100-80gb-hbm3-x1", BaselinePath: "baselines/rag/h100-80gb-hbm3-x1.json", Verdict: gate.Warn,
					Reason: "no baseline at baselines/rag/h100-80gb-hbm3-x1.json: create it from these run records with `slogate baseline update -c slogate.yaml -r RESULTS_DIR` on h100-80gb-hbm3-x1 hardware and commit it (gate.missing_baseline: warn)",
					Trials: gate.TrialCounts{Candidate: 1},
					Metrics: []gate.MetricResult{
						{Metric: "error_rate", Unit: gate.UnitFraction, Max: gp(0.005), Method: gate.MethodAbsolute, Candidate: gp(0), Verdict: gate.Pass},
					},
				},
				{
					Name: "agent", Hardware: "h100-80gb-hbm3-x1", BaselinePath: "baselines/agent/h100-80gb-hbm3-x1.json", BaselineCreated: &gateCreated,
					Verdict: gate.Incomparable, Trials: gate.TrialCounts{Baseline: 1, Candidate: 1},
					Reason: "workload changed: baseline hash sha256:1111, run hash sha256:2222; refresh the baseline with `slogate baseline update`",
					Metrics: []gate.MetricResult{
						{Metric: "tpot_p95", Unit: gate.UnitMS, Direction: "lower", Tolerance: 0.1, Max: gp(50), Method: gate.MethodAbsolute, Candidate: gp(31.5), Verdict: gate.Pass},
					},
				},
				{
					Name: "batch", Hardware: "h100-80gb-hbm3-x1", BaselinePath: "baselines/batch/h100-80gb-hbm3-x1.json", Verdict: gate.Error,
					Reason: "the gate refuses to judge this run: the load generator was saturated (dispatch lag p99 4.200 ms > 1 ms): the run measured the client, not the engine; rerun on a less loaded machine or shard the run",
					Trials: gate.TrialCounts{Candidate: 1},
				},
			},
		},
		// Repeated trials, compared by their spread.
		"table_trials": {
			Verdict: gate.Improved, Config: "slogate.yaml", Resamples: 2000, Confidence: 0.9, Seed: 1,
			Workloads: []gate.WorkloadResult{{
				Name: "chat", Hardware: "sim", BaselinePath: "baselines/chat/sim.json", BaselineCreated: &gateCreated,
				Verdict: gate.Improved, Trials: gate.TrialCounts{Baseline: 5, Candidate: 5},
				Metrics: []gate.MetricResult{
					{Metric: "itl_p99", Unit: gate.UnitMS, Direction: "lower", Tolerance: 0.1, Method: gate.MethodTrials, Baseline: gp(41.7), Candidate: gp(29.1), Ratio: gp(0.698), Lo: gp(0.66), Hi: gp(0.74),
						BaselineTrials: []float64{41.2, 41.7, 42.3, 40.9, 41.8}, CandidateTrials: []float64{29.1, 28.8, 29.6, 29.0, 29.4}, Verdict: gate.Improved},
					{Metric: "output_tokens_per_s", Unit: gate.UnitTokensPS, Direction: "higher", Tolerance: 0.05, Method: gate.MethodTrials, Baseline: gp(2450), Candidate: gp(2461), Ratio: gp(1.0045), Lo: gp(0.99), Hi: gp(1.02), Verdict: gate.Pass},
					{Metric: "slo_attainment", Unit: gate.UnitFraction, Min: gp(0.99), Method: gate.MethodAbsolute, Baseline: gp(0.995), Candidate: gp(0.9975), Verdict: gate.Pass},
				},
			}},
		},
	}
}

func TestGateTableGolden(t *testing.T) {
	for name, r := range gateFixtures() {
		var buf bytes.Buffer
		GateTable(&buf, r)
		checkGolden(t, filepath.Join("..", "testdata", "gate", name+".golden"), buf.Bytes())
	}
}

func TestAuditTableGolden(t *testing.T) {
	env := map[string]string{
		"engine.name": "vllm", "engine.version": "0.6.3", "model.id": "meta-llama/Llama-3.1-8B-Instruct", "model.revision": "0e9e39f2",
		"gpu.name": "NVIDIA H100 80GB HBM3", "gpu.count": "1", "gpu.driver": "550.54.15", "gpu.cuda": "12.4", "tool.version": "v0.1.0",
	}
	a := &gate.Audit{
		Reference: "this machine", Hardware: "h100-80gb-hbm3-x1", MaxAge: 30 * 24 * time.Hour, Now: gateCreated.Add(40 * 24 * time.Hour),
		Verdict: gate.Fail, Compared: 2, Missing: []string{"batch"},
		Entries: []gate.AuditEntry{
			{
				Workload: "chat", Hardware: "h100-80gb-hbm3-x1", Path: "baselines/chat/h100-80gb-hbm3-x1.json", Created: gateCreated,
				Age: 40 * 24 * time.Hour, TooOld: true, ToolVersion: "v0.1.0", Environment: env, Compared: true, Verdict: gate.Fail,
				Drift: []gate.DriftResult{
					{Field: "engine.name", Baseline: "vllm", Status: gate.DriftUnknown, Policy: gate.PolicyFail, Verdict: gate.Pass},
					{Field: "gpu.driver", Baseline: "550.54.15", Candidate: "555.42.02", Status: gate.DriftChanged, Policy: gate.PolicyWarn, Verdict: gate.Warn},
				},
			},
			{
				Workload: "chat", Hardware: "sim", Path: "baselines/chat/sim.json", Created: gateCreated.Add(39 * 24 * time.Hour),
				Age: 20 * time.Hour, ToolVersion: "dev", Environment: map[string]string{"engine.name": "sim"}, Stale: true, Verdict: gate.Warn,
			},
			{
				Workload: "rag", Hardware: "h100-80gb-hbm3-x1", Path: "baselines/rag/h100-80gb-hbm3-x1.json", Created: gateCreated.Add(35 * 24 * time.Hour),
				Age: 5 * 24 * time.Hour, ToolVersion: "v0.1.0", Environment: env, Compared: true, Verdict: gate.Pass,
				Drift: []gate.DriftResult{{Field: "gpu.driver", Baseline: "550.54.15", Candidate: "550.54.15", Status: gate.DriftSame, Policy: gate.PolicyWarn, Verdict: gate.Pass}},
			},
		},
	}
	var buf bytes.Buffer
	AuditTable(&buf, a)
	checkGolden(t, filepath.Join("..", "testdata", "gate", "audit.golden"), buf.Bytes())
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update and review the diff); got:\n%s", path, got)
	}
}
