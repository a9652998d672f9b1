package result

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SweepSchema identifies a sweep record.
const SweepSchema = "slogate.sweep/v1"

// Sweep bounds: what ended the search for the highest rate within the SLO.
const (
	// BoundSLO: a step missed the SLO (or saturated the engine) and bisection narrowed
	// the bracket to the precision; MaxSustainableRPS is the highest passing rate.
	BoundSLO = "slo"
	// BoundClient: the load generator could not keep a step's schedule. The sweep has no
	// capacity to report: the client, not the engine, limited it.
	BoundClient = "client"
	// BoundMaxRate: every step up to --max-rate passed; the engine's capacity is at least
	// MaxSustainableRPS.
	BoundMaxRate = "max-rate"
)

// Step verdicts.
const (
	StepPass      = "pass"      // attainment at or above the target, no saturation
	StepFail      = "fail"      // attainment below the target
	StepSaturated = "saturated" // clear saturation: the queue grew, attainment collapsed, or errors
	StepClient    = "client-limited"
	StepFailed    = "failed" // the run did not complete (engine failure, interrupted)
	// StepTooShort: the step's arrivals were too short to show whether the engine kept
	// up (its queue's growth, its completions' pace); the sweep stops and says the
	// shortest step that can.
	StepTooShort = "too-short"
)

// Sweep is an SLO-bound rate sweep of one workload: a series of short open-loop steps
// and the highest arrival rate at which SLO attainment stayed at or above its target.
type Sweep struct {
	Schema   string `json:"schema"`
	Workload string `json:"workload"`
	// WorkloadHash is the hash of what every step sends apart from its rate (the step
	// workload with rate 0 and no warm-up): two sweeps are comparable when it and Params
	// agree.
	WorkloadHash string    `json:"workload_hash"`
	Config       string    `json:"config,omitempty"`
	Target       string    `json:"target,omitempty"`
	API          string    `json:"api,omitempty"`
	Model        string    `json:"model,omitempty"`
	Start        time.Time `json:"start"`
	ToolVersion  string    `json:"tool_version"`

	Hardware    string            `json:"hardware,omitempty"`
	Engine      *EngineInfo       `json:"engine,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`

	SLO                 []SLOTarget `json:"slo,omitempty"`
	SLOAttainmentTarget float64     `json:"slo_attainment_target"`
	// SLOAttainmentDeclared: the workload set slo.attainment, so each step is judged by
	// it; otherwise each target by its own percentile (StepOfRuns).
	SLOAttainmentDeclared bool        `json:"slo_attainment_declared,omitempty"`
	Params                SweepParams `json:"params"`

	Steps []SweepStep `json:"steps"`
	// MaxSustainableRPS is the highest step rate that passed; absent when the sweep has no
	// capacity to report (client-limited, failed, or no step passed).
	MaxSustainableRPS *float64 `json:"max_sustainable_rps,omitempty"`
	// FirstFailingRPS is the lowest rate that failed: the top of the final bracket.
	FirstFailingRPS *float64 `json:"first_failing_rps,omitempty"`
	// Bound is what ended the sweep: BoundSLO, BoundClient or BoundMaxRate; "" when it
	// failed (Failure says why).
	Bound   string   `json:"bound,omitempty"`
	Failure string   `json:"failure,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// SweepParams are the settings of the search.
type SweepParams struct {
	MinRPS  float64 `json:"min_rps"`
	MaxRPS  float64 `json:"max_rps"`
	Factor  float64 `json:"factor"`  // geometric ramp factor
	Process string  `json:"process"` // arrival process of every step
	// Precision is the relative width the bracket is narrowed to: (hi − lo) / lo.
	Precision     float64 `json:"precision"`
	StepRequests  int     `json:"step_requests,omitempty"`
	StepDurationS float64 `json:"step_duration_s,omitempty"`
}

// SweepStep is one step's outcome; its whole run record is in Record.
type SweepStep struct {
	Step    int     `json:"step"`  // 1-based, in the order run
	Phase   string  `json:"phase"` // ramp | bisect
	RateRPS float64 `json:"rate_rps"`
	Verdict string  `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
	Record  string  `json:"record,omitempty"` // path of the step's run record
	// MoreRecords are the runs that extended an undecided step at the same rate, pooled
	// with the first in Targets (MaxStepRuns).
	MoreRecords []string `json:"more_records,omitempty"`
	// Targets are the SLO as the step was judged by, each with the requests that met it
	// and a 95% interval (the declared attainment, else every target at its percentile).
	Targets []TargetAttainment `json:"targets,omitempty"`
	// Undecided: a target's interval still held its threshold after the most runs a step
	// may take; the verdict is the point estimate's.
	Undecided bool `json:"undecided,omitempty"`
	// Slowest is the step's request with the longest TTFT, its wait split between the
	// client and the engine; absent when no request produced a first token.
	Slowest *SlowRequest `json:"slowest,omitempty"`

	Requests      int     `json:"requests"`
	Completed     int     `json:"completed"`
	SLOAttainment float64 `json:"slo_attainment"`
	GoodputRPS    float64 `json:"goodput_rps"`
	ThroughputRPS float64 `json:"throughput_rps"`
	TTFTP99ms     float64 `json:"ttft_p99_ms"`
	ITLP99ms      float64 `json:"itl_p99_ms"`
	E2EMeanms     float64 `json:"e2e_mean_ms"`
	// Tasks is the first run's tasks, when the workload groups requests into tasks.
	Tasks            *TaskSummary `json:"tasks,omitempty"`
	ErrorRate        float64      `json:"error_rate"`
	DispatchLagP99ms float64      `json:"dispatch_lag_p99_ms"`
	// QueueGrowth is how much the waiting queue grew while arrivals lasted (engine queue
	// depth where scraped, else the client's in-flight count; QueueSource says which);
	// absent when neither was sampled.
	QueueGrowth *float64 `json:"queue_growth,omitempty"`
	QueueSource string   `json:"queue_source,omitempty"`
	// OfferedRPS and DeliveredRPS are the pace of the step's arrivals and of its
	// completions, each over the middle 80% of its times (Pace): an engine that kept up
	// completes at the rate it was sent; absent when the step had too few requests.
	OfferedRPS    float64        `json:"offered_rps,omitempty"`
	DeliveredRPS  float64        `json:"delivered_rps,omitempty"`
	KVConcurrency *KVConcurrency `json:"kv_concurrency,omitempty"`
}

