package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// paceConfig is the workload: short cold prompts, poisson arrivals, a TTFT p99
// of 1 s, against the tiny profile at half speed (about 53 req/s at most), whose queue
// gauge is scraped once a second (the default): a step of 1 s holds one or two samples
// of it.
const paceConfig = `version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: cold
    seed: 7
    duration: 10s
    arrival: {process: poisson, rate: 1}
    prompt_tokens: {dist: fixed, value: 64}
    output_tokens: {dist: fixed, value: 32}
    timeout: 60s
    max_dispatch_lag: 250ms
    slo: {ttft: {p99: 1s}}
`

// TestSweepStepsMustKeepUp: a sweep of 1 s steps once passed steps the engine could not
// keep up with, their queue growth unjudged ("-": too few samples of the gauge, and the
// client's in-flight count skipped for a saturated step's mean latency), and reported a
// rate near twice what the engine completed (180 req/s against 119.6 completed). Every
// passing step must now have completed at about the rate it was sent (completions over
// the step and its drain, at least 70% of the requests sent a second), and the reported
// rate must be within the engine's demonstrated throughput. A step too short to show
// either is refused (exit 2), naming the shortest step that can.
func TestSweepStepsMustKeepUp(t *testing.T) {
	quiet(t)
	long(t)
	url := startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{Slowdown: 2}})
	cfg := writeConfig(t, paceConfig)
	var (
		sw   *result.Sweep
		code int
	)
	retryQuiet(t, func(try int) (busy string) {
		dir := t.TempDir()
		a, out, errb := testApp(t)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		code = a.run(ctx, []string{"sweep", "-c", cfg, "-w", "cold", "--target", url, "-o", dir,
			"--min-rate", "20", "--max-rate", "400", "--precision", "20%", "--step-duration", "1s"})
		t.Logf("sweep %d: exit %d\n%s%s", try, code, out, errb)
		var err error
		if sw, err = result.ReadSweep(filepath.Join(dir, "cold.sweep.json")); err != nil {
			t.Fatalf("exit %d: %v", code, err)
		}
		return clientLimited(t, code, sw)
	})
	if code != ExitOK || sw.MaxSustainableRPS == nil {
		t.Fatalf("exit %d, max sustainable %v: want a rate", code, sw.MaxSustainableRPS)
	}
	// The highest step whose queue stayed flat (its growth judged, under the limit) and
	// whose completions kept up.
	flat := 0.0
	for _, st := range sw.Steps {
		keptUp := st.ThroughputRPS >= 0.7*float64(st.Requests)
		if st.Verdict == result.StepPass && !keptUp {
			t.Errorf("step %d at %g req/s passed: %d requests sent in 1 s, %.1f req/s completed (queue growth %v): the engine did not keep up", st.Step, st.RateRPS, st.Requests, st.ThroughputRPS, st.QueueGrowth)
		}
		if g := st.QueueGrowth; g != nil && *g < max(result.QueueGrowthMin, result.QueueGrowthFraction*float64(st.Requests)) && keptUp {
			flat = max(flat, st.RateRPS)
		}
	}
	if got := *sw.MaxSustainableRPS; got > flat {
		t.Errorf("max sustainable %g req/s, above the highest step whose queue stayed flat and whose completions kept up (%g req/s)", got, flat)
	}

	// A step of 300 ms: too short to show either, refused with the shortest that can.
	a, out, errb := testApp(t)
	code = a.run(cmdCtx(t), []string{"sweep", "-c", cfg, "-w", "cold", "--target", url, "-o", t.TempDir(),
		"--min-rate", "20", "--step-duration", "300ms"})
	if code != ExitBadInput || !strings.Contains(errb.String(), "too short to show whether the engine kept up") || !strings.Contains(errb.String(), "--step-duration 1s") {
		t.Errorf("a 300 ms step: exit %d, want 2 naming --step-duration 1s\n%s%s", code, out, errb)
	}
}
