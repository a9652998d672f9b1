package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/result"
)

// BaselineSchema identifies a baseline file.
const BaselineSchema = "slogate.baseline/v1"

// Baseline is a committed baseline: baselines/<workload>/<hardware>.json. It keeps what
// the gate needs to compare a run with it (every request's values, to resample whole
// requests), what the report shows (each trial's summary) and what drift and audit read
// (the environment, the creation time), and nothing else: a run record of 2,000 requests
// is several megabytes, its baseline a few hundred kilobytes.
type Baseline struct {
	Schema       string `json:"schema"`
	Workload     string `json:"workload"`
	WorkloadHash string `json:"workload_hash"`
	// WorkloadForm is the records' workload.Form: what the hash was taken of.
	WorkloadForm json.RawMessage   `json:"workload_form,omitempty"`
	Hardware     string            `json:"hardware"`
	Created      time.Time         `json:"created"`
	ToolVersion  string            `json:"tool_version"`
	Mode         string            `json:"mode"`
	Environment  map[string]string `json:"environment,omitempty"`
	// Source is the provenance of a baseline made from imported records (slogate
	// import): the tool, the file, what TTFT is measured from. Nil for a native one.
	Source *result.Source `json:"source,omitempty"`
	// ITLSketch documents how Columns.ITL is encoded, for a person reading the file.
	ITLSketch SketchInfo `json:"itl_sketch"`
	// Trials in trial order; one for a workload without repeats.
	Trials []Trial `json:"trials"`
	// Noise is the calibration of the between-run spread (slogate calibrate); nil
	// without one.
	Noise *Calibration `json:"noise,omitempty"`

	runs []*run // decoded Trials
}

// SketchInfo describes the ITL sketch of a baseline file.
type SketchInfo struct {
	Gamma      float64 `json:"gamma"`
	Resolution float64 `json:"resolution"` // largest relative error of a gap
	Encoding   string  `json:"encoding"`
}

// Trial is one trial of a baseline.
type Trial struct {
	Trial    int            `json:"trial,omitempty"`
	Start    time.Time      `json:"start"`
	WindowS  float64        `json:"window_s"`
	Summary  result.Summary `json:"summary"`
	Requests Columns        `json:"requests"`
	// Timeline is for the report's charts over time; absent in older baselines.
	Timeline *Timeline `json:"timeline,omitempty"`
	// Startup is the start of the engine the trial was measured on (target.start), for
	// the engine_start and first_token_after_start rules; absent when slogate did not
	// start it.
	Startup *result.Startup `json:"startup,omitempty"`
}

// Columns are the per-request values of one trial, one entry per measured request, in
// record order. Latencies are whole microseconds, −1 where the request has none (a
// failed request has no latency; a one-token reply no TPOT). OK and SLOMet are strings of
// '0' and '1'. ITL holds each request's gaps as a sketch (see SketchEncoding), "" for
// none.
type Columns struct {
	N            int      `json:"n"`
	TTFTUS       []int64  `json:"ttft_us"`
	TPOTUS       []int64  `json:"tpot_us"`
	E2EUS        []int64  `json:"e2e_us"`
	OutputTokens []int    `json:"output_tokens"`
	OK           string   `json:"ok"`
	SLOMet       string   `json:"slo_met"`
	ITL          []string `json:"itl"`
	// ITLToken holds each request's per-token intervals (result.TokenGaps: a chunk of k
	// tokens counts k times as its gap / k) in ITL's encoding, for the itl_token_* rules,
	// or SameAsITL where they are its chunk gaps (one token a chunk); absent in baselines
	// older than it.
	ITLToken []string `json:"itl_token,omitempty"`
	// TaskMet is one '0' or '1' per task (result.Tasks, in the order of each task's
	// first request): whether it completed within the SLO, for task_goodput; absent when
	// the workload has no tasks.
	TaskMet string `json:"task_met,omitempty"`
}

