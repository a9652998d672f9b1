package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/capacity"
	"github.com/slogate/slogate/result"
)

func capGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "capacity", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/ -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update and review the diff); got:\n%s", path, got)
	}
}

func f64p(v float64) *float64 { return &v }

func capSweep() *result.Sweep {
	kv := &result.KVConcurrency{Value: 32, CapacityTokens: 1024, PerRequestTokens: 32}
	return &result.Sweep{
		Workload:            "chat-steady",
		SLO:                 []result.SLOTarget{{Metric: "ttft", Percentile: 99, LimitMS: 300}, {Metric: "itl", Percentile: 99, LimitMS: 200}},
		SLOAttainmentTarget: 0.99,
		Params:              result.SweepParams{MinRPS: 6, MaxRPS: 10000, Factor: 2, Process: "constant", Precision: 0.05, StepDurationS: 4},
		Steps: []result.SweepStep{
			{Step: 1, Phase: "ramp", RateRPS: 6, Verdict: result.StepPass, Requests: 24, Completed: 24, SLOAttainment: 1, GoodputRPS: 5.98, ThroughputRPS: 5.98, TTFTP99ms: 41.2, ITLP99ms: 31.5, QueueGrowth: f64p(0), KVConcurrency: kv},
			{Step: 2, Phase: "ramp", RateRPS: 12, Verdict: result.StepPass, Requests: 48, Completed: 48, SLOAttainment: 1, GoodputRPS: 11.9, ThroughputRPS: 11.9, TTFTP99ms: 55.0, ITLP99ms: 33.0, QueueGrowth: f64p(0.25), KVConcurrency: kv},
			{Step: 3, Phase: "ramp", RateRPS: 24, Verdict: result.StepSaturated, Reason: "the engine's waiting queue grew by 11.5 while arrivals lasted (limit 9.6)", Requests: 96, Completed: 96, SLOAttainment: 0.52, GoodputRPS: 9.1, ThroughputRPS: 17.8, TTFTP99ms: 1180, ITLP99ms: 36.1, QueueGrowth: f64p(11.5)},
			{Step: 4, Phase: "bisect", RateRPS: 18, Verdict: result.StepPass, Requests: 72, Completed: 72, SLOAttainment: 1, GoodputRPS: 17.5, ThroughputRPS: 17.5, TTFTP99ms: 70.3, ITLP99ms: 35.2, QueueGrowth: f64p(0.5), KVConcurrency: kv},
			{Step: 5, Phase: "bisect", RateRPS: 21, Verdict: result.StepFail, Reason: "attainment 97.62% < 99.00%", Requests: 84, Completed: 84, SLOAttainment: 0.9762, GoodputRPS: 19.1, ThroughputRPS: 19.6, TTFTP99ms: 330, ITLP99ms: 35.9},
		},
		MaxSustainableRPS: f64p(18),
		FirstFailingRPS:   f64p(21),
		Bound:             result.BoundSLO,
		Notes:             []string{"stopped after 5 steps"},
	}
}

func TestSweepTableGolden(t *testing.T) {
	var buf bytes.Buffer
	SweepTable(&buf, capSweep(), "out/chat-steady.sweep.json")
	capGolden(t, "sweep.golden", buf.Bytes())
}

func TestSweepTableClientLimited(t *testing.T) {
	s := capSweep()
	s.Steps = s.Steps[:2]
	s.Steps[1].Verdict, s.Steps[1].Reason = result.StepClient, "dispatch lag p99 4.200 ms > 1 ms"
	s.MaxSustainableRPS, s.FirstFailingRPS, s.Bound, s.Notes = nil, nil, result.BoundClient, nil
	s.Params.StepDurationS, s.Params.StepRequests = 0, 200
	var buf bytes.Buffer
	SweepTable(&buf, s, "")
	capGolden(t, "sweep-client.golden", buf.Bytes())
	// No number may be read as a capacity.
	if !strings.Contains(buf.String(), "max sustainable rate: none (bound: client)") {
		t.Errorf("no client bound line:\n%s", &buf)
	}
}

func TestWorksheetGolden(t *testing.T) {
	cases := []struct {
		name string
		tr   capacity.Traffic
		m    capacity.Measured
	}{
		// The textbook case: 50 req/s × 0.2 GPU-s ÷ 0.6 → 17 GPUs, then 30% headroom,
		// N+1 and a price, from a sweep with a known KV-limited concurrency.
		{"worksheet-textbook.golden", capacity.Traffic{PeakRPS: 50, TargetUtilization: 0.6, Headroom: 0.3, Redundancy: 1, GPUHourUSD: 2.5},
			capacity.Measured{Source: "sweep", Attainment: 0.995, AttainmentTarget: 0.99,
				KV:        &result.KVConcurrency{Value: 64, CapacityTokens: 65536, PerRequestTokens: 1024},
				Operating: capacity.Operating{SustainableRPS: 5, FromSweep: true, MeanE2ES: 1, KVConcurrency: 64, Attempts: 1000, Completed: 1000}}},
		// Memory wins over throughput, replicas of 2 GPUs, retries in the cost, from a
		// plain run (the warning) with an unknown KV detail.
		{"worksheet-memory.golden", capacity.Traffic{PeakRPS: 20, TargetUtilization: 1, GPUHourUSD: 3.6},
			capacity.Measured{Source: "run", Attainment: 0.999, AttainmentTarget: 0.99,
				Operating: capacity.Operating{SustainableRPS: 20, MeanE2ES: 2, KVConcurrency: 10, GPUsPerReplica: 2, Attempts: 120, Completed: 100}}},
		// No KV figure and no price: both steps say so.
		{"worksheet-minimal.golden", capacity.Traffic{PeakRPS: 10},
			capacity.Measured{Source: "sweep", Operating: capacity.Operating{SustainableRPS: 3, FromSweep: true, MeanE2ES: 0.5}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws, err := tc.m.Worksheet(tc.tr)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			Worksheet(&buf, ws, tc.m, "chat-steady, sweep out/chat-steady.sweep.json (sim)")
			capGolden(t, tc.name, buf.Bytes())
		})
	}
}

func TestUSD(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{0, "$0"},                     // no cost
		{2.5, "$2.50"},                // a price per hour
		{43800, "$43,800.00"},         // a monthly bill groups thousands
		{0.000138888, "$0.0001389"},   // a cost per request keeps four figures
		{1.234e-9, "$0.000000001234"}, // never an exponent
	}
	for _, tc := range cases {
		if got := capUSD(tc.v); got != tc.want {
			t.Errorf("capUSD(%g) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
