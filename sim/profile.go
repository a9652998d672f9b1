package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Profile is the shape of a simulated engine: its KV cache, its batch limits and its
// step-time model. The figures of the named profiles, and how they were chosen, are in
// docs/sim.md.
type Profile struct {
	Name        string
	Model       string // served model id
	MaxModelLen int    // prompt + output tokens; clamped to the KV capacity by New

	BlockSize           int // tokens per KV block
	NumBlocks           int // KV blocks on the device
	MaxNumSeqs          int // running sequences at most
	MaxNumBatchedTokens int // tokens scheduled in one step at most (decode + prefill)

	// Step time = StepBase + StepPerDecodeSeq × decoding sequences +
	// StepPerPrefillToken × prefill tokens, times the slowdown, times (1 ± Jitter).
	StepBase            time.Duration
	StepPerDecodeSeq    time.Duration
	StepPerPrefillToken time.Duration
	Jitter              float64 // half-width of the uniform relative jitter, e.g. 0.02
}

var profiles = map[string]Profile{
	"tiny": {
		Name:                "tiny",
		Model:               "sim-tiny",
		MaxModelLen:         1024,
		BlockSize:           16,
		NumBlocks:           64,
		MaxNumSeqs:          16,
		MaxNumBatchedTokens: 512,
		StepBase:            2 * time.Millisecond,
		StepPerDecodeSeq:    100 * time.Microsecond,
		StepPerPrefillToken: 5 * time.Microsecond,
		Jitter:              0.02,
	},
	// Llama-3.1-8B-Instruct, bf16, one H100 80GB at gpu_memory_utilization 0.9.
	// KV: 0.9 × 80 GB − 16 GB weights ≈ 56 GB; 131,072 B per token ⇒ ≈ 427k tokens ⇒
	// 26,700 blocks of 16. Base step ≈ reading 16 GB of weights at 3.35 TB/s (4.8 ms) plus
	// launch overhead; per decoding sequence ≈ reading ~1k tokens of KV (128 MB); per
	// prefill token ≈ 16 GFLOP at ~640 TFLOP/s effective (about 65% of bf16 dense peak).
	"llama-8b-h100": {
		Name:                "llama-8b-h100",
		Model:               "meta-llama/Llama-3.1-8B-Instruct",
		MaxModelLen:         8192,
		BlockSize:           16,
		NumBlocks:           26700,
		MaxNumSeqs:          256,
		MaxNumBatchedTokens: 8192,
		StepBase:            6 * time.Millisecond,
		StepPerDecodeSeq:    40 * time.Microsecond,
		StepPerPrefillToken: 25 * time.Microsecond,
		Jitter:              0.02,
	},
}

// Profiles returns the names of the built-in profiles, sorted.
func Profiles() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupProfile returns the named built-in profile.
func LookupProfile(name string) (Profile, error) {
	p, ok := profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q: expected one of %s", name, quoteList(Profiles()))
	}
	return p, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Validate reports every inconsistency of p at once.
func (p Profile) Validate() error {
	var errs []string
	if p.Model == "" {
		errs = append(errs, "model is empty")
	}
	if p.BlockSize < 1 {
		errs = append(errs, fmt.Sprintf("block size %d < 1", p.BlockSize))
	}
	if p.NumBlocks < 1 {
		errs = append(errs, fmt.Sprintf("num blocks %d < 1", p.NumBlocks))
	}
	if p.MaxNumSeqs < 1 {
		errs = append(errs, fmt.Sprintf("max_num_seqs %d < 1", p.MaxNumSeqs))
	}
	// Every running sequence must be able to decode in every step, or a full batch
	// would starve its own tail.
	if p.MaxNumBatchedTokens < p.MaxNumSeqs {
		errs = append(errs, fmt.Sprintf("max_num_batched_tokens %d < max_num_seqs %d", p.MaxNumBatchedTokens, p.MaxNumSeqs))
	}
	if p.MaxModelLen < 2 {
		errs = append(errs, fmt.Sprintf("max_model_len %d < 2", p.MaxModelLen))
	}
	if p.StepBase <= 0 {
		errs = append(errs, fmt.Sprintf("step base %v <= 0", p.StepBase))
	}
	if p.StepPerDecodeSeq < 0 || p.StepPerPrefillToken < 0 {
		errs = append(errs, "negative per-sequence or per-token step time")
	}
	if p.Jitter < 0 || p.Jitter >= 1 {
		errs = append(errs, fmt.Sprintf("jitter %v outside [0, 1)", p.Jitter))
	}
	if len(errs) > 0 {
		return fmt.Errorf("profile %q: %s", p.Name, strings.Join(errs, "; "))
	}
	return nil
}

// StepTime is the modelled duration of one step without slowdown or jitter.
func (p Profile) StepTime(decodeSeqs, prefillTokens int) time.Duration {
	return p.StepBase + time.Duration(decodeSeqs)*p.StepPerDecodeSeq + time.Duration(prefillTokens)*p.StepPerPrefillToken
}

// BlocksFor is the number of KV blocks that hold n tokens.
func (p Profile) BlocksFor(n int) int { return (n + p.BlockSize - 1) / p.BlockSize }

// Capacity is the analytical steady state of p for requests of fixed prompt and output
// lengths that all run to their end (ignore_eos), as docs/sim.md derives it.
type Capacity struct {
	KVConcurrency int           // ⌊blocks / blocks per request at full length⌋
	Concurrency   int           // min(KVConcurrency, MaxNumSeqs)
	DecodeStep    time.Duration // step time with Concurrency sequences decoding
	TokensPerSec  float64       // output tokens/s at saturation
	RequestsPerS  float64       // requests/s at saturation
}

// CapacityFor computes the analytical saturation capacity of p for one request shape.
// With C sequences running, each step decodes C tokens and the prompts of the
// requests that replace finished ones cost per-prefill-token time on top; one second
// holds S steps and X requests' prefills: 1 = S·step(C) + X·P·StepPerPrefillToken,
// with X·O = C·S, so X = C / (O·step(C) + C·P·StepPerPrefillToken).
func (p Profile) CapacityFor(promptTokens, outputTokens int) Capacity {
	per := p.BlocksFor(promptTokens + outputTokens)
	kv := p.NumBlocks / max(per, 1)
	c := min(kv, p.MaxNumSeqs)
	step := p.StepTime(c, 0)
	out := Capacity{KVConcurrency: kv, Concurrency: c, DecodeStep: step}
	if c == 0 || outputTokens < 1 {
		return out
	}
	perReq := float64(outputTokens)*step.Seconds() + float64(c*promptTokens)*p.StepPerPrefillToken.Seconds()
	out.RequestsPerS = float64(c) / perReq
	out.TokensPerSec = out.RequestsPerS * float64(outputTokens)
	return out
}