// SameAsITL in Columns.ITLToken says that a request's per-token intervals are its chunk
// gaps (every chunk one token), which ITL holds already.
const SameAsITL = "="

// run is one trial as the gate computes on it, from a record (the candidate) or from a
// baseline file: both sides go through the same columns, so they carry the same rounding.
type run struct {
	trial   int
	window  float64 // measured window, seconds
	span    float64 // span of scheduled arrivals, seconds; 0: unknown (goodputSpan)
	summary *result.Summary
	ttft    []int64 // µs, −1 for none
	tpot    []int64
	e2e     []int64
	tokens  []int
	ok, met []bool
	itl     [][]float64 // sketch values, µs, ascending per request
	// itlTok are the per-token intervals as itl holds the chunk gaps; nil for a baseline
	// older than them.
	itlTok [][]float64
	// start is the start of the engine the run was measured on (target.start); nil when
	// slogate did not start it.
	start *result.Startup
	// taskMet says, task by task, whether the task completed within the SLO
	// (result.Tasks); nil when the workload has no tasks.
	taskMet []bool
	// built holds the run's statistics by metric name, built once (a sequential job
	// looks at the same blocks after every pair); nil: built every time.
	built *sync.Map
}

func (r *run) len() int { return len(r.ok) }

// metric is def's resamplable statistic of the run, built on first use. A metric's name
// says everything its build reads (lookupMetric), and the statistics are safe to share.
func (r *run) metric(def metricDef) stats.Metric {
	if r.built == nil {
		return def.build(r)
	}
	if m, ok := r.built.Load(def.name); ok {
		return m.(stats.Metric)
	}
	m, _ := r.built.LoadOrStore(def.name, def.build(r))
	return m.(stats.Metric)
}

// goodputSpan is what goodput divides by: the span of scheduled arrivals, so that the
// drain does not count (a slower engine below capacity has the same goodput), or the
// measured window where the span is unknown.
func (r *run) goodputSpan() float64 {
	if r.span > 0 {
		return r.span
	}
	return r.window
}

// windowGoodput returns runs whose goodput is per second of the measured window, for a
// comparison where one side has no arrival span: both sides on one definition.
func windowGoodput(runs []*run) []*run {
	out := make([]*run, len(runs))
	for i, r := range runs {
		c := *r
		c.span = 0
		c.built = new(sync.Map)
		out[i] = &c
	}
	return out
}

// FileError says that a baseline file cannot be used: not JSON, cut short, another kind of
// file, or inconsistent. It is bad input (exit code 2), unlike an I/O error.
type FileError struct {
	Path   string
	Reason string
}

func (e *FileError) Error() string { return e.Path + ": " + e.Reason }

// UnfitError says that a run cannot be judged or become a baseline: it is incomplete, the
// load generator was saturated, or a cold run met a warm prefix cache. It is a failure of the tool or the engine (exit code
// 3), not of the change under test.
type UnfitError struct {
	Workload string
	Trial    int
	Reason   string
}

func (e *UnfitError) Error() string {
	if e.Trial > 0 {
		return fmt.Sprintf("%s trial %d: %s", e.Workload, e.Trial, e.Reason)
	}
	return e.Workload + ": " + e.Reason
}

// HardwareOf is the hardware a record's baseline is filed under: its Hardware, else "cpu".
func HardwareOf(rec *result.Record) string {
	if rec.Hardware == "" {
		return "cpu"
	}
	return rec.Hardware
}

// RelPath is where a baseline lives under the baselines directory, slash-separated
// (the form io/fs wants).
func RelPath(workload, hardware string) string {
	return path.Join(workload, hardware+".json")
}

