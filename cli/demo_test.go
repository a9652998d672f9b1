package cli

import (
	"maps"
	"strings"
	"testing"

	"github.com/slogate/slogate/baselines"
	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// TestDemoPassesOnAnotherHost: the quick start's first run is on a machine the demo's
// baseline was not made on. The demo's own baseline, gated as a run from another host
// (another CPU, core count, kernel and OS), passes: no drift warning, no rule that
// flaps on the demo's own noise.
func TestDemoPassesOnAnotherHost(t *testing.T) {
	t.Parallel()
	f, err := workload.Parse("demo.yaml", demoConfig)
	if err != nil {
		t.Fatal(err)
	}
	store := gate.Store{FS: baselines.FS, Dir: "baselines"}
	b, _, err := store.Lookup("chat-demo", "sim")
	if err != nil || b == nil {
		t.Fatalf("the demo's baseline: %v", err)
	}
	rec := b.DistributionRecord()
	rec.Environment = maps.Clone(rec.Environment)
	for k, v := range map[string]string{envinfo.KeyHostCPU: "Some Other CPU", envinfo.KeyHostCores: "96", envinfo.KeyHostKernel: "9.9.9", envinfo.KeyHostOS: "darwin"} {
		if rec.Environment[k] == v {
			t.Fatalf("%s is already %q", k, v)
		}
		rec.Environment[k] = v
	}
	res, err := gate.Evaluate(gate.Input{Config: f, Runs: []*result.Record{rec}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	w := res.Workloads[0]
	if res.Verdict != gate.Pass {
		t.Errorf("verdict %s, want pass; reason %q", res.Verdict, w.Reason)
	}
	for _, d := range w.Drift {
		if d.Verdict != gate.Pass {
			t.Errorf("drift %s %q → %q: %s", d.Field, d.Baseline, d.Candidate, d.Verdict)
		}
	}
	for _, m := range w.Metrics {
		for _, x := range m.Warnings {
			if strings.Contains(x, "flap") {
				t.Errorf("%s: %s", m.Metric, x)
			}
		}
	}
}
