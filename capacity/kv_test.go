package capacity

import "testing"

func TestKVBytesPerToken(t *testing.T) {
	cases := []struct {
		name string
		a    Arch
		want int64
	}{
		// DESIGN §9's figure for Llama-3.1-8B in bf16: 2 × 32 × 8 × 128 × 2.
		{"llama-3.1-8b-bf16", Arch{Layers: 32, KVHeads: 8, HeadDim: 128, DTypeBytes: 2}, 131072},
		// Llama-3.1-70B bf16: 2 × 80 × 8 × 128 × 2.
		{"llama-3.1-70b-bf16", Arch{Layers: 80, KVHeads: 8, HeadDim: 128, DTypeBytes: 2}, 327680},
		// The same at TP=4: each rank holds 2 of the 8 KV heads.
		{"llama-3.1-70b-tp4", Arch{Layers: 80, KVHeads: 8, HeadDim: 128, DTypeBytes: 2, TensorParallel: 4}, 81920},
		// FP8 KV cache halves it.
		{"llama-3.1-8b-fp8", Arch{Layers: 32, KVHeads: 8, HeadDim: 128, DTypeBytes: 1}, 65536},
		// More ranks than KV heads: heads are replicated, at least one per rank.
		{"tp16-over-8-heads", Arch{Layers: 80, KVHeads: 8, HeadDim: 128, DTypeBytes: 2, TensorParallel: 16}, 40960},
		// MLA keeps one latent per token instead of K and V.
		{"mla", Arch{Layers: 61, KVHeads: 1, HeadDim: 576, DTypeBytes: 2, MLA: true}, 70272},
	}
	for _, c := range cases {
		got, err := KVBytesPerToken(c.a)
		if err != nil || got != c.want {
			t.Errorf("%s: got %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := KVBytesPerToken(Arch{Layers: 32}); err == nil {
		t.Error("incomplete architecture accepted")
	}
}

func TestKVLimitedConcurrencyHandComputed(t *testing.T) {
	// Llama-3.1-8B bf16 on one 80 GB GPU at 90% utilization with 16.06 GB of weights:
	// 80 GiB = 85,899,345,920 B; × 0.9 = 77,309,411,328; − 16,060,000,000 = 61,249,411,328;
	// / 131,072 = 467,295.9 → 467,295 tokens.
	capTok, err := KVCapacityFromMemory(85899345920, 0.9, 16060000000, 131072)
	if err != nil || capTok != 467295 {
		t.Fatalf("capacity %d, %v; want 467295", capTok, err)
	}
	// p95 prompt + output = 3,000 + 700 = 3,700 tokens → 232 blocks of 16 = 3,712 tokens;
	// 467,295 / 3,712 = 125.89 → 125 requests.
	k := KVLimitedConcurrency(capTok, 3700, 16, "derived")
	if k.PerRequestTokens != 3712 || k.Value != 125 || k.CapacityTokens != 467295 {
		t.Errorf("got %+v; want 3712 tokens per request, 125 requests", k)
	}

	// Llama-3.1-70B bf16 at TP=4 on 80 GB GPUs: weights 141.1 GB / 4 = 35,275,000,000 B per
	// GPU; 77,309,411,328 − 35,275,000,000 = 42,034,411,328 / 81,920 = 513,115 tokens.
	capTok, err = KVCapacityFromMemory(85899345920, 0.9, 35275000000, 81920)
	if err != nil || capTok != 513115 {
		t.Fatalf("70B capacity %d, %v; want 513115", capTok, err)
	}
	// p95 of 8,000 + 1,000 tokens = 9,000 → 563 blocks = 9,008 → 56 requests.
	if k := KVLimitedConcurrency(capTok, 9000, 16, "derived"); k.Value != 56 || k.PerRequestTokens != 9008 {
		t.Errorf("70B: got %+v; want 56 requests of 9008 tokens", k)
	}

	// Weights larger than the budget: a clear error, not a negative capacity.
	if _, err := KVCapacityFromMemory(85899345920, 0.9, 90000000000, 131072); err == nil {
		t.Error("negative KV budget accepted")
	}
}

func TestLittleLaw(t *testing.T) {
	// 20 req/s at 2 s: 40 predicted; 41 measured is within 10%.
	l := CheckLittleLaw(20, 2, 41)
	if l.PredictedInFlight != 40 || l.Flagged || l.Deviation != 0.025 {
		t.Errorf("%+v", l)
	}
	// 30 measured against 40 predicted: 25% off, flagged.
	if l := CheckLittleLaw(20, 2, 30); !l.Flagged {
		t.Errorf("25%% deviation not flagged: %+v", l)
	}
}