// FromRecords makes a baseline from the trials of one workload on one hardware. It
// refuses (with an *UnfitError) a record that is incomplete or client-saturated.
func FromRecords(recs []*result.Record, now time.Time) (*Baseline, error) {
	if len(recs) == 0 {
		return nil, errors.New("no run records to make a baseline from")
	}
	first := recs[0]
	for _, r := range recs {
		switch {
		case r.Workload != first.Workload:
			return nil, fmt.Errorf("records of workloads %q and %q cannot share a baseline", first.Workload, r.Workload)
		case r.WorkloadHash != first.WorkloadHash:
			return nil, fmt.Errorf("%s: records with workload hashes %s and %s cannot share a baseline", first.Workload, first.WorkloadHash, r.WorkloadHash)
		case HardwareOf(r) != HardwareOf(first):
			return nil, fmt.Errorf("%s: records of hardware %q and %q cannot share a baseline", first.Workload, HardwareOf(first), HardwareOf(r))
		}
		if why := r.Unfit(); why != "" {
			return nil, &UnfitError{Workload: r.Workload, Trial: r.Trial, Reason: why}
		}
		if r.Summary.Completed == 0 {
			return nil, &UnfitError{Workload: r.Workload, Trial: r.Trial, Reason: fmt.Sprintf("every one of its %d requests failed (%s): nothing of the engine's speed was measured, and a baseline of it would judge nothing", len(r.Requests), result.ErrorCounts(r.Summary.Errors))}
		}
	}
	if first.Workload == "" {
		return nil, errors.New("run record has no workload name")
	}
	if first.WorkloadHash == "" {
		return nil, fmt.Errorf("%s: run record has no workload hash", first.Workload)
	}
	sorted, err := sortTrials(recs)
	if err != nil {
		return nil, err
	}
	b := &Baseline{
		Schema:       BaselineSchema,
		Workload:     first.Workload,
		WorkloadHash: first.WorkloadHash,
		WorkloadForm: first.WorkloadForm,
		Hardware:     HardwareOf(first),
		Created:      now.UTC().Truncate(time.Second),
		ToolVersion:  first.ToolVersion,
		Mode:         first.Mode,
		Environment:  maps.Clone(first.Environment),
		Source:       first.Source,
		ITLSketch:    sketchInfo(),
	}
	for _, r := range sorted {
		b.Trials = append(b.Trials, Trial{
			Trial:    r.Trial,
			Start:    r.Start,
			WindowS:  r.Summary.DurationS,
			Summary:  r.Summary,
			Requests: columnsOf(r),
			Timeline: timelineOf(r),
			Startup:  r.Startup,
		})
		b.runs = append(b.runs, runOf(r))
	}
	return b, nil
}

func sketchInfo() SketchInfo {
	return SketchInfo{Gamma: SketchGamma, Resolution: math.Round(SketchResolution*1e6) / 1e6, Encoding: SketchEncoding}
}

// sortTrials orders the trials of one workload and refuses two records of one trial.
func sortTrials(recs []*result.Record) ([]*result.Record, error) {
	s := slices.Clone(recs)
	slices.SortStableFunc(s, func(a, b *result.Record) int { return a.Trial - b.Trial })
	for i := 1; i < len(s); i++ {
		if s[i].Trial == s[i-1].Trial {
			return nil, fmt.Errorf("%s: two run records of trial %d (on %s): keep one results directory per run", s[i].Workload, s[i].Trial, HardwareOf(s[i]))
		}
	}
	return s, nil
}

// requestValues are the per-request values both sides are computed from.
func requestValues(q *result.Request) (ttft, tpot, e2e int64) {
	ttft, tpot, e2e = -1, -1, -1
	if !q.OK() {
		return
	}
	if v, ok := q.TTFTUS(); ok {
		ttft = max(v, 0)
	}
	if v, ok := q.TPOTUS(); ok {
		tpot = max(int64(math.Round(v)), 0)
	}
	if v, ok := q.E2EUS(); ok {
		e2e = max(v, 0)
	}
	return
}