// OperatingStep is the passing step at MaxSustainableRPS, or nil.
func (s *Sweep) OperatingStep() *SweepStep {
	if s.MaxSustainableRPS == nil {
		return nil
	}
	var best *SweepStep
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Verdict == StepPass && st.RateRPS == *s.MaxSustainableRPS {
			best = st
		}
	}
	return best
}

// Thresholds of clear saturation: a step beyond any of them is above the engine's
// capacity, whatever its attainment over a short window says.
const (
	// A waiting queue that grew by at least max(QueueGrowthMin, QueueGrowthFraction × the
	// step's requests) while arrivals lasted is growing without bound: a short step may
	// end before its SLO misses show, but a longer one would not.
	QueueGrowthMin      = 4.0
	QueueGrowthFraction = 0.10
	// Attainment below CollapseFraction × its target has collapsed.
	CollapseFraction = 0.5
	// An error rate above SaturatedErrorRate is the engine shedding load.
	SaturatedErrorRate = 0.10
	// A step whose requests completed at less than 1 − PaceMargin of the pace they were
	// sent at (Pace) did not keep up: its backlog grew at the difference.
	PaceMargin = 0.10
	// MinQueueSamples is the fewest samples of the queue a step's arrivals must hold,
	// once the system has filled to its steady level, for its growth to be judged.
	MinQueueSamples = 5
)

// StepOf summarizes one step's run record at the given rate and judges it (StepOfRuns).
func StepOf(rec *Record, rate float64) SweepStep { return StepOfRuns([]*Record{rec}, rate) }

