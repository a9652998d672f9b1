package result

import "testing"

func TestPerTokenITL(t *testing.T) {
	base := Request{SchedUS: 0, SendUS: 0, FirstUS: 1000, LastUS: 1900, EndUS: 2000, ITLUS: []int64{400, 200, 300}, Chunks: 4}
	tests := []struct {
		name       string
		tokens     int
		chunk      []int
		noUsage    bool
		wantCount  int64
		wantMeanMS float64
		wantTPC    *TokensPerChunk
	}{
		// Known counts: the gap before a chunk of k tokens counts k times as gap / k.
		{name: "known", tokens: 10, chunk: []int{1, 4, 2, 3}, wantCount: 9, wantMeanMS: (4*100 + 2*100 + 3*100) / 9.0 / 1000, wantTPC: &TokensPerChunk{Mean: 2.5, Known: 1}},
		// Inferred: 12 tokens in 4 chunks is 3 a chunk.
		{name: "inferred", tokens: 12, wantCount: 9, wantMeanMS: 0.1, wantTPC: &TokensPerChunk{Mean: 3, Inferred: 1}},
		// 5 tokens in 4 chunks: a stop token or an empty last chunk, not multi-token chunks.
		{name: "small surplus", tokens: 5, wantCount: 3, wantMeanMS: 0.3},
		{name: "no usage", tokens: 4, noUsage: true, wantCount: 3, wantMeanMS: 0.3},
		{name: "known, all one", tokens: 4, chunk: []int{1, 1, 1, 1}, wantCount: 3, wantMeanMS: 0.3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			r.OutputTokens, r.ChunkTokens, r.NoUsage = tc.tokens, tc.chunk, tc.noUsage
			s := Summarize([]Request{r}, SummaryInput{})
			if s.ITLTokenms.Count != tc.wantCount || abs(s.ITLTokenms.Mean-tc.wantMeanMS) > 1e-9 {
				t.Errorf("per-token ITL count %d mean %v ms, want %d, %v", s.ITLTokenms.Count, s.ITLTokenms.Mean, tc.wantCount, tc.wantMeanMS)
			}
			if s.ITLms.Count != 3 || s.ITLms.Mean != 0.3 {
				t.Errorf("chunk ITL %+v changed", s.ITLms)
			}
			if (s.TokensPerChunk == nil) != (tc.wantTPC == nil) || s.TokensPerChunk != nil && *s.TokensPerChunk != *tc.wantTPC {
				t.Errorf("tokens per chunk %+v, want %+v", s.TokensPerChunk, tc.wantTPC)
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestTPOTIsTheMeanPerTokenInterval: TPOT is (last − first) over the tokens that came
// after the first chunk, the mean of TokenGaps: a first chunk of k tokens arrived at
// first, and (output_tokens − 1) counted k − 1 of them as generated after it (a 4-token
// first chunk of a 12-token reply read 900/11 µs for 900/8).
func TestTPOTIsTheMeanPerTokenInterval(t *testing.T) {
	base := Request{SchedUS: 0, SendUS: 0, FirstUS: 1000, LastUS: 1900, EndUS: 2000, ITLUS: []int64{400, 200, 300}, Chunks: 4}
	for _, tc := range []struct {
		name   string
		tokens int
		chunk  []int
		want   float64
	}{
		{"one a chunk", 4, []int{1, 1, 1, 1}, 900.0 / 3},
		{"known, 4 first", 12, []int{4, 2, 3, 3}, 900.0 / 8},
		{"inferred, 3 a chunk", 12, nil, 900.0 / 9},
		{"a stop token", 5, nil, 900.0 / 4},
	} {
		r := base
		r.OutputTokens, r.ChunkTokens = tc.tokens, tc.chunk
		got, ok := r.TPOTUS()
		if !ok || abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: TPOT %v µs (%v), want %v", tc.name, got, ok, tc.want)
		}
		var sum, n int64
		gaps, _ := TokenGaps(&r)
		for _, g := range gaps {
			sum += g
			n++
		}
		if tc.chunk != nil && abs(float64(sum)/float64(n)-tc.want) > 1 {
			t.Errorf("%s: the per-token intervals' mean %v µs, TPOT %v", tc.name, float64(sum)/float64(n), tc.want)
		}
	}
	// A reply in one chunk has no token after it.
	one := Request{FirstUS: 1000, LastUS: 1000, EndUS: 1100, Chunks: 1, ChunkTokens: []int{5}, OutputTokens: 5}
	if v, ok := one.TPOTUS(); ok {
		t.Errorf("one chunk of 5 tokens: TPOT %v, want none", v)
	}
}