func columnsOf(rec *result.Record) Columns {
	n := len(rec.Requests)
	c := Columns{
		N:      n,
		TTFTUS: make([]int64, n), TPOTUS: make([]int64, n), E2EUS: make([]int64, n),
		OutputTokens: make([]int, n),
		ITL:          make([]string, n),
		ITLToken:     make([]string, n),
	}
	ok, met := make([]byte, n), make([]byte, n)
	for i := range rec.Requests {
		q := &rec.Requests[i]
		c.TTFTUS[i], c.TPOTUS[i], c.E2EUS[i] = requestValues(q)
		c.OutputTokens[i] = q.OutputTokens
		ok[i], met[i] = bit(q.OK()), bit(q.OK() && q.SLOMet)
		if q.OK() {
			c.ITL[i] = encodeSketch(q.ITLUS)
			if tok, same := result.TokenGaps(q); same {
				c.ITLToken[i] = SameAsITL
			} else {
				c.ITLToken[i] = encodeSketch(tok)
			}
		}
	}
	c.OK, c.SLOMet = string(ok), string(met)
	if tm := taskMetOf(rec); tm != nil {
		b := make([]byte, len(tm))
		for i, v := range tm {
			b[i] = bit(v)
		}
		c.TaskMet = string(b)
	}
	return c
}

// taskMetOf is whether each task of rec completed within the SLO; nil without tasks.
func taskMetOf(rec *result.Record) []bool {
	if rec.Tasks == nil {
		return nil
	}
	met := make([]bool, len(rec.Requests))
	for i := range rec.Requests {
		met[i] = rec.Requests[i].OK() && rec.Requests[i].SLOMet
	}
	ts := result.Tasks(rec.Requests, met, rec.Tasks)
	out := make([]bool, len(ts))
	for i, t := range ts {
		out[i] = t.Met
	}
	return out
}

func bit(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}

// runOf is a candidate record as the gate computes on it: the same values a baseline of
// it would hold, its gaps rounded as a sketch rounds them.
func runOf(rec *result.Record) *run {
	n := len(rec.Requests)
	r := &run{
		built:   new(sync.Map),
		trial:   rec.Trial,
		window:  rec.Summary.DurationS,
		span:    rec.Summary.ArrivalSpanS,
		summary: &rec.Summary,
		start:   rec.Startup,
		ttft:    make([]int64, n), tpot: make([]int64, n), e2e: make([]int64, n),
		tokens: make([]int, n),
		ok:     make([]bool, n), met: make([]bool, n),
		itl:     make([][]float64, n),
		itlTok:  make([][]float64, n),
		taskMet: taskMetOf(rec),
	}
	for i := range rec.Requests {
		q := &rec.Requests[i]
		r.ttft[i], r.tpot[i], r.e2e[i] = requestValues(q)
		r.tokens[i] = q.OutputTokens
		r.ok[i], r.met[i] = q.OK(), q.OK() && q.SLOMet
		if q.OK() {
			r.itl[i] = quantizeGaps(q.ITLUS)
			if tok, same := result.TokenGaps(q); same {
				r.itlTok[i] = r.itl[i] // as a baseline's SameAsITL decodes
			} else {
				r.itlTok[i] = quantizeGaps(tok)
			}
		}
	}
	return r
}