// MaxStepRuns is how many runs one sweep step may take at its rate: a step that fails its
// SLO by the point estimate while its interval still holds the threshold is run again
// and pooled, up to this many runs.
const MaxStepRuns = 4

// Step target verdicts (TargetAttainment.Verdict).
const (
	TargetPass      = "pass"      // the whole interval at or above the threshold
	TargetFail      = "fail"      // the whole interval below it
	TargetUndecided = "undecided" // the interval holds the threshold
)

// TargetAttainment is how a sweep step met one part of its SLO: the requests that met it
// of those measured (errors miss), against the fraction it needs, with a 95% Wilson
// score interval of that fraction.
type TargetAttainment struct {
	// Metric is the target's metric, or "all" for the declared attainment (every target
	// at once).
	Metric     string  `json:"metric"`
	Percentile float64 `json:"percentile,omitempty"`
	LimitMS    float64 `json:"limit_ms,omitempty"`
	Need       float64 `json:"need"` // the fraction of requests that must meet it
	Met        int     `json:"met"`
	Requests   int     `json:"requests"`
	Attainment float64 `json:"attainment"` // Met / Requests
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
	Verdict    string  `json:"verdict"`
}

// String says what the step found for the target, e.g. "ttft p95 ≤ 600 ms: 26 of 27
// (96.30%, 95% interval [81.7%, 99.3%]) against 95%".
func (t TargetAttainment) String() string {
	what := "every SLO target"
	if t.Metric != "all" {
		what = fmt.Sprintf("%s p%s <= %s ms", t.Metric, strconv.FormatFloat(t.Percentile, 'g', -1, 64), strconv.FormatFloat(t.LimitMS, 'g', -1, 64))
	}
	return fmt.Sprintf("%s: %d of %d (%.2f%%, 95%% interval [%.1f%%, %.1f%%]) against %s%%", what, t.Met, t.Requests, 100*t.Attainment, 100*t.Low, 100*t.High, strconv.FormatFloat(100*t.Need, 'g', 4, 64))
}

// wilson is the 95% Wilson score interval of k successes in n trials.
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(centre-half, 0), min(centre+half, 1)
}

func judgeTarget(t *TargetAttainment) {
	t.Attainment = ratio(t.Met, t.Requests)
	t.Low, t.High = wilson(t.Met, t.Requests)
	switch {
	case t.High < t.Need:
		t.Verdict = TargetFail
	case t.Low >= t.Need:
		t.Verdict = TargetPass
	default:
		t.Verdict = TargetUndecided
	}
}

// SlowRequest splits a slow request's TTFT (first − sched) into what the client took
// (DispatchLagms: send − sched, of which Dialms dialing a connection) and what the server
// took (SendToFirstms: first − send: its queue, prefill and the network), with the most
// requests the engine's waiting queue held meanwhile (EngineQueueMax, where scraped).
type SlowRequest struct {
	Run            int      `json:"run"` // 1-based run of the step
	I              int      `json:"i"`
	TTFTms         float64  `json:"ttft_ms"`
	DispatchLagms  float64  `json:"dispatch_lag_ms"`
	Dialms         float64  `json:"dial_ms,omitempty"`
	SendToFirstms  float64  `json:"send_to_first_ms"`
	EngineQueueMax *float64 `json:"engine_queue_max,omitempty"`
	// Ahead is how many requests of the run were already in flight, sent and not yet
	// ended, when it was sent: on an engine that serves one at a time, those it waited for.
	Ahead int `json:"ahead"`
}

// String says where the request's TTFT went.
func (q SlowRequest) String() string {
	s := fmt.Sprintf("slowest TTFT %.1f ms (request %d): %.1f ms before it was sent (the client", q.TTFTms, q.I, q.DispatchLagms)
	if q.Dialms > 0 {
		s += fmt.Sprintf(", %.1f ms of it dialing", q.Dialms)
	}
	s += fmt.Sprintf("), %.1f ms from send to first token (the server) with %d requests in flight ahead of it", q.SendToFirstms, q.Ahead)
	if q.EngineQueueMax != nil {
		s += fmt.Sprintf(" and the engine's waiting queue at up to %s", strconv.FormatFloat(*q.EngineQueueMax, 'g', -1, 64))
	}
	return s
}

