package sim

import (
	"context"
	"fmt"
	"io"
	"time"
)

// startPhases split a simulated start as a vLLM V1 start splits (its log in
// testdata/engines/startlog/vllm-0.9-v1.log): the weights, the rest of the model load,
// torch.compile, CUDA graph capture, and the remainder of the engine's initialization.
var startPhases = []struct {
	share float64
	line  func(took, load, init float64) string
}{
	{0.30, func(took, _, _ float64) string {
		return fmt.Sprintf("[default_loader.py:272] Loading weights took %.2f seconds", took)
	}},
	{0.05, func(_, load, _ float64) string {
		return fmt.Sprintf("[gpu_model_runner.py:1273] Model loading took 0.0312 GiB and %.6f seconds", load)
	}},
	{0.30, func(took, _, _ float64) string {
		return fmt.Sprintf("[monitor.py:33] torch.compile takes %.2f s in total", took)
	}},
	{0.20, func(took, _, _ float64) string {
		return fmt.Sprintf("[gpu_model_runner.py:1608] Graph capturing finished in %.0f secs, took 0.05 GiB", took)
	}},
	{0.15, func(_, _, init float64) string {
		return fmt.Sprintf("[core.py:162] init engine (profile, create kv cache, warmup model) took %.2f seconds", init)
	}},
}

// startUp sleeps through a start of length d, printing vLLM's line for each phase as it
// ends, and its "Starting vLLM API server" line last. false: ctx ended first.
func startUp(ctx context.Context, d time.Duration, version, addr string, log io.Writer, now func() time.Time) bool {
	if now == nil {
		now = time.Now
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(log, "INFO %s "+format+"\n", append([]any{now().Format("01-02 15:04:05")}, args...)...)
	}
	logf("[api_server.py:1287] vLLM API server version %s", version)
	start := time.Now()
	var load, init float64
	for i, p := range startPhases {
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Duration(p.share * float64(d))):
		}
		took := time.Since(t0).Seconds()
		if i < 2 {
			load = time.Since(start).Seconds()
		} else {
			init += took
		}
		logf("%s", p.line(took, load, init))
	}
	logf("[api_server.py:1349] Starting vLLM API server 0 on http://%s", addr)
	return true
}