// decode checks one trial's columns and turns them into a run.
func (t *Trial) decode() (*run, error) {
	c := &t.Requests
	n := c.N
	if n < 0 {
		return nil, fmt.Errorf("n is %d", n)
	}
	for _, col := range []struct {
		name string
		len  int
	}{{"ttft_us", len(c.TTFTUS)}, {"tpot_us", len(c.TPOTUS)}, {"e2e_us", len(c.E2EUS)}, {"output_tokens", len(c.OutputTokens)}, {"ok", len(c.OK)}, {"slo_met", len(c.SLOMet)}, {"itl", len(c.ITL)}} {
		if col.len != n {
			return nil, fmt.Errorf("requests.%s has %d entries for %d requests", col.name, col.len, n)
		}
	}
	if n != t.Summary.Requests {
		return nil, fmt.Errorf("%d requests in the columns, %d in the summary", n, t.Summary.Requests)
	}
	if !(t.WindowS >= 0) || math.IsInf(t.WindowS, 0) {
		return nil, fmt.Errorf("window_s is %v", t.WindowS)
	}
	if t.Timeline != nil {
		if err := t.Timeline.check(n, strings.Count(c.OK, "0")); err != nil {
			return nil, err
		}
	}
	r := &run{
		built: new(sync.Map),
		trial: t.Trial, window: t.WindowS, span: t.Summary.ArrivalSpanS, summary: &t.Summary, start: t.Startup,
		ttft: c.TTFTUS, tpot: c.TPOTUS, e2e: c.E2EUS, tokens: c.OutputTokens,
		ok: make([]bool, n), met: make([]bool, n), itl: make([][]float64, n),
	}
	if c.ITLToken != nil {
		if len(c.ITLToken) != n {
			return nil, fmt.Errorf("requests.itl_token has %d entries for %d requests", len(c.ITLToken), n)
		}
		r.itlTok = make([][]float64, n)
	}
	if c.TaskMet != "" {
		if ts := t.Summary.Tasks; ts != nil && ts.Tasks != len(c.TaskMet) {
			return nil, fmt.Errorf("requests.task_met has %d tasks, the summary %d", len(c.TaskMet), ts.Tasks)
		}
		r.taskMet = make([]bool, len(c.TaskMet))
		for i := range r.taskMet {
			var err error
			if r.taskMet[i], err = parseBit(c.TaskMet[i]); err != nil {
				return nil, fmt.Errorf("requests.task_met[%d]: %v", i, err)
			}
		}
	}
	for i := range n {
		var err error
		if r.ok[i], err = parseBit(c.OK[i]); err != nil {
			return nil, fmt.Errorf("requests.ok[%d]: %v", i, err)
		}
		if r.met[i], err = parseBit(c.SLOMet[i]); err != nil {
			return nil, fmt.Errorf("requests.slo_met[%d]: %v", i, err)
		}
		if r.itl[i], err = decodeSketch(c.ITL[i]); err != nil {
			return nil, fmt.Errorf("requests.itl[%d]: %v", i, err)
		}
		if r.itlTok != nil && c.ITLToken[i] == SameAsITL {
			r.itlTok[i] = r.itl[i]
		} else if r.itlTok != nil {
			if r.itlTok[i], err = decodeSketch(c.ITLToken[i]); err != nil {
				return nil, fmt.Errorf("requests.itl_token[%d]: %v", i, err)
			}
		}
		for _, col := range []struct {
			name string
			v    int64
		}{{"ttft_us", c.TTFTUS[i]}, {"tpot_us", c.TPOTUS[i]}, {"e2e_us", c.E2EUS[i]}} {
			if col.v < -1 {
				return nil, fmt.Errorf("requests.%s[%d] is %d", col.name, i, col.v)
			}
		}
	}
	return r, nil
}

func parseBit(c byte) (bool, error) {
	switch c {
	case '0':
		return false, nil
	case '1':
		return true, nil
	}
	return false, fmt.Errorf("%q is neither '0' nor '1'", c)
}

// Marshal encodes a baseline as written to disk: the top levels one member per line, so
// that a change of version or summary reads as such in a diff, and each column on one
// line, which keeps the file compact.
func Marshal(b *Baseline) ([]byte, error) {
	return result.MarshalLayered(b, 4)
}