// slowest finds the request with the longest TTFT over recs.
func slowest(recs []*Record) *SlowRequest {
	var best *SlowRequest
	for k, r := range recs {
		for i := range r.Requests {
			q := &r.Requests[i]
			if q.FirstUS == 0 || (best != nil && float64(q.FirstUS-q.SchedUS)/1000 <= best.TTFTms) {
				continue
			}
			sr := &SlowRequest{Run: k + 1, I: q.I, TTFTms: float64(q.FirstUS-q.SchedUS) / 1000, DispatchLagms: float64(q.SendUS-q.SchedUS) / 1000,
				Dialms: float64(q.DialUS) / 1000, SendToFirstms: float64(q.FirstUS-q.SendUS) / 1000}
			for j := range r.Requests {
				p := &r.Requests[j]
				if j != i && p.SendUS <= q.SendUS && p.EndUS > q.SendUS {
					sr.Ahead++
				}
			}
			for _, smp := range r.Series.Engine["queue_depth"] {
				if smp.TUS >= q.SchedUS && smp.TUS <= q.FirstUS && (sr.EngineQueueMax == nil || smp.V > *sr.EngineQueueMax) {
					v := smp.V
					sr.EngineQueueMax = &v
				}
			}
			best = sr
		}
	}
	return best
}

// StepTargets are the parts of the SLO a step is judged by, counted over the requests of
// recs (runs of one step at one rate). A workload that declares slo.attainment is judged
// by it: that fraction of requests must meet every target. One that does not is judged
// by each target as written: "ttft: {p95: 600ms}" asks that 95% of requests have a TTFT
// within 600 ms, the run's p95 (errors count as misses) at or under the limit. Without
// targets, the attainment target applies to success alone.
func StepTargets(recs []*Record) []TargetAttainment {
	if len(recs) == 0 {
		return nil
	}
	base := recs[0]
	need := base.SLOAttainmentTarget
	if need <= 0 {
		need = 0.99
	}
	if base.SLOAttainmentDeclared || (len(base.SLO) == 0 && len(base.ClassSLO) == 0) {
		t := TargetAttainment{Metric: "all", Need: need}
		for _, r := range recs {
			for i := range r.Requests {
				t.Requests++
				if r.Requests[i].SLOMet {
					t.Met++
				}
			}
		}
		judgeTarget(&t)
		return []TargetAttainment{t}
	}
	type key struct {
		metric string
		p, lim float64
	}
	idx := map[key]int{}
	var out []TargetAttainment
	var scratch []int64
	for _, r := range recs {
		for i := range r.Requests {
			q := &r.Requests[i]
			for _, t := range SLOFor(q.Class, r.SLO, r.ClassSLO) {
				k := key{t.Metric, t.Percentile, t.LimitMS}
				j, ok := idx[k]
				if !ok {
					j = len(out)
					idx[k] = j
					out = append(out, TargetAttainment{Metric: t.Metric, Percentile: t.Percentile, LimitMS: t.LimitMS, Need: t.Percentile / 100})
				}
				out[j].Requests++
				if meets(q, []SLOTarget{t}, &scratch) {
					out[j].Met++
				}
			}
		}
	}
	for j := range out {
		judgeTarget(&out[j])
	}
	return out
}

