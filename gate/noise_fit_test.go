package gate

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/gate/stats"
)

// simSpread is a measurement of the simulator's between-run spread, written by
// scripts/sim-noise-fit.sh: one run per fresh `slogate sim --noise gpu` process.
type simSpread struct {
	Command string `json:"command"`
	Level   string `json:"level"`
	Runs    []struct {
		Seed            int     `json:"seed"`
		Goodput         float64 `json:"goodput"`
		ITLP99          float64 `json:"itl_p99"`
		TTFTP95         float64 `json:"ttft_p95"`
		ClientSaturated bool    `json:"client_saturated"`
	} `json:"runs"`
}

// sdLog is the sample standard deviation of ln x.
func sdLog(xs []float64) float64 {
	var mu float64
	for _, x := range xs {
		mu += math.Log(x)
	}
	mu /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		d := math.Log(x) - mu
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// chi2Quantile is the p quantile of χ² with k degrees of freedom (Wilson–Hilferty; within
// 1% of the exact quantile for k ≥ 5).
func chi2Quantile(p float64, k int) float64 {
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	h := 2 / (9 * float64(k))
	return float64(k) * math.Pow(1-h+z*math.Sqrt(h), 3)
}

// spreadFloor is the smallest spread a run-to-run measurement resolves: below it (0.1%)
// a metric is taken as not varying between runs.
const spreadFloor = 0.001

// steadyCeiling bounds the model's spread of a metric the simulator does not move
// between runs. Goodput is one: every request of the simulator's runs meets the SLO by a
// wide margin (TTFT p95 about 90 ms against 500 ms), while the model's TTFT has a tail
// beyond the SLO (0.8% of its requests), whose count moves from run to run. That makes
// the model's A/A goodput noisier than the simulator's, the safe side for a false-fail
// rate, and keeps it under a fifth of the recommended 5% tolerance.
const steadyCeiling = 0.01

// TestNoiseModelSpread: the statistical tests' model of a run (gatetest with the
// simulator's noise draw, at the recommended run size) spreads between runs as the real
// simulator does, started afresh for every run. The simulator's spread is measured by
// scripts/sim-noise-fit.sh (committed in testdata/noise/sim-spread.json, or the file
// SLOGATE_SIM_SPREAD names); with 10 runs it is known to within a factor of about 0.7 to
// 1.8 (its 95% χ² interval), and the model's, from 200 runs, must fall inside that. Runs
// the load generator could not send on time are left out: on a busy machine they measure
// the machine (their ITL p99 is higher, the simulator's own step loop ran late).
func TestNoiseModelSpread(t *testing.T) {
	path := os.Getenv("SLOGATE_SIM_SPREAD")
	if path == "" {
		path = "../testdata/noise/sim-spread.json"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m simSpread
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if m.Level != "gpu" {
		t.Fatalf("%s: level %q; the model is fitted to gpu", path, m.Level)
	}
	measured := map[string][]float64{}
	for _, r := range m.Runs {
		if r.ClientSaturated {
			continue // the machine's noise, not the simulator's
		}
		measured["goodput"] = append(measured["goodput"], r.Goodput)
		measured["itl_p99"] = append(measured["itl_p99"], r.ITLP99)
		measured["ttft_p95"] = append(measured["ttft_p95"], r.TTFTP95)
	}
	n := len(measured["goodput"])
	if n < 5 {
		t.Fatalf("%s: %d runs the load generator kept the schedule of, want ≥ 5 (rerun %s on a quieter machine)", path, n, m.Command)
	}

	const modelRuns = 200
	defs := defsOf(t)
	model := make([][]float64, len(defs))
	for j := range model {
		model[j] = make([]float64, modelRuns)
	}
	inParallel(modelRuns, func(i int) {
		r := noiseRun(uint64(5_000_000+i), recommended.requests, gatetest.Spec{})
		for j, d := range defs {
			model[j][i] = stats.Value(d.build(r)) * d.scale
		}
	})
	df := n - 1
	lo, hi := math.Sqrt(float64(df)/chi2Quantile(0.975, df)), math.Sqrt(float64(df)/chi2Quantile(0.025, df))
	for j, d := range defs {
		s, sm := sdLog(measured[d.name]), sdLog(model[j])
		t.Logf("MEASURED %s: simulator sd of the log %.4f over %d runs (95%% interval [%.4f, %.4f]); model %.4f over %d runs",
			d.name, s, n, s*lo, s*hi, sm, modelRuns)
		switch {
		case s < spreadFloor && sm <= steadyCeiling:
		case s < spreadFloor:
			t.Errorf("%s: the simulator does not vary between runs (sd of the log %.4f) but the model does by %.4f (> %.2f)", d.name, s, sm, steadyCeiling)
		case sm < s*lo || sm > s*hi:
			t.Errorf("%s: the model's between-run spread %.4f is outside the simulator's 95%% interval [%.4f, %.4f] (%.4f over %d runs)",
				d.name, sm, s*lo, s*hi, s, n)
		}
	}
}
