// Package interop imports other benchmark tools' output as slogate run records
// (slogate.run/v1) and exports run records in shapes other tools read. It reads files
// handed to it and knows nothing of HTTP or GitHub.
//
// Each importer reads one pinned output shape, taken from the tool's own source, and
// refuses another shape with a *FormatError naming the field:
//
//   - vLLM: the JSON `vllm bench serve --save-result --save-detailed` writes
//     (vllm/benchmarks/serve.py at commit def9ce85ba10, with the per-request arrays
//     ttfts, itls, input_lens, output_lens and errors); see VLLMFormat.
//   - guidellm: the benchmarks.json report (GenerativeBenchmarksReport of
//     src/guidellm/benchmark/output.py and benchmark.py at commit f3b950067 of
//     neuralmagic/guidellm: benchmarks[].requests.{successful,errored,incomplete});
//     see GuideLLMFormat.
//   - AIPerf: profile_export.jsonl (one MetricRecordInfo a line: metadata.request_start_ns,
//     metrics.ttft, metrics.inter_chunk_latency, ...) with profile_export_aiperf.json
//     beside it (JsonExportData, schema_version 1.3); see AIPerfFormat.
//
// An imported record carries a result.Source: the tool, its version, the file's
// SHA-256, what TTFT is measured from and what the source could not give. Its workload
// hash is derived from what the source pins (dataset, lengths, rate, seed, model) and
// the SLO applied, so that two imports of one benchmark compare and a changed one is
// incomparable. Metrics are computed by result.Judge and result.Summarize, as for a
// native run.
package interop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// Tools that can be imported.
const (
	ToolVLLM     = "vllm"
	ToolGuideLLM = "guidellm"
	ToolAIPerf   = "aiperf"
)

// Tools lists the importable tools.
var Tools = []string{ToolVLLM, ToolGuideLLM, ToolAIPerf}

// hashSchema names the canonical form an imported workload hash is computed over.
const hashSchema = "slogate-import-hash/1"

// FormatError says that a file is not in the shape an importer reads: bad input (exit
// code 2). Line is 1-based where known (0 otherwise); Field names the offending field as
// a path (benchmarks[0].requests.successful[3].first_token_time).
type FormatError struct {
	Path   string
	Line   int
	Field  string
	Reason string
}

func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Options are what an import needs besides the file.
type Options struct {
	// Config and Workload name the slogate workload the records are filed under; its
	// SLO judges every imported request and its dispatch-lag bound applies.
	Config   *workload.File
	Workload *workload.Workload
	// Hardware is the hardware id the record is filed under (baselines/<w>/<hw>.json).
	Hardware string
	// ToolVersion is slogate's own version, recorded as for a native run.
	ToolVersion string
	// Benchmark selects one benchmark of a file that holds several (a guidellm report),
	// 0-based; -1 means the only one (a file with several is then refused, listing them).
	Benchmark int
}

// Import reads one file of tool and returns its records. path names the file in
// messages and in the record's provenance; data is its content; readBeside reads a
// companion file in the same directory (AIPerf's summary JSON) by base name.
func Import(tool, path string, data []byte, readBeside func(name string) ([]byte, error), opt Options) ([]*result.Record, error) {
	if opt.Workload == nil {
		return nil, fmt.Errorf("interop: no workload to file the import under")
	}
	var ims []*imported
	var err error
	var nonFinite int
	digest := sha(data)
	if tool == ToolVLLM || tool == ToolGuideLLM {
		// Both write with Python's json.dump, which writes NaN and Infinity bare. The
		// replacement keeps every newline, so lines in messages stay right.
		data, nonFinite = pythonJSON(data)
	}
	switch tool {
	case ToolVLLM:
		ims, err = parseVLLM(path, data)
	case ToolGuideLLM:
		ims, err = parseGuideLLM(path, data, opt.Benchmark)
	case ToolAIPerf:
		ims, err = parseAIPerf(path, data, readBeside)
	default:
		return nil, fmt.Errorf("unknown tool %q; expected one of %q", tool, Tools)
	}
	if err != nil {
		return nil, err
	}
	recs := make([]*result.Record, len(ims))
	for i, im := range ims {
		if tool != ToolAIPerf {
			im.src.SHA256 = digest // of the file as given, not as read
		}
		if nonFinite > 0 {
			im.notes = append(im.notes, fmt.Sprintf("%d non-finite numbers (NaN, Infinity) in the file were read as null", nonFinite))
		}
		recs[i] = im.record(opt)
	}
	return recs, nil
}