// StepOfRuns summarizes the runs of one sweep step at the given rate (the first, and
// those that extended it) and judges the step: failed when a run did not complete,
// client-limited when the load generator could not keep a schedule (neither is a verdict
// on the engine), saturated on clear saturation, then by its SLO (StepTargets) pooled
// over the runs: fail when a target's whole interval lies below what it needs, pass when
// every target's lies at or above it, and otherwise by the point estimates, with
// Undecided set (a sweep runs an undecided fail again, MaxStepRuns).
func StepOfRuns(recs []*Record, rate float64) SweepStep {
	rec := recs[0]
	s := &rec.Summary
	st := SweepStep{
		RateRPS:          rate,
		SLOAttainment:    s.SLOAttainment,
		GoodputRPS:       s.GoodputRPS,
		ThroughputRPS:    s.ThroughputRPS,
		TTFTP99ms:        s.TTFTms.P99,
		ITLP99ms:         s.ITLms.P99,
		E2EMeanms:        s.E2Ems.Mean,
		DispatchLagP99ms: s.DispatchLagms.P99,
	}
	st.KVConcurrency = s.KVConcurrency
	st.Tasks = s.Tasks
	pace, paced := PaceOf(rec)
	if g, src, ok := queueGrowth(rec, pace); ok {
		st.QueueGrowth, st.QueueSource = &g, src
	}
	if paced {
		st.OfferedRPS, st.DeliveredRPS = round3(pace.OfferedRPS), round3(pace.DeliveredRPS)
	}
	errs, met := 0.0, 0
	for _, r := range recs {
		st.Requests += r.Summary.Requests
		st.Completed += r.Summary.Completed
		errs += r.Summary.ErrorRate * float64(r.Summary.Requests)
		met += int(math.Round(r.Summary.SLOAttainment * float64(r.Summary.Requests)))
		st.DispatchLagP99ms = max(st.DispatchLagP99ms, r.Summary.DispatchLagms.P99)
		st.TTFTP99ms = max(st.TTFTP99ms, r.Summary.TTFTms.P99)
		st.ITLP99ms = max(st.ITLP99ms, r.Summary.ITLms.P99)
	}
	if st.Requests > 0 {
		st.ErrorRate = errs / float64(st.Requests)
		st.SLOAttainment = float64(met) / float64(st.Requests)
	}
	growthLimit := max(QueueGrowthMin, QueueGrowthFraction*float64(s.Requests))
	for _, r := range recs {
		switch {
		case r.Incomplete:
			st.Verdict, st.Reason = StepFailed, r.IncompleteReason
		case r.Summary.ClientSaturated:
			st.Verdict = StepClient
			st.Reason = fmt.Sprintf("dispatch lag p99 %.3f ms > %g ms", r.Summary.DispatchLagms.P99, r.MaxDispatchLagMS)
		}
		if st.Verdict != "" {
			return st
		}
	}
	st.Targets = StepTargets(recs)
	st.Slowest = slowest(recs)
	switch {
	case st.Requests == 0:
		st.Verdict, st.Reason = StepFailed, "no request was measured"
		return st
	case st.QueueGrowth != nil && *st.QueueGrowth >= growthLimit:
		st.Verdict = StepSaturated
		st.Reason = fmt.Sprintf("the %s grew by %.1f while arrivals lasted (limit %.1f)", queueNoun(st.QueueSource), *st.QueueGrowth, growthLimit)
		return st
	case paced && pace.DeliveredRPS < (1-PaceMargin)*pace.OfferedRPS:
		st.Verdict = StepSaturated
		st.Reason = fmt.Sprintf("the engine did not keep up: requests completed at %.1f req/s of the %.1f req/s they were sent at (under %.0f%%)", pace.DeliveredRPS, pace.OfferedRPS, 100*(1-PaceMargin))
		return st
	case st.ErrorRate > SaturatedErrorRate:
		st.Verdict = StepSaturated
		st.Reason = fmt.Sprintf("error rate %.1f%% > %.0f%%", 100*st.ErrorRate, 100*SaturatedErrorRate)
		return st
	}
	for _, t := range st.Targets {
		if t.Attainment < CollapseFraction*t.Need {
			st.Verdict = StepSaturated
			st.Reason = fmt.Sprintf("attainment collapsed: %s, under half of it", t)
			return st
		}
	}
	if st.QueueGrowth == nil || !paced || pace.ShortBy() > 0 {
		// The queue or the pace cannot say whether the engine kept up: a pass would be a
		// guess, and a short step's SLO misses may not have shown yet.
		st.Verdict = StepTooShort
		st.Reason = tooShortReason(rec, rate, pace, st.QueueGrowth != nil, paced)
		return st
	}
	var failed, undecided []string
	for _, t := range st.Targets {
		switch {
		case t.Verdict == TargetFail:
			failed = append(failed, t.String())
		case t.Verdict == TargetUndecided && t.Attainment < t.Need:
			failed = append(failed, t.String())
			undecided = append(undecided, t.String())
		case t.Verdict == TargetUndecided:
			undecided = append(undecided, t.String())
		}
	}
	decidedFail := slices.ContainsFunc(st.Targets, func(t TargetAttainment) bool { return t.Verdict == TargetFail })
	switch {
	case len(failed) > 0:
		st.Verdict, st.Reason = StepFail, strings.Join(failed, "; ")
	default:
		st.Verdict = StepPass
		if len(undecided) > 0 {
			st.Reason = "within the SLO by the point estimate: " + strings.Join(undecided, "; ")
		}
	}
	st.Undecided = len(undecided) > 0 && !decidedFail
	return st
}