// Write writes b to dir/<workload>/<hardware>.json atomically (fsafe.WriteFile) and
// returns the path.
func Write(dir string, b *Baseline) (string, error) {
	for _, part := range []struct{ what, v string }{{"workload", b.Workload}, {"hardware", b.Hardware}} {
		if !nameable(part.v) {
			return "", fmt.Errorf("baseline %s %q cannot name a file", part.what, part.v)
		}
	}
	if strings.HasSuffix(b.Hardware, sweepSuffix) {
		return "", fmt.Errorf("baseline hardware %q ends in %q, which names a sweep baseline's file", b.Hardware, sweepSuffix)
	}
	data, err := Marshal(b)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, filepath.FromSlash(RelPath(b.Workload, b.Hardware)))
	if err := fsafe.WriteFile(p, data); err != nil {
		return "", err
	}
	return p, nil
}

// Load reads and checks the baseline at path in fsys (a directory on disk, or a copy
// embedded in the binary). A file that is not a usable baseline yields a *FileError
// naming path; a missing file an error that matches fs.ErrNotExist.
func Load(fsys fs.FS, path string) (*Baseline, error) {
	data, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode parses and checks a baseline; name is used in errors.
func Decode(name string, data []byte) (*Baseline, error) {
	bad := func(format string, args ...any) error {
		return &FileError{Path: name, Reason: fmt.Sprintf(format, args...)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, bad("empty file, not a slogate baseline")
	}
	var probe struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, bad("truncated or corrupt JSON at offset %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
		case errors.As(err, &typ) && typ.Field == "":
			return nil, bad("not a slogate baseline (the JSON is %s, not an object)", typ.Value)
		case errors.As(err, &typ):
			return nil, bad("not a slogate baseline (schema is %s, not a string)", typ.Value)
		}
		return nil, bad("%v", err)
	}
	switch {
	case probe.Schema == nil:
		return nil, bad("not a slogate baseline (no schema field; expected %q)", BaselineSchema)
	case *probe.Schema == result.Schema:
		return nil, bad("a run record (schema %q), not a baseline (%q): make baselines from run records with `slogate baseline update`", result.Schema, BaselineSchema)
	case *probe.Schema != BaselineSchema && strings.HasPrefix(*probe.Schema, "slogate.baseline/"):
		return nil, bad("a baseline this tool cannot read (schema %q; this tool reads %q)", *probe.Schema, BaselineSchema)
	case *probe.Schema != BaselineSchema:
		return nil, bad("not a slogate baseline (schema %q; expected %q)", *probe.Schema, BaselineSchema)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, bad("field %s: a JSON %s cannot be a %s (offset %d)", typ.Field, typ.Value, typ.Type, typ.Offset)
		}
		return nil, bad("%v", err)
	}
	switch {
	case b.Workload == "":
		return nil, bad("baseline has no workload name")
	case b.WorkloadHash == "":
		return nil, bad("baseline has no workload_hash")
	case b.Hardware == "":
		return nil, bad("baseline has no hardware")
	case len(b.Trials) == 0:
		return nil, bad("baseline has no trials")
	case b.ITLSketch.Gamma != SketchGamma:
		return nil, bad("ITL sketch with gamma %v; this tool reads gamma %v", b.ITLSketch.Gamma, SketchGamma)
	}
	if b.Noise != nil {
		for _, m := range b.Noise.Metrics {
			for _, v := range []float64{m.RunSD, m.WithinSD} {
				if !(v >= 0) || math.IsInf(v, 0) {
					return nil, bad("noise: metric %q has a spread of %v; want a finite number ≥ 0", m.Metric, v)
				}
			}
			if m.DF < 0 {
				return nil, bad("noise: metric %q has %d degrees of freedom; want ≥ 0", m.Metric, m.DF)
			}
		}
	}
	for i := range b.Trials {
		r, err := b.Trials[i].decode()
		if err != nil {
			return nil, bad("trial %d: %v", i+1, err)
		}
		b.runs = append(b.runs, r)
	}
	return &b, nil
}

// Store is where baselines are looked up: a directory on disk, or a copy embedded in the
// binary.
type Store struct {
	// FS holds the baselines directory at its root.
	FS fs.FS
	// Dir is the directory as a person should read it in paths and messages.
	Dir string
}

