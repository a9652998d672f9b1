package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	Params              SweepParams `json:"params"`

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

	Requests         int     `json:"requests"`
	Completed        int     `json:"completed"`
	SLOAttainment    float64 `json:"slo_attainment"`
	GoodputRPS       float64 `json:"goodput_rps"`
	ThroughputRPS    float64 `json:"throughput_rps"`
	TTFTP99ms        float64 `json:"ttft_p99_ms"`
	ITLP99ms         float64 `json:"itl_p99_ms"`
	E2EMeanms        float64 `json:"e2e_mean_ms"`
	ErrorRate        float64 `json:"error_rate"`
	DispatchLagP99ms float64 `json:"dispatch_lag_p99_ms"`
	// QueueGrowth is how much the waiting queue grew while arrivals lasted (engine queue
	// depth where scraped, else the client's in-flight count; QueueSource says which);
	// absent when neither was sampled.
	QueueGrowth   *float64       `json:"queue_growth,omitempty"`
	QueueSource   string         `json:"queue_source,omitempty"`
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
)

// StepOf summarizes one step's run record at the given rate and judges it: failed when
// the run did not complete, client-limited when the load generator could not keep the
// schedule (neither is a verdict on the engine), saturated on clear saturation, fail when
// attainment is below its target, pass otherwise.
func StepOf(rec *Record, rate float64) SweepStep {
	s := &rec.Summary
	st := SweepStep{
		RateRPS:          rate,
		Requests:         s.Requests,
		Completed:        s.Completed,
		SLOAttainment:    s.SLOAttainment,
		GoodputRPS:       s.GoodputRPS,
		ThroughputRPS:    s.ThroughputRPS,
		TTFTP99ms:        s.TTFTms.P99,
		ITLP99ms:         s.ITLms.P99,
		E2EMeanms:        s.E2Ems.Mean,
		ErrorRate:        s.ErrorRate,
		DispatchLagP99ms: s.DispatchLagms.P99,
	}
	st.KVConcurrency = s.KVConcurrency
	if g, src, ok := QueueGrowth(rec); ok {
		st.QueueGrowth, st.QueueSource = &g, src
	}
	target := rec.SLOAttainmentTarget
	if target <= 0 {
		target = 0.99
	}
	growthLimit := max(QueueGrowthMin, QueueGrowthFraction*float64(s.Requests))
	switch {
	case rec.Incomplete:
		st.Verdict, st.Reason = StepFailed, rec.IncompleteReason
	case s.ClientSaturated:
		st.Verdict = StepClient
		st.Reason = fmt.Sprintf("dispatch lag p99 %.3f ms > %g ms", s.DispatchLagms.P99, rec.MaxDispatchLagMS)
	case s.Requests == 0:
		st.Verdict, st.Reason = StepFailed, "no request was measured"
	case st.QueueGrowth != nil && *st.QueueGrowth >= growthLimit:
		st.Verdict = StepSaturated
		st.Reason = fmt.Sprintf("the %s grew by %.1f while arrivals lasted (limit %.1f)", queueNoun(st.QueueSource), *st.QueueGrowth, growthLimit)
	case s.ErrorRate > SaturatedErrorRate:
		st.Verdict = StepSaturated
		st.Reason = fmt.Sprintf("error rate %.1f%% > %.0f%%", 100*s.ErrorRate, 100*SaturatedErrorRate)
	case s.SLOAttainment < CollapseFraction*target:
		st.Verdict = StepSaturated
		st.Reason = fmt.Sprintf("attainment collapsed: %.1f%% < half the %.1f%% target", 100*s.SLOAttainment, 100*target)
	case s.SLOAttainment < target:
		st.Verdict = StepFail
		st.Reason = fmt.Sprintf("attainment %.2f%% < %.2f%%", 100*s.SLOAttainment, 100*target)
	default:
		st.Verdict = StepPass
	}
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
// mean of the first quarter. It uses the engine's queue-depth gauge where it was scraped;
// else the client's in-flight count, skipping its first mean E2E (the time the system
// takes to fill to its steady in-flight level, which is not growth). ok is false with
// fewer than two samples.
func QueueGrowth(rec *Record) (growth float64, source string, ok bool) {
	if len(rec.Requests) < 2 {
		return 0, "", false
	}
	first, last := rec.Requests[0].SchedUS, rec.Requests[0].SchedUS
	for _, r := range rec.Requests {
		first, last = min(first, r.SchedUS), max(last, r.SchedUS)
	}
	series, source := rec.Series.Engine["queue_depth"], QueueSourceEngine
	if len(series) == 0 {
		series, source = rec.Series.InFlight, QueueSourceClient
		first += int64(rec.Summary.E2Ems.Mean * 1000)
	}
	var in []float64
	for _, s := range series {
		if s.TUS >= first && s.TUS <= last {
			in = append(in, s.V)
		}
	}
	if len(in) < 2 {
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
	return WriteFileAtomic(path, data)
}

// ReadSweep reads and checks one sweep record; a file that is not one yields a
// *FormatError.
func ReadSweep(path string) (*Sweep, error) {
	data, err := os.ReadFile(path)
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
