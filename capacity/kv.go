package capacity

import (
	"fmt"
	"math"

	"github.com/slogate/slogate/result"
)

// Arch holds the architecture fields that fix the KV cache's size per token.
type Arch struct {
	Layers         int
	KVHeads        int
	HeadDim        int
	DTypeBytes     float64 // bytes per element: 2 for bf16/fp16, 1 for fp8
	TensorParallel int     // default 1
	MLA            bool    // multi-head latent attention stores one latent, not K and V
}

// KVBytesPerToken is the KV cache bytes one token takes on one GPU:
// 2 (K and V; 1 for MLA) × layers × KV heads per tensor-parallel rank × head dim × bytes.
// Llama-3.1-8B bf16: 2 × 32 × 8 × 128 × 2 = 131,072 B.
func KVBytesPerToken(a Arch) (int64, error) {
	if a.Layers <= 0 || a.KVHeads <= 0 || a.HeadDim <= 0 || a.DTypeBytes <= 0 {
		return 0, fmt.Errorf("architecture needs layers, kv_heads, head_dim and dtype_bytes > 0 (got %d, %d, %d, %g)", a.Layers, a.KVHeads, a.HeadDim, a.DTypeBytes)
	}
	tp := max(a.TensorParallel, 1)
	// A rank holds at least one KV head: with more ranks than KV heads they are replicated.
	heads := max((a.KVHeads+tp-1)/tp, 1)
	kv := 2.0
	if a.MLA {
		kv = 1
	}
	b := math.Ceil(kv * float64(a.Layers) * float64(heads) * float64(a.HeadDim) * a.DTypeBytes)
	if b >= math.MaxInt64 || math.IsNaN(b) {
		return 0, fmt.Errorf("KV bytes per token out of range: %g × %d layers × %d heads × %d head dim × %g bytes does not fit in 64 bits", kv, a.Layers, heads, a.HeadDim, a.DTypeBytes)
	}
	return int64(b), nil
}

// KVCapacityFromMemory is the KV cache in tokens of one replica derived from one GPU's
// memory: (memory × utilization − weights per GPU) / KV bytes per token per GPU. With
// tensor parallelism every rank holds its share of every token, so one GPU's budget is
// the replica's token capacity.
func KVCapacityFromMemory(gpuMemoryBytes int64, utilization float64, weightsPerGPUBytes int64, kvBytesPerToken int64) (int64, error) {
	if kvBytesPerToken <= 0 {
		return 0, fmt.Errorf("kv_bytes_per_token must be > 0")
	}
	free := float64(gpuMemoryBytes)*utilization - float64(weightsPerGPUBytes)
	if free <= 0 {
		return 0, fmt.Errorf("no memory left for the KV cache: %d B × %g − %d B of weights <= 0", gpuMemoryBytes, utilization, weightsPerGPUBytes)
	}
	if free >= math.MaxInt64 {
		return 0, fmt.Errorf("GPU memory out of range: %d B × %g does not fit in 64 bits", gpuMemoryBytes, utilization)
	}
	return int64(free) / kvBytesPerToken, nil
}

// KVConcurrency is how many requests of this workload fit in the KV cache at once.
type KVConcurrency = result.KVConcurrency

// KVLimitedConcurrency is ⌊capacity / per-request tokens⌋, where per-request tokens are the
// p95 of prompt + output tokens rounded up to whole blocks (a sequence holds whole blocks).
func KVLimitedConcurrency(capacityTokens int64, p95Tokens float64, blockSize int, source string) KVConcurrency {
	bs := max(blockSize, 1)
	p := math.Ceil(p95Tokens)
	if !(p >= 0 && p < 1<<53) || bs > 1<<30 {
		// No real request is that long: a broken input, not a capacity of 0.
		return KVConcurrency{CapacityTokens: capacityTokens, Source: source}
	}
	per := int(p)
	per = (per + bs - 1) / bs * bs
	k := KVConcurrency{CapacityTokens: capacityTokens, PerRequestTokens: per, Source: source}
	if per > 0 {
		k.Value = int(capacityTokens / int64(per))
	}
	return k
}

// LittleLaw is the check of L = λW.
type LittleLaw = result.LittleLaw

// LittleLawTolerance is the deviation above which the check is flagged.
const LittleLawTolerance = 0.10

// CheckLittleLaw fills the check. A mismatch means requests were lost from the account
// (timeouts not counted, a window that cuts requests) or the system was not in steady state.
func CheckLittleLaw(arrivalRPS, meanE2ES, measuredInFlight float64) LittleLaw {
	l := LittleLaw{ArrivalRPS: arrivalRPS, MeanE2ES: meanE2ES, PredictedInFlight: arrivalRPS * meanE2ES, MeasuredInFlight: measuredInFlight}
	if l.PredictedInFlight > 0 {
		l.Deviation = math.Abs(measuredInFlight-l.PredictedInFlight) / l.PredictedInFlight
		l.Flagged = l.Deviation > LittleLawTolerance
	}
	return l
}