func queueNoun(src string) string {
	if src == QueueSourceEngine {
		return "engine's waiting queue"
	}
	return "client's in-flight count"
}

// Sources of QueueGrowth.
const (
	QueueSourceEngine = "engine_queue_depth"
	QueueSourceClient = "client_in_flight"
)

// QueueGrowth is how much the waiting queue grew while arrivals lasted: the mean of the
// last quarter of the samples between the first and the last scheduled arrival minus the
// mean of the first quarter. It uses the engine's queue-depth gauge where it was scraped
// at least MinQueueSamples times then; else the client's in-flight count, skipping the
// time the system takes to fill to its steady in-flight level (Pace.FillS), which is not
// growth. ok is false with fewer than MinQueueSamples samples.
func QueueGrowth(rec *Record) (growth float64, source string, ok bool) {
	p, _ := PaceOf(rec)
	return queueGrowth(rec, p)
}

// queueGrowth is QueueGrowth with the run's pace measured.
func queueGrowth(rec *Record, p Pace) (growth float64, source string, ok bool) {
	if len(rec.Requests) < 2 {
		return 0, "", false
	}
	first, last := rec.Requests[0].SchedUS, rec.Requests[0].SchedUS
	for _, r := range rec.Requests {
		first, last = min(first, r.SchedUS), max(last, r.SchedUS)
	}
	within := func(series []Sample, from int64) []float64 {
		var in []float64
		for _, s := range series {
			if s.TUS >= from && s.TUS <= last {
				in = append(in, s.V)
			}
		}
		return in
	}
	// The engine's gauge where it was scraped often enough, else the client's in-flight
	// count from the time the system takes to fill to its steady level: the latency of
	// the first requests, which met no backlog (a saturated step's mean latency is
	// mostly backlog, and skipping it left no sample to judge).
	in, source := within(rec.Series.Engine["queue_depth"], first), QueueSourceEngine
	if len(in) < MinQueueSamples {
		fill := int64(rec.Summary.E2Ems.Mean * 1000)
		if p.FillS > 0 {
			fill = int64(p.FillS * 1e6)
		}
		in, source = within(rec.Series.InFlight, first+fill), QueueSourceClient
	}
	if len(in) < MinQueueSamples {
		return 0, "", false
	}
	k := max(len(in)/4, 1)
	mean := func(v []float64) float64 {
		t := 0.0
		for _, x := range v {
			t += x
		}
		return t / float64(len(v))
	}
	return mean(in[len(in)-k:]) - mean(in[:k]), source, true
}

