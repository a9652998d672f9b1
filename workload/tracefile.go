package workload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// traceCut is the part of a trace that is replayed, and how fast: entries at trace time
// t in [start, start+window) (window 0: to the end) are sent at (t - start) × scale.
type traceCut struct {
	start, window time.Duration
	scale         float64
}

func (c traceCut) keep(t time.Duration) (time.Duration, bool) {
	if t < c.start || (c.window > 0 && t-c.start >= c.window) {
		return 0, false
	}
	return time.Duration(math.Round(float64(t-c.start) * c.scale)), true
}

func (c traceCut) offsets(ts []time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(ts))
	for _, t := range ts {
		if o, ok := c.keep(t); ok {
			out = append(out, o)
		}
	}
	return out
}

// fileErrs reports errors at a data file's own line and column, sorted at the key that
// names the file, capped at maxFileErrors.
type fileErrs struct {
	d     *decoder
	full  string
	n     *yaml.Node
	count int
}

func (e *fileErrs) add(line, col int, format string, args ...any) {
	e.count++
	if e.count <= maxFileErrors {
		e.d.add(Error{File: e.full, Line: line, Col: max(col, 1), Msg: fmt.Sprintf(format, args...)}, e.n.Line, e.n.Column)
	}
}

func (e *fileErrs) done(path string) bool {
	if e.count > maxFileErrors {
		e.d.add(Error{File: e.full, Msg: fmt.Sprintf("%d more errors not shown", e.count-maxFileErrors)}, e.n.Line, e.n.Column)
	}
	if e.count > 0 {
		e.d.bad[path] = true
		return false
	}
	return true
}

// rawEntry is one entry of a trace with lengths before the cut: its trace time from the
// trace's first entry.
type rawEntry struct {
	at  time.Duration
	rec TraceRecord
}

// loadLengthTrace reads a trace with lengths (mooncake, azure, burstgpt), checks every
// line, and returns the records and offsets the cut keeps and the file's SHA-256.
func (d *decoder) loadLengthTrace(path string, n *yaml.Node, rel, format string, cut traceCut) ([]TraceRecord, []time.Duration, string) {
	full := d.resolvePath(rel)
	data, err := d.readFile(full)
	if err != nil {
		d.fail(path, n, "cannot read trace %s: %s", full, ioReason(err))
		return nil, nil, ""
	}
	sum := sha256.Sum256(data)
	fe := &fileErrs{d: d, full: full, n: n}
	var raw []rawEntry
	switch format {
	case TraceMooncake:
		raw = parseMooncake(data, fe)
	case TraceAzure:
		raw = parseTraceCSV(data, fe, azureColumns)
	case TraceBurstGPT:
		raw = parseTraceCSV(data, fe, burstColumns)
	}
	if !fe.done(path) {
		return nil, nil, ""
	}
	if len(raw) == 0 {
		d.fail(path, n, "the trace %s holds no requests", full)
		return nil, nil, ""
	}
	var recs []TraceRecord
	var offs []time.Duration
	for _, e := range raw {
		if o, ok := cut.keep(e.at); ok {
			recs = append(recs, e.rec)
			offs = append(offs, o)
		}
	}
	return recs, offs, hex.EncodeToString(sum[:])
}

// mooncakeLine is one line of a Mooncake trace (FAST'25 "Mooncake" release): timestamp
// in milliseconds, lengths in tokens, and the hash ids of the prompt's blocks.
type mooncakeLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
	TaskID       *taskID  `json:"task_id"`
}

func parseMooncake(data []byte, fe *fileErrs) []rawEntry {
	var out []rawEntry
	var first, prev float64
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m mooncakeLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			fe.add(ln, jsonCol(err), "invalid mooncake line: %s; expected {\"timestamp\": ms, \"input_length\": n, \"output_length\": n, \"hash_ids\": [...], \"task_id\": id (optional)}", jsonReason(err))
			continue
		}
		if dec.More() {
			fe.add(ln, int(dec.InputOffset())+1, "invalid mooncake line: more than one JSON object")
			continue
		}
		var missing []string
		if m.Timestamp == nil {
			missing = append(missing, "timestamp")
		}
		if m.InputLength == nil {
			missing = append(missing, "input_length")
		}
		if m.OutputLength == nil {
			missing = append(missing, "output_length")
		}
		if len(missing) > 0 {
			fe.add(ln, 1, "invalid mooncake line: missing %s", quoteList(missing))
			continue
		}
		ts := *m.Timestamp
		if !(ts >= 0) || math.IsInf(ts, 0) || ts > 1e15 {
			fe.add(ln, 1, "invalid timestamp %v: milliseconds from the trace's start, >= 0", ts)
			continue
		}
		if *m.InputLength < 0 || *m.OutputLength < 0 || *m.InputLength > math.MaxInt32 || *m.OutputLength > math.MaxInt32 {
			fe.add(ln, 1, "invalid lengths %d, %d: token counts are >= 0", *m.InputLength, *m.OutputLength)
			continue
		}
		if len(out) == 0 {
			first = ts
		} else if ts < prev {
			fe.add(ln, 1, "invalid timestamp %v: timestamps must be in ascending order (previous %v)", ts, prev)
			continue
		}
		var task string
		if m.TaskID != nil {
			task = string(*m.TaskID)
			if why := checkTaskID(task); why != "" {
				fe.add(ln, 1, "invalid mooncake line: %s", why)
				continue
			}
		}
		prev = ts
		out = append(out, rawEntry{
			at:  time.Duration(math.Round((ts - first) * 1e6)),
			rec: TraceRecord{Line: ln, Input: max(*m.InputLength, 1), Output: max(*m.OutputLength, 1), Blocks: m.HashIDs, Task: task},
		})
	}
	if err := sc.Err(); err != nil {
		fe.add(0, 0, "cannot read: %s", err)
	}
	return out
}

