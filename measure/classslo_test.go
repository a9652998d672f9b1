package measure

import (
	"testing"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// A class's own SLO judges that class's requests. Before the record carried class_slo,
// every request was judged against the workload's SLO: the "strict" class below (a TTFT
// limit no engine meets) read 100% attainment, as the lenient class did.
func TestClassSLOJudgesItsClass(t *testing.T) {
	t.Parallel()
	simURL := startSim(t, sim.Options{Seed: 1})
	src := `version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: mix
    seed: 5
    requests: 40
    arrival: {process: poisson, rate: 40}
    prompt_tokens: {dist: uniform, min: 20, max: 40}
    output_tokens: {dist: fixed, value: 4}
    slo: {ttft: {p95: 60s}}
    classes:
      - {name: lenient, weight: 1}
      - {name: strict, weight: 1, slo: {ttft: {p95: 1us}}}
    max_dispatch_lag: 30s
    timeout: 20s
`
	rec := runOnce(t, testRunner(nil), src, simURL)
	want := map[string][]result.SLOTarget{"strict": {{Metric: "ttft", Percentile: 95, LimitMS: 0.001}}}
	if len(rec.ClassSLO) != 1 || len(rec.ClassSLO["strict"]) != 1 || rec.ClassSLO["strict"][0] != want["strict"][0] {
		t.Fatalf("class_slo = %+v, want %+v", rec.ClassSLO, want)
	}
	byClass := map[string]result.ClassStats{}
	for _, c := range rec.Summary.ByClass {
		byClass[c.Class] = c
	}
	l, s := byClass["lenient"], byClass["strict"]
	if l.Requests == 0 || s.Requests == 0 {
		t.Fatalf("both classes must be drawn: %+v", rec.Summary.ByClass)
	}
	if l.SLOAttainment != 1 || s.SLOAttainment != 0 {
		t.Fatalf("attainment lenient %v strict %v, want 1 and 0", l.SLOAttainment, s.SLOAttainment)
	}
	for _, q := range rec.Requests {
		if q.SLOMet != (q.Class == "lenient") {
			t.Fatalf("request %d of class %s: slo_met %v", q.I, q.Class, q.SLOMet)
		}
	}
	wantAtt := float64(l.Requests) / float64(len(rec.Requests))
	if rec.Summary.SLOAttainment != wantAtt {
		t.Fatalf("run attainment %v, want %v (the lenient share)", rec.Summary.SLOAttainment, wantAtt)
	}
	// A merge re-judges the requests: it must use the class's targets too.
	rec.Shard = "1/1"
	m, err := result.Merge(rec)
	if err != nil {
		t.Fatal(err)
	}
	if m.Summary.SLOAttainment != wantAtt {
		t.Fatalf("merged attainment %v, want %v", m.Summary.SLOAttainment, wantAtt)
	}
}