// DirStore is the baselines directory dir on disk.
func DirStore(dir string) Store { return Store{FS: fsafe.DirFS(dir), Dir: dir} }

// Path is the path of a baseline as shown to a person.
func (s Store) Path(workload, hardware string) string {
	return filepath.Join(s.Dir, filepath.FromSlash(RelPath(workload, hardware)))
}

// Lookup loads the baseline of workload on hardware. A missing file is not an error: it
// returns nil and the path where the baseline would be. A file that cannot be used, or
// that holds another workload's or hardware's baseline, is a *FileError naming it.
//
// A hardware key never ends in ".sweep": <hardware>.sweep.json is the sweep baseline
// beside the run baseline (LookupSweep), so a lister of *.json files that takes
// "h100.sweep" for a hardware key finds no run baseline there rather than a bad file.
func (s Store) Lookup(workload, hardware string) (*Baseline, string, error) {
	shown := s.Path(workload, hardware)
	if strings.HasSuffix(hardware, sweepSuffix) {
		return nil, shown, nil
	}
	b, err := s.load(RelPath(workload, hardware))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, shown, nil
	case err != nil:
		return nil, shown, err
	case b.Workload != workload:
		return nil, shown, &FileError{Path: shown, Reason: fmt.Sprintf("holds the baseline of workload %q, not %q: a file copied into the wrong directory?", b.Workload, workload)}
	case b.Hardware != hardware:
		return nil, shown, &FileError{Path: shown, Reason: fmt.Sprintf("holds the baseline of hardware %q, not %q: a file copied under the wrong name?", b.Hardware, hardware)}
	}
	return b, shown, nil
}