// Pace is how a step's completions kept pace with its arrivals.
type Pace struct {
	// OfferedRPS is the pace of the scheduled arrivals and DeliveredRPS that of the
	// completions (of requests that succeeded), each over the middle 80% of its times:
	// 0.8·n over the time between the 10th and 90th percentiles. Completions are
	// arrivals shifted by their end-to-end latency: where the engine keeps up and that
	// latency's spread is small against the span (ShortBy), the two agree; where it
	// cannot, the completions come at its own rate.
	OfferedRPS, DeliveredRPS float64
	// ArrivalS is the time between the first and the last scheduled arrival.
	ArrivalS float64
	// FillS is the time the system takes to fill to its steady in-flight level, and
	// SpreadS the spread of its end-to-end latency (p90 − p10): both from the step's
	// first tenth of requests (at least 5), which met no backlog.
	FillS, SpreadS float64
}

// NeedS is the shortest span of arrivals that can show the pace: 10 × SpreadS.
func (p Pace) NeedS() float64 { return 10 * p.SpreadS }

// ShortBy is how much longer the step's arrivals needed to last to show the pace
// (0: long enough).
func (p Pace) ShortBy() float64 { return max(p.NeedS()-p.ArrivalS, 0) }

// PaceOf measures a run's pace; ok is false with fewer than 10 requests that succeeded
// (the rates are then 0; the span, fill and spread are measured on what there is).
func PaceOf(rec *Record) (Pace, bool) {
	n := len(rec.Requests)
	if n == 0 {
		return Pace{}, false
	}
	sched := make([]float64, 0, n)
	var ends []float64
	type early struct{ sched, e2e float64 }
	var byArrival []early
	for i := range rec.Requests {
		q := &rec.Requests[i]
		sched = append(sched, float64(q.SchedUS)/1e6)
		if q.OK() && q.EndUS > 0 {
			ends = append(ends, float64(q.EndUS)/1e6)
			byArrival = append(byArrival, early{float64(q.SchedUS) / 1e6, float64(q.EndUS-q.SchedUS) / 1e6})
		}
	}
	slices.Sort(sched)
	slices.Sort(ends)
	pace := func(ts []float64) float64 {
		lo, hi := quantileSorted(ts, 0.1), quantileSorted(ts, 0.9)
		if hi <= lo {
			return math.Inf(1)
		}
		return 0.8 * float64(len(ts)) / (hi - lo)
	}
	p := Pace{ArrivalS: sched[len(sched)-1] - sched[0]}
	if len(byArrival) == 0 {
		return p, false
	}
	slices.SortFunc(byArrival, func(a, b early) int { return cmp.Compare(a.sched, b.sched) })
	k := max(len(byArrival)/10, min(5, len(byArrival)))
	e2e := make([]float64, k)
	for i := range e2e {
		e2e[i] = byArrival[i].e2e
	}
	slices.Sort(e2e)
	p.FillS = quantileSorted(e2e, 0.5)
	p.SpreadS = quantileSorted(e2e, 0.9) - quantileSorted(e2e, 0.1)
	if n < 10 || len(ends) < 10 {
		return p, false
	}
	// Requests that failed are not delivered: the pace of those that succeeded, at the
	// share of all that they are.
	p.OfferedRPS = pace(sched)
	p.DeliveredRPS = pace(ends) * float64(len(ends)) / float64(n)
	return p, true
}

