package cli

import (
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// A run that did not look for capacity is not priced as capacity: its rate is what the
// workload offered. Before, a sub-capacity run at a lower throughput read "+1 GPUs,
// +1825 $/month". With sweeps on both sides, the fleet is priced at max_sustainable_rps.
func TestFleetSectionPricesSweepsOnly(t *testing.T) {
	t.Parallel()
	f := &workload.File{Capacity: &workload.CapacityConfig{PeakRPS: 50, TargetUtilization: 0.6, GPUHourUSD: 2.5}}
	res := &gate.Result{Workloads: []gate.WorkloadResult{{
		Name: "chat", Hardware: "sim",
		BaselineSummaries:  []result.Summary{{Requests: 100, Completed: 100, ThroughputRPS: 9.5, SLOAttainment: 1}},
		CandidateSummaries: []result.Summary{{Requests: 100, Completed: 100, ThroughputRPS: 8.7, SLOAttainment: 1}},
	}}}
	dir := t.TempDir()
	store := gate.DirStore(dir)
	fs := fleetSection(f, res, store, nil)
	md := render(fs)
	if fs.Baseline != nil || fs.Candidate != nil || strings.Contains(md, "$/month") || strings.Contains(md, "GPUs**") {
		t.Errorf("runs without sweeps were priced:\n%s", md)
	}
	for _, want := range []string{"no sweep baseline", "no sweep among the results", "not the capacity its SLO allows"} {
		if !strings.Contains(md, want) {
			t.Errorf("the section does not say what is missing (%q):\n%s", want, md)
		}
	}

	sweep := func(rate float64) *result.Sweep {
		return &result.Sweep{Workload: "chat", Hardware: "sim", MaxSustainableRPS: &rate, Bound: result.BoundSLO,
			Steps: []result.SweepStep{{Step: 1, RateRPS: rate, Verdict: result.StepPass, Requests: 100, Completed: 100, SLOAttainment: 1, E2EMeanms: 900}}}
	}
	base := sweep(20)
	if _, err := gate.WriteSweep(dir, base); err != nil {
		t.Fatal(err)
	}
	fs = fleetSection(f, res, store, []*result.Sweep{sweep(10)})
	md = render(fs)
	if fs.Baseline == nil || fs.Candidate == nil || fs.Delta.GPUs <= 0 || !strings.Contains(md, "$/month") {
		t.Errorf("sweeps at 20 and 10 req/s: want both priced and more GPUs for the candidate:\n%s", md)
	}
}

func render(fs *report.FleetSection) string {
	return report.Markdown(report.Comment{Gate: &gate.Result{}, Fleet: fs})
}
