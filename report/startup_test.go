package report

import (
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// The terminal table and the comment's details show a started engine's start: each step,
// the first token (or why there is none) and the phases of its log.
func TestStartupShown(t *testing.T) {
	for _, c := range []struct {
		name string
		st   result.Startup
		want []string
	}{
		// vLLM: /health, a first token, phases stated by the log.
		{"vllm", result.Startup{StartedAt: time.Unix(0, 0), PortMS: 41000, HealthMS: 41002, ModelMS: 41010, ReadyMS: 41002, FirstTokenMS: 41350,
			Phases: []result.StartPhase{{Name: "weights_load", Seconds: 24.84, Source: "log"}, {Name: "graph_capture", Seconds: 8, Source: "log"}}},
			[]string{"ready after 41.00 s", "port 41.00 s", "/health 41.00 s", "model listed 41.01 s", "first token 41.35 s", "its log: weights_load 24.84 s, graph_capture 8.000 s"}},
		// An engine without /health whose first request failed; a phase timed between lines.
		{"no health, failed first request", result.Startup{PortMS: 100, ModelMS: 900, ReadyMS: 900, FirstTokenError: "http_500",
			Phases: []result.StartPhase{{Name: "model_load", Seconds: 0.7, Source: "seen"}}},
			[]string{"ready after 0.900 s (port 0.100 s, model listed 0.900 s)", "first request failed (http_500)", "model_load 0.700 s (between its lines)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &result.Record{Workload: "w", Mode: "open", Startup: &c.st}
			var b strings.Builder
			RunTable(&b, rec, "")
			var md strings.Builder
			recordDetails(&md, rec, gate.WorkloadResult{})
			// Markdown escapes its punctuation; the text read is the same.
			for _, out := range []string{b.String(), strings.ReplaceAll(md.String(), `\`, "")} {
				for _, w := range c.want {
					if !strings.Contains(out, w) {
						t.Errorf("no %q in:\n%s", w, out)
					}
				}
			}
		})
	}
}