// load is Load with errors naming the file as a person sees it.
func (s Store) load(rel string) (*Baseline, error) {
	if s.FS == nil {
		return nil, fs.ErrNotExist
	}
	b, err := Load(s.FS, rel)
	var fe *FileError
	if errors.As(err, &fe) {
		fe.Path = filepath.Join(s.Dir, filepath.FromSlash(rel))
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && !errors.Is(err, fs.ErrNotExist) {
		pe.Path = filepath.Join(s.Dir, filepath.FromSlash(rel))
	}
	return b, err
}

// nameable says whether a workload or hardware name can be a path element of a baseline.
func nameable(v string) bool {
	return v != "" && v != "." && v != ".." && !strings.ContainsAny(v, `/\`+"\x00")
}

// sweepSuffix ends the name of a sweep baseline, before ".json".
const sweepSuffix = ".sweep"

// SweepRelPath is where the sweep baseline of a workload on a hardware lives under the
// baselines directory, beside its run baseline, slash-separated.
func SweepRelPath(workload, hardware string) string {
	return path.Join(workload, hardware+sweepSuffix+".json")
}

// SweepPath is the path of a sweep baseline as shown to a person.
func (s Store) SweepPath(workload, hardware string) string {
	return filepath.Join(s.Dir, filepath.FromSlash(SweepRelPath(workload, hardware)))
}

// SweepHardwareOf is the hardware a sweep is filed under: its Hardware, else "cpu" (as
// HardwareOf a run record).
func SweepHardwareOf(sw *result.Sweep) string {
	if sw.Hardware == "" {
		return "cpu"
	}
	return sw.Hardware
}

// LookupSweep loads the sweep baseline of workload on hardware: a sweep record kept as
// slogate sweep wrote it. A missing file is not an error: it returns nil and the path
// where it would be. A file that is not a sweep record, or that holds another workload's
// or hardware's sweep, is a *FileError naming it.
func (s Store) LookupSweep(workload, hardware string) (*result.Sweep, string, error) {
	rel := SweepRelPath(workload, hardware)
	shown := s.SweepPath(workload, hardware)
	if s.FS == nil {
		return nil, shown, nil
	}
	data, err := fs.ReadFile(s.FS, rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, shown, nil
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = shown
		}
		return nil, shown, err
	}
	sw, err := result.DecodeSweep(shown, data)
	var fe *result.FormatError
	switch {
	case errors.As(err, &fe):
		return nil, shown, &FileError{Path: shown, Reason: fe.Reason}
	case err != nil:
		return nil, shown, err
	case sw.Workload != workload:
		return nil, shown, &FileError{Path: shown, Reason: fmt.Sprintf("holds the sweep of workload %q, not %q: a file copied into the wrong directory?", sw.Workload, workload)}
	case SweepHardwareOf(sw) != hardware:
		return nil, shown, &FileError{Path: shown, Reason: fmt.Sprintf("holds the sweep of hardware %q, not %q: a file copied under the wrong name?", SweepHardwareOf(sw), hardware)}
	}
	return sw, shown, nil
}

// WriteSweep writes sw, as it is, to dir/<workload>/<hardware>.sweep.json atomically and
// returns the path. It does not judge the sweep: FitSweep says whether it can be a
// baseline.
func WriteSweep(dir string, sw *result.Sweep) (string, error) {
	hw := SweepHardwareOf(sw)
	for _, part := range []struct{ what, v string }{{"workload", sw.Workload}, {"hardware", hw}} {
		if !nameable(part.v) {
			return "", fmt.Errorf("sweep %s %q cannot name a file", part.what, part.v)
		}
	}
	p := filepath.Join(dir, filepath.FromSlash(SweepRelPath(sw.Workload, hw)))
	if err := result.WriteSweep(p, sw); err != nil {
		return "", err
	}
	return p, nil
}

// UnfitSweep says why a sweep has no capacity to compare, as a baseline or as a
// candidate; "" when it has one. A client-limited sweep measured the load generator, not
// the engine; a failed one did not finish.
func UnfitSweep(sw *result.Sweep) string {
	switch {
	case sw.Bound == result.BoundClient:
		at := ""
		for _, st := range sw.Steps {
			if st.Verdict == result.StepClient {
				at = " at " + fmtRPS(st.RateRPS) + " req/s"
				if st.Reason != "" {
					at += " (" + st.Reason + ")"
				}
			}
		}
		return "the load generator, not the engine, limited the sweep" + at + ": it has no capacity to report; rerun it on a less loaded machine"
	case sw.Failure != "":
		return "the sweep failed: " + sw.Failure
	case sw.Bound == "":
		return "the sweep has no bound: it did not finish"
	}
	return ""
}

func fmtRPS(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// CheckAppend checks, before calibrate --append measures anything, that workload has a
// baseline to append to and that every baseline of it loads: a truncated or unreadable
// file is found now, not after the runs. The baseline of the hardware the runs will be
// measured on is looked up again once the first run names it.
func (s Store) CheckAppend(workload string) error {
	bs, _, err := s.Baselines(workload)
	if err != nil {
		return err
	}
	if len(bs) == 0 {
		return &FileError{Path: filepath.Join(s.Dir, workload), Reason: fmt.Sprintf("no baseline of %s to append to: run slogate calibrate without --append first", workload)}
	}
	return nil
}

// Baselines loads every run baseline of workload (one per hardware, by file name) and
// returns them with their paths as shown; the first that does not load is an error
// naming it.
func (s Store) Baselines(workload string) ([]*Baseline, []string, error) {
	names, err := baselineFiles(s, workload)
	if err != nil {
		return nil, nil, err
	}
	var bs []*Baseline
	var shown []string
	for _, n := range names {
		rel := path.Join(workload, n)
		b, err := s.load(rel)
		if err != nil {
			return nil, nil, err
		}
		bs = append(bs, b)
		shown = append(shown, filepath.Join(s.Dir, filepath.FromSlash(rel)))
	}
	return bs, shown, nil
}
