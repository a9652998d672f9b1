package capacity

import (
	"math"
	"strings"
	"testing"
)

func TestTextbookCases(t *testing.T) {
	// 50 req/s, each request costs 0.2 GPU-s (a GPU sustains 5 req/s within the SLO), GPUs
	// loaded to 60%: 50 × 0.2 / 0.6 = 16.7 → 17 GPUs.
	ws, err := Compute(Traffic{PeakRPS: 50, TargetUtilization: 0.6}, Operating{SustainableRPS: 5, FromSweep: true, MeanE2ES: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ws.GPUSecondsPerRequest != 0.2 || ws.ThroughputGPUs != 17 || ws.TotalGPUs != 17 || ws.Bound != BoundThroughput {
		t.Errorf("got %.3f GPU-s, %d throughput GPUs, %d total, bound %s; want 0.2, 17, 17, throughput", ws.GPUSecondsPerRequest, ws.ThroughputGPUs, ws.TotalGPUs, ws.Bound)
	}
	if len(ws.Warnings) == 0 || !strings.Contains(ws.Warnings[0], "KV-limited concurrency unknown") {
		t.Errorf("warnings %q: want the unknown-KV warning", ws.Warnings)
	}

	// Little's law: 20 req/s at 2 s each → 40 in flight.
	ws, err = Compute(Traffic{PeakRPS: 20}, Operating{SustainableRPS: 100, FromSweep: true, MeanE2ES: 2, KVConcurrency: 64})
	if err != nil {
		t.Fatal(err)
	}
	if ws.InFlightNeeded != 40 {
		t.Errorf("in flight %g, want 40", ws.InFlightNeeded)
	}

	// Sizing for the average at 80% with a 3× peak leaves the fleet 2.4× short.
	if got := PeakShortfall(3, 0.8); math.Abs(got-2.4) > 1e-12 {
		t.Errorf("shortfall %g, want 2.4", got)
	}
}

func TestMemoryBoundWins(t *testing.T) {
	// One GPU sustains 20 req/s, so throughput needs 1 GPU; but at 2 s per request 40
	// requests are in flight and one GPU holds only 10 in its KV cache: 4 GPUs.
	ws, err := Compute(Traffic{PeakRPS: 20}, Operating{SustainableRPS: 20, FromSweep: true, MeanE2ES: 2, KVConcurrency: 10})
	if err != nil {
		t.Fatal(err)
	}
	if ws.ThroughputGPUs != 1 || ws.MemoryGPUs != 4 || ws.BaseGPUs != 4 || ws.Bound != BoundMemory || !ws.FitsKV {
		t.Errorf("throughput %d, memory %d, base %d, bound %s, fits %v; want 1, 4, 4, memory, true", ws.ThroughputGPUs, ws.MemoryGPUs, ws.BaseGPUs, ws.Bound, ws.FitsKV)
	}
}

func TestHeadroomRedundancyAndTensorParallel(t *testing.T) {
	// TP=4 replicas sustaining 8 req/s each: 0.5 GPU-s per request; 40 req/s at 100% → 20
	// GPUs → rounded to whole replicas 20; +30% → 26 → 28 (7 replicas); N+1 → 32.
	ws, err := Compute(Traffic{PeakRPS: 40, TargetUtilization: 1, Headroom: 0.3, Redundancy: 1, GPUHourUSD: 2},
		Operating{SustainableRPS: 8, FromSweep: true, GPUsPerReplica: 4, MeanE2ES: 1, KVConcurrency: 100})
	if err != nil {
		t.Fatal(err)
	}
	if ws.ThroughputGPUs != 20 || ws.BaseGPUs != 20 || ws.WithHeadroom != 28 || ws.TotalGPUs != 32 {
		t.Errorf("throughput %d, base %d, headroom %d, total %d; want 20, 20, 28, 32", ws.ThroughputGPUs, ws.BaseGPUs, ws.WithHeadroom, ws.TotalGPUs)
	}
	if want := 32 * HoursPerMonth * 2; ws.MonthlyUSD != want {
		t.Errorf("monthly %g, want %g", ws.MonthlyUSD, want)
	}
}

func TestRetriesRaiseCostPerSuccess(t *testing.T) {
	base, err := Compute(Traffic{PeakRPS: 10, GPUHourUSD: 3.6}, Operating{SustainableRPS: 2, FromSweep: true})
	if err != nil {
		t.Fatal(err)
	}
	retried, err := Compute(Traffic{PeakRPS: 10, GPUHourUSD: 3.6}, Operating{SustainableRPS: 2, FromSweep: true, Attempts: 120, Completed: 100})
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 GPU-s at $0.001 per GPU-s = $0.0005 per request.
	if math.Abs(base.CostPerCompletedUSD-0.0005) > 1e-12 {
		t.Errorf("cost %g, want 0.0005", base.CostPerCompletedUSD)
	}
	if r := retried.CostPerCompletedUSD / base.CostPerCompletedUSD; math.Abs(r-1.2) > 1e-9 {
		t.Errorf("20%% retries raised cost by %gx, want 1.2x", r)
	}
}

func TestInFlightPerReplica(t *testing.T) {
	// Throughput-bound at 2 GPUs, but 2 s × 20 req/s = 40 in flight over 2 replicas is 20
	// each while the KV cache holds 25: it fits and throughput stays the bound.
	ws, _ := Compute(Traffic{PeakRPS: 20}, Operating{SustainableRPS: 10, FromSweep: true, MeanE2ES: 2, KVConcurrency: 25})
	if !ws.FitsKV || ws.Bound != BoundThroughput || ws.InFlightPerReplica != 20 {
		t.Errorf("fits %v bound %s per replica %g; want true throughput 20", ws.FitsKV, ws.Bound, ws.InFlightPerReplica)
	}
}

func TestPlainRunWarnsAndBadInput(t *testing.T) {
	ws, err := Compute(Traffic{PeakRPS: 1}, Operating{SustainableRPS: 1, KVConcurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws.Warnings) != 1 || !strings.Contains(ws.Warnings[0], "not an SLO-bound sweep") {
		t.Errorf("warnings %q: want the plain-run warning only", ws.Warnings)
	}
	_, err = Compute(Traffic{PeakRPS: 0, TargetUtilization: 1.5}, Operating{SustainableRPS: 0})
	if err == nil {
		t.Fatal("no error for zero peak, zero rate and utilization 1.5")
	}
	for _, want := range []string{"peak rate 0", "sustainable rate 0", "target utilization 1.5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestCompareFleets(t *testing.T) {
	b, _ := Compute(Traffic{PeakRPS: 50, TargetUtilization: 0.6, GPUHourUSD: 2.5}, Operating{SustainableRPS: 5, FromSweep: true})
	c, _ := Compute(Traffic{PeakRPS: 50, TargetUtilization: 0.6, GPUHourUSD: 2.5}, Operating{SustainableRPS: 4, FromSweep: true})
	d := Compare(b, c)
	// 50 × 0.25 / 0.6 = 20.8 → 21 GPUs against 17.
	if d.BaselineGPUs != 17 || d.CandidateGPUs != 21 || d.GPUs != 4 || math.Abs(d.MonthlyUSD-4*730*2.5) > 1e-9 {
		t.Errorf("delta %+v", d)
	}
}