func jsonCol(err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return int(se.Offset)
	case errors.As(err, &te):
		return int(te.Offset)
	}
	return 1
}

func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%q is %s, expected %s", te.Field, te.Value, te.Type)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "the JSON object is not closed"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// csvColumns describes a CSV trace format: its published column names, which of them are
// read, and how a timestamp is read.
type csvColumns struct {
	format         string
	known          []string
	time, in, out  string
	parseTimestamp func(string) (float64, error) // seconds on some axis
}

// csvTaskColumn is the optional column of a CSV trace that groups its requests into
// tasks (workloads[].tasks by task_id); neither public trace has it.
const csvTaskColumn = "task_id"

// azureColumns: the Azure LLM inference traces (AzurePublicDataset, 2023 and 2024):
// TIMESTAMP as "2023-11-16 18:15:46.6805900", ContextTokens, GeneratedTokens.
var azureColumns = csvColumns{
	format: TraceAzure,
	known:  []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens", csvTaskColumn},
	time:   "TIMESTAMP", in: "ContextTokens", out: "GeneratedTokens",
	parseTimestamp: func(s string) (float64, error) {
		for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
			if t, err := time.Parse(layout, s); err == nil {
				return float64(t.UnixNano()) / 1e9, nil
			}
		}
		return 0, fmt.Errorf("expected a time such as \"2023-11-16 18:15:46.6805900\"")
	},
}

// burstColumns: BurstGPT (HPMLL/BurstGPT): Timestamp in seconds from the trace's start,
// Model, Request tokens, Response tokens, Total tokens, Log Type.
var burstColumns = csvColumns{
	format: TraceBurstGPT,
	known:  []string{"Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type", csvTaskColumn},
	time:   "Timestamp", in: "Request tokens", out: "Response tokens",
	parseTimestamp: func(s string) (float64, error) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) || v > 1e12 {
			return 0, fmt.Errorf("expected seconds from the trace's start, >= 0")
		}
		return v, nil
	},
}

func parseTraceCSV(data []byte, fe *fileErrs, cols csvColumns) []rawEntry {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		if err == io.EOF {
			fe.add(1, 1, "the %s trace is empty; expected a header with %s", cols.format, quoteList(cols.known))
		} else {
			fe.add(csvLine(err), csvColumn(err), "invalid CSV: %s", csvReason(err))
		}
		return nil
	}
	header = slices.Clone(header) // the reader reuses its record
	idx := map[string]int{}
	bad := false
	for i, h := range header {
		name := strings.TrimSpace(h)
		if !containsFold(cols.known, name) {
			_, col := r.FieldPos(i)
			fe.add(1, col, "unknown column %q in the %s trace header; its columns are %s", h, cols.format, quoteList(cols.known))
			bad = true
			continue
		}
		idx[strings.ToLower(name)] = i
	}
	for _, want := range []string{cols.time, cols.in, cols.out} {
		if _, ok := idx[strings.ToLower(want)]; !ok {
			fe.add(1, 1, "the %s trace header lacks the column %q", cols.format, want)
			bad = true
		}
	}
	if bad {
		return nil
	}
	ti, ii, oi := idx[strings.ToLower(cols.time)], idx[strings.ToLower(cols.in)], idx[strings.ToLower(cols.out)]
	ki, hasTask := idx[csvTaskColumn]
	var out []rawEntry
	var first, prev float64
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fe.add(csvLine(err), csvColumn(err), "invalid CSV: %s", csvReason(err))
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				continue
			}
			break // a quoting error leaves the reader lost
		}
		ln, _ := r.FieldPos(0)
		field := func(i int) (string, int) {
			_, col := r.FieldPos(i)
			return strings.TrimSpace(rec[i]), col
		}
		ts, tcol := field(ti)
		t, err := cols.parseTimestamp(ts)
		if err != nil {
			fe.add(ln, tcol, "invalid %s %q: %s", cols.time, ts, err)
			continue
		}
		lens := [2]int{}
		ok := true
		for k, i := range []int{ii, oi} {
			s, col := field(i)
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || v > math.MaxInt32 {
				fe.add(ln, col, "invalid %s %q: expected a token count, an integer >= 0", header[i], s)
				ok = false
				break
			}
			lens[k] = v
		}
		if !ok {
			continue
		}
		if len(out) == 0 {
			first = t
		} else if t < prev {
			fe.add(ln, tcol, "invalid %s %q: timestamps must be in ascending order", cols.time, ts)
			continue
		}
		var task string
		if hasTask {
			var col int
			task, col = field(ki)
			if why := checkTaskID(task); why != "" {
				fe.add(ln, col, "invalid %s: %s", csvTaskColumn, why)
				continue
			}
		}
		prev = t
		out = append(out, rawEntry{
			at:  time.Duration(math.Round((t - first) * 1e9)),
			rec: TraceRecord{Line: ln, Input: max(lens[0], 1), Output: max(lens[1], 1), Task: task},
		})
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

func csvLine(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return 0
}

func csvColumn(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Column
	}
	return 0
}

func csvReason(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