// imported is what a parser extracts, before it becomes a record.
type imported struct {
	src      result.Source
	identity map[string]any
	model    string
	api      string
	mode     string // open | closed
	start    time.Time
	window   result.Window
	reqs     []result.Request
	openLoop bool // the requests carry scheduled times to measure dispatch lag against
	env      map[string]string
	notes    []string
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// record turns a parse into a run record: every request judged against the workload's
// SLO, the summary computed by result.Summarize, the hash derived from the identity.
func (im *imported) record(opt Options) *result.Record {
	w := opt.Workload
	rec := &result.Record{
		Schema: result.Schema, Workload: w.Name, Model: im.model, API: im.api, Mode: im.mode,
		Start: im.start.UTC(), ToolVersion: opt.ToolVersion, Hardware: opt.Hardware,
		Window: im.window, Calibration: result.Calibration{Method: "imported"},
		SLOAttainmentTarget: w.SLO.Attainment, MaxDispatchLagMS: float64(w.MaxDispatchLag) / 1e6,
		Requests: im.reqs,
	}
	if opt.Config != nil {
		rec.Config = opt.Config.Path
	}
	for _, t := range w.SLO.Targets {
		rec.SLO = append(rec.SLO, result.SLOTarget{Metric: t.Metric, Percentile: t.Percentile, LimitMS: float64(t.Limit) / 1e6})
	}
	for i := range rec.Requests {
		result.Judge(&rec.Requests[i], rec.SLO)
	}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{
		Window: rec.Window, SLO: rec.SLO, AttainmentTarget: w.SLO.Attainment,
		MaxDispatchLag: w.MaxDispatchLag, OpenLoop: im.openLoop,
	})
	src := im.src
	if _, ok := src.Lacks("in_flight"); ok {
		// Without send times every request would seem in flight at once.
		rec.Summary.InFlight = result.InFlight{}
	}
	id := map[string]any{"schema": hashSchema, "tool": src.Tool, "source": im.identity, "slo": sloForm(rec.SLO, w.SLO.Attainment)}
	canon, err := json.Marshal(id)
	if err != nil {
		panic("interop: identity does not marshal: " + err.Error())
	}
	src.Identity = string(canon)
	rec.WorkloadHash = "sha256:" + sha(canon)
	rec.Source = &src
	rec.Environment = map[string]string{"import.tool": src.Tool, "tool.version": opt.ToolVersion}
	if src.ToolVersion != "" {
		rec.Environment["import.version"] = src.ToolVersion
	}
	if im.model != "" {
		rec.Environment["model.id"] = im.model
	}
	for k, v := range im.env {
		rec.Environment[k] = v
	}
	rec.Notes = append(rec.Notes, im.notes...)
	rec.Notes = append(rec.Notes, "provenance: "+src.Line())
	return rec
}

func sloForm(slo []result.SLOTarget, attainment float64) []any {
	out := []any{attainment}
	for _, t := range slo {
		out = append(out, []any{t.Metric, t.Percentile, t.LimitMS})
	}
	return out
}

// us converts seconds to whole microseconds.
func us(s float64) int64 { return int64(math.Round(s * 1e6)) }

// errorReason maps a tool's error text to a slogate error reason (engine.Err* names
// where one fits).
func errorReason(text string, code int) string {
	l := strings.ToLower(text)
	switch {
	case code == 499 || strings.Contains(l, "cancel"):
		return "canceled"
	case strings.Contains(l, "timeout") || strings.Contains(l, "timed out"):
		return "timeout"
	case code >= 400 && code < 600:
		return fmt.Sprintf("http_%d", code)
	case strings.Contains(l, "connect"):
		return "connect"
	}
	return "error"
}

// detail keeps the first line of an error text, cleaned and bounded.
func detail(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.LastIndex(text, "\n"); i >= 0 && strings.HasPrefix(text, "Traceback") {
		text = strings.TrimSpace(text[i+1:]) // a Python traceback ends with the exception
	} else if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	text = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, text)
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	return text
}

// canonical decodes raw JSON into plain values (maps sort their keys when marshalled
// again), dropping keys that do not change what is sent (URLs, keys, output paths).
func canonical(raw json.RawMessage, drop ...string) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	return dropKeys(v, drop)
}

func dropKeys(v any, drop []string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if slices.Contains(drop, k) {
				delete(x, k)
				continue
			}
			x[k] = dropKeys(e, drop)
		}
	case []any:
		for i := range x {
			x[i] = dropKeys(x[i], drop)
		}
	}
	return v
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// jsonError turns a decoding error into a FormatError with a line.
func jsonError(path string, data []byte, base int64, err error) *FormatError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case asSyntax(err, &syn):
		return &FormatError{Path: path, Line: lineAt(data, base+syn.Offset), Reason: "not valid JSON: " + strings.TrimPrefix(syn.Error(), "json: ")}
	case asType(err, &typ):
		return &FormatError{Path: path, Line: lineAt(data, base+typ.Offset), Field: typ.Field, Reason: fmt.Sprintf("a JSON %s where the format has a %s", typ.Value, typ.Type)}
	}
	return &FormatError{Path: path, Reason: err.Error()}
}

// pythonJSON rewrites the non-finite numbers Python's json.dump writes by default (NaN,
// Infinity, -Infinity: not JSON) as null, outside strings, and counts them, so that a
// file with one bogus value is read, not refused as corrupt.
func pythonJSON(data []byte) ([]byte, int) {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data, 0
	}
	out := make([]byte, 0, len(data))
	n := 0
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		replaced := false
		for _, tok := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(data[i:], []byte(tok)) {
				out = append(out, "null"...)
				i += len(tok) - 1
				n++
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, c)
		}
	}
	return out, n
}
