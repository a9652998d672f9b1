package loadgen

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// longSource asks for 32 forced output tokens per request.
type longSource struct{ fakeSource }

func (s *longSource) Request(i int) workload.Item {
	return workload.Item{Index: i, PromptTokens: 20, OutputTokens: 32, Prompt: fmt.Sprintf("measured prompt number %d", i)}
}

// The simulator sends 4 tokens a chunk: chunk ITL is four token intervals, per-token ITL
// one, whether the client counts each chunk's tokens from a usage in every chunk (the
// server says) or infers them from the usage total (it does not).
func TestPerTokenITLFromMultiTokenChunks(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Options{Seed: 1, TokensPerChunk: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		extra map[string]any
		known bool
	}{
		{name: "inferred from the usage total"},
		{name: "counted from continuous usage", extra: map[string]any{"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}, known: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := engine.NewClient(engine.ClientOptions{BaseURL: srv.URL, ExtraBody: tc.extra})
			cfg := Config{Streamer: c, Source: &longSource{fakeSource{arrivals: constant(20, 20)}}, Epoch: c.Epoch(),
				API: engine.APICompletions, Model: "sim-tiny", IgnoreEOS: true, Timeout: 20 * time.Second}
			out := run(t, cfg)
			for _, q := range out.Measured {
				if q.Error != "" || q.OutputTokens != 32 || q.Chunks != 8 {
					t.Fatalf("request %d: %s (%s), %d tokens in %d chunks, want 32 in 8", q.I, q.Error, q.ErrorDetail, q.OutputTokens, q.Chunks)
				}
				if tc.known && fmt.Sprint(q.ChunkTokens) != "[4 4 4 4 4 4 4 4]" {
					t.Fatalf("request %d: chunk tokens %v", q.I, q.ChunkTokens)
				} else if !tc.known && q.ChunkTokens != nil {
					t.Fatalf("request %d: chunk tokens %v without a usage per chunk", q.I, q.ChunkTokens)
				}
			}
			s := result.Summarize(out.Measured, result.SummaryInput{Window: out.Window})
			tpc := s.TokensPerChunk
			if tpc == nil || tpc.Mean != 4 || (tc.known && tpc.Known != 20) || (!tc.known && tpc.Inferred != 20) {
				t.Fatalf("tokens per chunk %+v", tpc)
			}
			// Each gap counts four times as a quarter of itself.
			if s.ITLTokenms.Count != 4*s.ITLms.Count || s.ITLms.Count != 20*7 {
				t.Errorf("per-token count %d, chunk count %d: want 4 × 140", s.ITLTokenms.Count, s.ITLms.Count)
			}
			if r := s.ITLTokenms.Mean / s.ITLms.Mean; math.Abs(r-0.25) > 0.01 {
				t.Errorf("per-token ITL mean %.3f ms, chunk ITL mean %.3f ms: ratio %.3f, want 1/4", s.ITLTokenms.Mean, s.ITLms.Mean, r)
			}
			// The mean gap is the stream's span over its gaps, which a reader that wakes
			// late and reads chunks together does not shorten (its p50 read 0.029 ms
			// once, under -race on a loaded machine).
			if s.ITLms.Mean < 1 {
				t.Errorf("chunk ITL mean %.3f ms: the simulator's steps should space chunks out", s.ITLms.Mean)
			}
		})
	}
}
