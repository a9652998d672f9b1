package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/sim"
)

const itlTokenConfig = `version: 1
target: {api: completions, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: chat
    seed: 3
    requests: 60
    warmup: {requests: 2}
    arrival: {process: poisson, rate: 8}
    prompt_tokens: {dist: fixed, value: 16}
    output_tokens: {dist: fixed, value: 32}
    timeout: 30s
    max_dispatch_lag: 30s
gate:
  baselines: baselines
  drift: {tool.version: ignore}
  rules:
    itl_p90: {direction: lower, tolerance: 30%}
    itl_token_p90: {direction: lower, tolerance: 30%}
`

// TestITLTokenEndToEnd: the engine starts streaming 4 tokens a chunk (as speculative
// decoding or chunked streaming sends them), each token as fast as before. The gap
// between chunks, what a reader sees stall, grows about 4 times and itl_p90 fails;
// each token's interval (a chunk of k tokens counts k times as its gap / k) is
// unchanged and itl_token_p90 does not fail. Run, baseline, run, gate against the
// simulator, as a user would.
func TestITLTokenEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	cfg := writeConfig(t, itlTokenConfig)
	// Steps of about 25 ms (the tiny profile's 2.5 ms, 10 times): a loaded host's stalls
	// of a few milliseconds stay small beside each token's interval.
	const slow = 10
	dir := filepath.Dir(cfg)
	run := func(args ...string) (int, string) {
		t.Helper()
		a, out, errb := testApp(t)
		code := a.run(cmdCtx(t), args)
		return code, out.String() + errb.String()
	}
	base, cand := filepath.Join(dir, "base"), filepath.Join(dir, "cand")
	if code, log := run("run", "-c", cfg, "--target", startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{Slowdown: slow}}), "-o", base); code != ExitOK {
		t.Fatalf("baseline run: exit %d\n%s", code, log)
	}
	if code, log := run("baseline", "update", "-c", cfg, "-r", base); code != ExitOK {
		t.Fatalf("baseline update: exit %d\n%s", code, log)
	}
	if code, log := run("run", "-c", cfg, "--target", startSim(t, sim.Options{Seed: 1, TokensPerChunk: 4, Faults: sim.Faults{Slowdown: slow}}), "-o", cand); code != ExitOK {
		t.Fatalf("candidate run: exit %d\n%s", code, log)
	}
	code, log := run("gate", "-c", cfg, "-r", cand, "--json", filepath.Join(cand, "gate.json"))
	w := abGateJSON(t, cand, code, bytes.NewBufferString(log), new(bytes.Buffer)).Workloads[0]
	chunk, tok := metricNamed(w, "itl_p90"), metricNamed(w, "itl_token_p90")
	if chunk == nil || tok == nil {
		t.Fatalf("exit %d: no itl_p90 or itl_token_p90 rule in %+v\n%s", code, w.Metrics, log)
	}
	t.Logf("exit %d; itl_p90 %s at %v; itl_token_p90 %s at %v\n%s", code, chunk.Verdict, ratioOf(*chunk), tok.Verdict, ratioOf(*tok), log)
	// Ideally ×4; but the baseline's one-token chunks pay the loaded machine's stalls
	// per token: under the race suite its ITL p90 read 61 ms for about 25 ms steps, and
	// the chunk gaps' ratio ×1.93 (itl_token ×0.48). The fail is what the rule must say.
	if chunk.Verdict != gate.Fail {
		t.Errorf("itl_p90: %s at %v, want a fail (about ×4)", chunk.Verdict, ratioOf(*chunk))
	}
	// Each chunk costs the client and the server some time of its own, which one-token
	// chunks pay per token: on a loaded machine (the race suite) the baseline's
	// per-token intervals stretched and itl_token read ×0.67 against the chunk gaps'
	// ×2.66. So the test asks relations: the per-token rule does not fail or worsen, and
	// it moves at least 2.5 times less than the chunk gaps (ideally 4).
	if tok.Verdict == gate.Fail || tok.Ratio == nil || ratioOf(*tok) > 1.3 || ratioOf(*chunk) < 2.5*ratioOf(*tok) {
		t.Errorf("itl_token_p90: %s at %v against itl_p90's %v: want no fail, at most ×1.3, and a ratio at least 2.5 times smaller", tok.Verdict, ratioOf(*tok), ratioOf(*chunk))
	}
	if code != ExitGateFailed {
		t.Errorf("gate exit %d, want 1 (itl_p90 failed)", code)
	}
}

func ratioOf(m gate.MetricResult) float64 {
	if m.Ratio == nil {
		return 0
	}
	return *m.Ratio
}
