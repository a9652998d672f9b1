package schemas

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// TestProducedNoiseFiles validates what the between-run noise features write: a
// calibrated baseline (its noise block), a gate result whose metrics carry a noise block,
// the records of an A/B job's blocks (their ab block) and the A/B gate result.
func TestProducedNoiseFiles(t *testing.T) {
	schemas := compile(t)
	f := &workload.File{
		Path: "slogate.yaml", Target: workload.Target{API: "chat"}, Model: workload.Model{Name: "m"},
		Workloads: []workload.Workload{{Name: "chat", Seed: 7, Requests: 200}},
		Gate: workload.GateConfig{Resamples: 200, Confidence: 0.95, Seed: 1, Drift: workload.DefaultDrift(),
			Rules: []workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}, {Metric: "goodput", Direction: "higher", Tolerance: 0.05}}},
	}
	h := workload.Hash(f, &f.Workloads[0])
	noisy := func(seed int) *result.Record {
		return gatetest.Record(uint64(seed), gatetest.Spec{Hash: h, Requests: 200, Trial: seed, Noise: sim.NoisePresets["gpu"], NoiseSeed: int64(seed)})
	}
	var runs []*result.Record
	for i := 1; i <= 3; i++ {
		runs = append(runs, noisy(i))
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b, err := gate.FromRecords(runs, now)
	if err != nil {
		t.Fatal(err)
	}
	if b.Noise, err = gate.Calibrate(f, runs, true, now); err != nil {
		t.Fatal(err)
	}
	// As calibrate --min-runs 3 --runs 3 records it.
	if b.Noise.Stop, err = gate.LookCalibration(f, &f.Workloads[0], b.Noise, 3, 3, 3); err != nil || b.Noise.Stop == nil || len(b.Noise.Stop.Rules) != 2 {
		t.Fatalf("the calibration's stop %+v: %v", b.Noise.Stop, err)
	}
	bd, err := gate.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, schemas, "calibrated baseline", bd)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "chat"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, gate.RelPath("chat", gate.HardwareOf(runs[0]))), bd, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := gate.Evaluate(gate.Input{Config: f, Runs: []*result.Record{noisy(9)}, Store: gate.DirStore(dir)})
	if err != nil {
		t.Fatal(err)
	}
	validateGate(t, schemas, "gate result against a calibrated baseline", res)

	layout := gate.Layout(4)
	var blocks []*result.Record
	for i, side := range layout {
		r := noisy(20 + i)
		r.AB = &result.ABBlock{Side: map[rune]string{'A': "baseline", 'B': "candidate"}[side], Block: i + 1, Blocks: len(layout), Layout: layout, Restarted: true}
		data, err := result.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, schemas, "A/B block record", data)
		blocks = append(blocks, r)
	}
	ab, err := gate.EvaluateAB(f, blocks, nil)
	if err != nil {
		t.Fatal(err)
	}
	validateGate(t, schemas, "A/B gate result", ab)
}

// validateGate validates a gate result and checks that its metrics carry the noise block
// the schema is meant to be checked on.
func validateGate(t *testing.T, schemas map[string]*jsonschema.Schema, name string, res *gate.Result) {
	t.Helper()
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, schemas, name, data)
	n := 0
	for _, w := range res.Workloads {
		for _, m := range w.Metrics {
			if m.Noise != nil {
				n++
			}
		}
	}
	if n == 0 {
		t.Errorf("%s: no metric carries a noise block (%s)", name, data)
	}
}
