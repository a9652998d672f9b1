package measure

import (
	"fmt"
	"math"
	"sort"

	"github.com/slogate/slogate/capacity"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// KVConcurrency fills summary.kv_concurrency: capacity from the engine where it reports
// one, else derived from GPU memory and KV bytes per token; per-request tokens are the p95
// of prompt + output tokens of this run's completed requests, in whole blocks.
func KVConcurrency(rec *result.Record, f *workload.File, t *Target) {
	p95 := p95RequestTokens(rec)
	if p95 == 0 {
		return
	}
	capTok, block, source := t.ID.KVCapacityTokens, t.ID.KVBlockSize, t.ID.KVSource
	if capTok == 0 {
		var err error
		capTok, source, err = derivedKVCapacity(f, t)
		if err != nil {
			rec.Notes = append(rec.Notes, "KV-limited concurrency not computed: "+err.Error())
			return
		}
		block = f.Model.BlockSize
	}
	rec.Summary.KVConcurrency = kvFor(p95, capTok, block, t.ID.Slots, source)
}

// slotsCap is the suffix of a KV source whose value the engine's fixed slots capped.
const slotsCap = "; capped at the engine's "

// kvFromRequests is KV-limited concurrency for rec's completed requests against a
// capacity of capTok tokens in blocks of block tokens, capped at slots (0: none); nil
// when no request completed.
func kvFromRequests(rec *result.Record, capTok int64, block, slots int, source string) *result.KVConcurrency {
	p95 := p95RequestTokens(rec)
	if p95 == 0 {
		return nil
	}
	return kvFor(p95, capTok, block, slots, source)
}

// kvFor is KV-limited concurrency for requests of p95 tokens (prompt + output).
func kvFor(p95 float64, capTok int64, block, slots int, source string) *result.KVConcurrency {
	if block <= 0 {
		block = 16
	}
	k := capacity.KVLimitedConcurrency(capTok, p95, block, source)
	k.BlockSize, k.Slots = block, slots
	if slots > 0 && k.Value > slots {
		// Fixed slots: each sequence owns capacity/slots tokens, and no more than slots
		// run at once however small the requests are.
		k.Value = slots
		k.Source += fmt.Sprintf("%s%d slots", slotsCap, slots)
	}
	return &k
}

// p95RequestTokens is the p95 of prompt + output tokens over rec's completed requests
// (nearest rank); 0 when none completed.
func p95RequestTokens(rec *result.Record) float64 {
	var sizes []float64
	for _, r := range rec.Requests {
		if r.OK() {
			sizes = append(sizes, float64(r.PromptTokens+r.OutputTokens))
		}
	}
	if len(sizes) == 0 {
		return 0
	}
	sort.Float64s(sizes)
	return sizes[min(max(int(math.Ceil(0.95*float64(len(sizes))))-1, 0), len(sizes)-1)]
}

// derivedKVCapacity is (GPU memory × utilization − weights) / KV bytes per token.
func derivedKVCapacity(f *workload.File, t *Target) (int64, string, error) {
	kvb := f.Model.KVBytesPerToken
	how := "model.kv_bytes_per_token"
	if kvb == 0 && f.Model.Architecture != nil {
		a := f.Model.Architecture
		var err error
		kvb, err = capacity.KVBytesPerToken(capacity.Arch{Layers: a.Layers, KVHeads: a.KVHeads, HeadDim: a.HeadDim, DTypeBytes: a.DTypeBytes, TensorParallel: a.TensorParallel, MLA: a.MLA})
		if err != nil {
			return 0, "", err
		}
		how = "model.architecture"
	}
	if kvb == 0 {
		return 0, "", fmt.Errorf("the engine (%s) reports no KV capacity; set model.kv_bytes_per_token or model.architecture, and model.weights_bytes", t.ID.Engine)
	}
	if t.Env == nil || !t.Env.GPU.Present || len(t.Env.GPU.Devices) == 0 {
		return 0, "", fmt.Errorf("the engine reports no KV capacity and there is no GPU to derive it from")
	}
	if m := t.Env.GPU.Devices[0].MemoryMiB; m <= 0 || m > 1<<40 {
		return 0, "", fmt.Errorf("GPU memory %d MiB is out of range (1 MiB to 2^40 MiB)", m)
	}
	mem := t.Env.GPU.Devices[0].MemoryMiB << 20
	util := f.Model.GPUMemoryUtilization
	c, err := capacity.KVCapacityFromMemory(mem, util, f.Model.WeightsBytes, kvb)
	if err != nil {
		return 0, "", err
	}
	return c, fmt.Sprintf("derived: (%d MiB × %g − %d B weights) / %d B per token (%s)", t.Env.GPU.Devices[0].MemoryMiB, util, f.Model.WeightsBytes, kvb, how), nil
}

// LittleLaw checks the mean number of requests in flight while arrivals lasted (from
// the first to the last scheduled time, integrated exactly over the requests' [sched,
// end) intervals) against the arrival rate × the mean time in the system. Errors count:
// they were in flight. A mismatch means the run never reached a steady state (the engine
// fell further behind as the run went on) or requests went unaccounted.
func LittleLaw(rec *result.Record) *result.LittleLaw {
	n := len(rec.Requests)
	if n < 10 {
		return nil
	}
	first, last := rec.Requests[0].SchedUS, rec.Requests[0].SchedUS
	var sumW float64
	for _, r := range rec.Requests {
		first, last = min(first, r.SchedUS), max(last, r.SchedUS)
		sumW += float64(r.EndUS - r.SchedUS)
	}
	if last <= first {
		return nil
	}
	// ∫ in-flight dt over [first, last] = Σ |[sched, end) ∩ [first, last]|.
	var area float64
	for _, r := range rec.Requests {
		if lo, hi := max(r.SchedUS, first), min(r.EndUS, last); hi > lo {
			area += float64(hi - lo)
		}
	}
	span := float64(last - first)
	l := capacity.CheckLittleLaw(float64(n-1)/(span/1e6), sumW/float64(n)/1e6, area/span)
	if l.Flagged {
		rec.Notes = append(rec.Notes, fmt.Sprintf(result.NoteLittleLaw+"%.1f requests in flight measured, %.1f predicted (%.0f%% off): the run did not reach a steady state, or requests went unaccounted", l.MeasuredInFlight, l.PredictedInFlight, 100*l.Deviation))
	}
	return &l
}
