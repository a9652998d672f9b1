// Package gatetest builds synthetic run records shaped like a served chat workload, for
// the tests and benchmarks of the gate and of the commands around it. Everything is
// seeded: the same seed and Spec give the same record.
package gatetest

import (
	"maps"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// Spec describes a synthetic run. Zero fields take the defaults named.
type Spec struct {
	Workload string // "chat"
	Hash     string // "sha256:test"
	Hardware string // "h100-80gb-hbm3-x1"
	Requests int    // 500
	Rate     float64
	// OutputTokens is the median output length (lognormal, σ 0.5); with FixedOutput
	// every request has exactly this many. Default 200.
	OutputTokens int
	FixedOutput  bool
	// StepMS is the median decode step: the typical inter-token gap. Default 20.
	StepMS float64
	// GapScale multiplies every gap (1.3: a 30% ITL regression); TTFTScale every TTFT.
	GapScale  float64
	TTFTScale float64
	// ErrorRate is the chance a request times out.
	ErrorRate float64
	Trial     int
	// Env is the environment; nil means Env().
	Env map[string]string
	// KVConcurrency is the summary's KV-limited concurrency; 0 for none.
	KVConcurrency   int
	ClientSaturated bool
	Incomplete      bool
	// ColdHits > 0 makes the run a cold one in which the engine's prefix cache served
	// that fraction of the prompt tokens.
	ColdHits float64

	// Noise is between-run noise, drawn with NoiseSeed as the simulator draws it at a
	// start (sim.Noise.Draw): every step and TTFT is multiplied by its factor at the
	// request's moment, and its engine-wide stalls lengthen the gaps they fall in, as the
	// simulator's step loop does. The zero Noise is none.
	Noise     sim.Noise
	NoiseSeed int64
	// Offset is when this run starts on the noise's clock: a later run of one engine
	// start, or a later block of a job, sees more of the drift.
	Offset time.Duration
	// JobDrift is a drift of the machine over a whole job of JobLength, shared by every
	// engine started in it (0.10: 10% slower at the job's end than at its start), on the
	// job's clock (Offset + the time in the run).
	JobDrift  float64
	JobLength time.Duration
	// SkipSummary leaves the record's summary at its window and request count: for the
	// gate's statistical tests, which compute on the requests alone.
	SkipSummary bool
}

// Env is a typical environment of a run on one H100.
func Env() map[string]string {
	return map[string]string{
		"engine.name":    "vllm",
		"engine.version": "0.6.3",
		"model.id":       "meta-llama/Llama-3.1-8B-Instruct",
		"model.revision": "0e9e39f249a16976918f6564b8830bc894c89659",
		"gpu.name":       "NVIDIA H100 80GB HBM3",
		"gpu.count":      "1",
		"gpu.driver":     "550.54.15",
		"gpu.cuda":       "12.4",
		"tool.version":   "v0.1.0",
	}
}

// SLO is the SLO the synthetic requests are judged against.
var SLO = []result.SLOTarget{
	{Metric: result.MetricTTFT, Percentile: 95, LimitMS: 500},
	{Metric: result.MetricTPOT, Percentile: 95, LimitMS: 50},
}

// Record builds a run record. The arrival schedule depends only on the request count and
// rate, as in a pinned workload; what happens to each request depends on seed.
//
// Gaps are shaped like continuous batching: each request decodes at its own step (its
// batch, its moment of the run: lognormal around StepMS, σ 0.15), each gap jitters
// around that step (σ 0.2), and a few gaps are stalls several steps long, when another
// request's prefill joined the batch; how often depends on the request. So the gaps of
// one request are correlated, as on a real engine.
func Record(seed uint64, s Spec) *result.Record {
	if s.Workload == "" {
		s.Workload = "chat"
	}
	if s.Hash == "" {
		s.Hash = "sha256:test"
	}
	if s.Hardware == "" {
		s.Hardware = "h100-80gb-hbm3-x1"
	}
	if s.Requests == 0 {
		s.Requests = 500
	}
	if s.Rate == 0 {
		s.Rate = 10
	}
	if s.OutputTokens == 0 {
		s.OutputTokens = 200
	}
	if s.StepMS == 0 {
		s.StepMS = 20
	}
	if s.GapScale == 0 {
		s.GapScale = 1
	}
	if s.TTFTScale == 0 {
		s.TTFTScale = 1
	}
	env := s.Env
	if env == nil {
		env = Env()
	}

	var rn *sim.RunNoise
	var stalls []stall
	if s.Noise.Enabled() {
		rn = s.Noise.Draw(s.NoiseSeed)
		stalls = stallsOf(rn, s.Offset, time.Duration(float64(s.Requests)/s.Rate*float64(time.Second))+time.Minute)
	}
	factor := func(us int64) float64 {
		at := s.Offset + time.Duration(us)*time.Microsecond
		f := 1.0
		if rn != nil {
			f = rn.Factor(at)
		}
		if s.JobDrift != 0 && s.JobLength > 0 {
			f *= 1 + s.JobDrift*float64(at)/float64(s.JobLength)
		}
		return f
	}
	sched := rand.New(rand.NewPCG(uint64(s.Requests), 0x5c4ed))
	r := rand.New(rand.NewPCG(seed, 0x9a7e))
	reqs := make([]result.Request, s.Requests)
	var t float64 // µs
	for i := range reqs {
		t += sched.ExpFloat64() * 1e6 / s.Rate
		q := result.Request{I: i, SchedUS: int64(t), PromptTarget: 800, PromptTokens: 800}
		q.SendUS = q.SchedUS + 40 + int64(r.IntN(40))
		n := s.OutputTokens
		if !s.FixedOutput {
			n = int(math.Round(float64(s.OutputTokens) * math.Exp(0.5*r.NormFloat64())))
			n = min(max(n, 2), 4*s.OutputTokens)
		}
		q.OutputTarget = n
		f := factor(q.SchedUS)
		step := f * s.StepMS * 1000 * s.GapScale * math.Exp(0.15*r.NormFloat64())
		pStall := 0.02 * math.Exp(0.5*r.NormFloat64())
		ttft := f * 150e3 * s.TTFTScale * math.Exp(0.5*r.NormFloat64())
		if r.Float64() < s.ErrorRate {
			q.Error = "timeout"
			q.EndUS = q.SchedUS + 60e6
			reqs[i] = q
			continue
		}
		q.FirstUS = q.SchedUS + int64(ttft)
		q.ITLUS = make([]int64, n-1)
		last := q.FirstUS
		for j := range q.ITLUS {
			g := step * math.Exp(0.2*r.NormFloat64())
			if r.Float64() < pStall {
				g *= 3 + 5*r.Float64()
			}
			g += stallIn(stalls, last, last+int64(g))
			q.ITLUS[j] = max(int64(g), 1)
			last += q.ITLUS[j]
		}
		q.LastUS, q.EndUS = last, last+300
		q.OutputTokens, q.Chunks, q.Finish = n, n, "length"
		result.Judge(&q, SLO)
		reqs[i] = q
	}
	window := result.Window{StartUS: 0, EndUS: int64(float64(s.Requests) / s.Rate * 1e6)}
	rec := &result.Record{
		Schema:           result.Schema,
		Workload:         s.Workload,
		WorkloadHash:     s.Hash,
		Mode:             "open",
		Start:            time.Date(2025, 3, 1, 12, 0, s.Trial, 0, time.UTC),
		ToolVersion:      env["tool.version"],
		Trial:            s.Trial,
		Window:           window,
		SLO:              SLO,
		MaxDispatchLagMS: 1,
		Hardware:         s.Hardware,
		Environment:      maps.Clone(env),
		Requests:         reqs,
	}
	if s.SkipSummary {
		rec.Summary = result.Summary{Requests: len(reqs), DurationS: float64(window.EndUS-window.StartUS) / 1e6}
	} else {
		rec.Summary = result.Summarize(reqs, result.SummaryInput{Window: window, SLO: SLO, OpenLoop: true})
	}
	if s.KVConcurrency > 0 {
		rec.Summary.KVConcurrency = &result.KVConcurrency{Value: s.KVConcurrency, CapacityTokens: int64(s.KVConcurrency) * 2048, PerRequestTokens: 2048, Source: "engine"}
	}
	if s.ClientSaturated {
		rec.Summary.ClientSaturated = true
		rec.Summary.DispatchLagms.P99 = 4.2
	}
	if s.Incomplete {
		rec.Incomplete, rec.IncompleteReason = true, "engine crashed"
	}
	if s.ColdHits > 0 {
		rec.PrefixCache = &result.PrefixCacheRun{Mode: result.PrefixCold}
		q := 1000.0 * float64(len(reqs))
		rec.Summary.PrefixCache = &result.PrefixCacheStats{Queries: q, Hits: q * s.ColdHits, HitRate: s.ColdHits, Source: "vllm counters"}
	}
	return rec
}

// stall is an engine-wide stall of the noise, at µs since the run's start.
type stall struct{ at, us int64 }

// stallsOf lists the stalls of rn within span of a run starting at offset, by stepping
// its clock as the simulator's step loop does (every 10 ms).
func stallsOf(rn *sim.RunNoise, offset, span time.Duration) []stall {
	var out []stall
	for t := time.Duration(0); t <= span; t += 10 * time.Millisecond {
		if d := rn.StallsUntil(offset + t); d > 0 {
			out = append(out, stall{at: t.Microseconds(), us: d.Microseconds()})
		}
	}
	return out
}

// stallIn is the total length of the stalls in (from, to].
func stallIn(stalls []stall, from, to int64) float64 {
	i := sort.Search(len(stalls), func(i int) bool { return stalls[i].at > from })
	var d int64
	for ; i < len(stalls) && stalls[i].at <= to; i++ {
		d += stalls[i].us
	}
	return float64(d)
}