// quantileSorted is the q-quantile of sorted xs, interpolated.
func quantileSorted(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	h := q * float64(len(xs)-1)
	i := int(h)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

// tooShortReason says why a step could not show that the engine kept up, and the
// shortest step that can.
func tooShortReason(rec *Record, rate float64, p Pace, queued, paced bool) string {
	every := sampleEvery(rec.Series.InFlight)
	need := max(p.NeedS(), p.FillS+float64(MinQueueSamples)*every)
	var why []string
	if !queued {
		why = append(why, fmt.Sprintf("fewer than %d samples of the queue once it had filled (%.2f s)", MinQueueSamples, p.FillS))
	}
	if !paced {
		why = append(why, "fewer than 10 requests succeeded")
		need = max(need, 10/rate)
	} else if p.ShortBy() > 0 {
		why = append(why, fmt.Sprintf("its end-to-end latency spread by %.0f ms, too much against its arrivals to tell a %.0f%% shortfall in their pace", 1000*p.SpreadS, 100*PaceMargin))
	}
	d := time.Duration(math.Ceil(need)) * time.Second
	return fmt.Sprintf("arrivals lasted %.2f s: too short to show whether the engine kept up (%s); a step needs at least %s of arrivals (--step-duration %s, or --step-requests %d at %s req/s)",
		p.ArrivalS, strings.Join(why, "; "), d, d, int(math.Ceil(d.Seconds()*rate)), strconv.FormatFloat(rate, 'g', -1, 64))
}

// sampleEvery is the median interval of a series (0.1 s when it has too few samples).
func sampleEvery(series []Sample) float64 {
	if len(series) < 3 {
		return 0.1
	}
	gaps := make([]float64, 0, len(series)-1)
	for i := 1; i < len(series); i++ {
		gaps = append(gaps, float64(series[i].TUS-series[i-1].TUS)/1e6)
	}
	slices.Sort(gaps)
	return max(quantileSorted(gaps, 0.5), 1e-3)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// MarshalSweep encodes a sweep record as written to disk.
func MarshalSweep(s *Sweep) ([]byte, error) {
	if note := NonFiniteNote(ReplaceNonFinite(s)); note != "" {
		s.Notes = append(s.Notes, "sweep: "+note)
	}
	sw := *s
	switch sw.Schema {
	case "":
		sw.Schema = SweepSchema
	case SweepSchema:
	default:
		return nil, fmt.Errorf("sweep has schema %q; this tool writes %q", sw.Schema, SweepSchema)
	}
	if sw.Steps == nil {
		sw.Steps = []SweepStep{}
	}
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&sw); err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(nil)
	// Each step stays on one line: a sweep reads as a table.
	indent(out, bytes.TrimRight(compact.Bytes(), "\n"), expandDepth)
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// WriteSweep writes a sweep record atomically (see Write).
func WriteSweep(path string, s *Sweep) error {
	data, err := MarshalSweep(s)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return fsafe.WriteFile(path, data)
}

// ReadSweep reads and checks one sweep record; a file that is not one yields a
// *FormatError.
func ReadSweep(path string) (*Sweep, error) {
	data, err := fsafe.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeSweep(path, data)
}

// DecodeSweep parses a sweep record from data; name is used in errors.
func DecodeSweep(name string, data []byte) (*Sweep, error) {
	bad := func(format string, args ...any) error {
		return &FormatError{Path: name, Reason: fmt.Sprintf(format, args...)}
	}
	schema, err := SchemaOf(name, data)
	if err != nil {
		return nil, err
	}
	if schema != SweepSchema {
		return nil, bad("not a slogate sweep record (schema %q; expected %q)", schema, SweepSchema)
	}
	var s Sweep
	if err := json.Unmarshal(data, &s); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, bad("field %s: a JSON %s cannot be a %s (offset %d)", typ.Field, typ.Value, typ.Type, typ.Offset)
		}
		return nil, bad("%v", err)
	}
	return &s, nil
}

// SchemaOf returns the schema field of a JSON record ("" when it has none), or a
// *FormatError when data is not a JSON object. It lets a command that accepts either a
// run record or a sweep record pick the decoder.
func SchemaOf(name string, data []byte) (string, error) {
	bad := func(format string, args ...any) error {
		return &FormatError{Path: name, Reason: fmt.Sprintf(format, args...)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "", bad("empty file, not a slogate record")
	}
	var probe struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return "", bad("truncated or corrupt JSON at offset %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
		case errors.As(err, &typ):
			return "", bad("not a slogate record (the JSON is %s, not an object with a string schema)", article(typ.Value))
		}
		return "", bad("%v", err)
	}
	if probe.Schema == nil {
		return "", nil
	}
	return *probe.Schema, nil
}
