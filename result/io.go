package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// FormatError says that a file is not a readable run record: not JSON, cut short, another
// schema, or a field of the wrong type. It is bad input (exit code 2), unlike an I/O error.
type FormatError struct {
	Path   string
	Reason string
}

func (e *FormatError) Error() string { return e.Path + ": " + e.Reason }

// expandDepth is how deep Marshal expands JSON containers one member per line: the top
// level and its members (summary, environment, the list of requests), so that a person can
// read and diff a record, while each request (with its gaps) and each percentile block
// stays on one line, keeping a 10,000-request record compact.
const expandDepth = 2

// Marshal encodes a record as written to disk. A record without a schema gets Schema.
// A float that is not a finite number (NaN, ±Inf: JSON has none) never makes it fail: it
// is replaced with 0 in r itself, so that what is in memory is what is on disk, and r
// gets a note naming it (see ReplaceNonFinite).
func Marshal(r *Record) ([]byte, error) {
	if note := NonFiniteNote(ReplaceNonFinite(r)); note != "" {
		r.Notes = append(r.Notes, "record: "+note)
	}
	rec := *r
	switch rec.Schema {
	case "":
		rec.Schema = Schema
	case Schema:
	default:
		return nil, fmt.Errorf("record has schema %q; this tool writes %q", rec.Schema, Schema)
	}
	if rec.Requests == nil {
		rec.Requests = []Request{} // "requests": [] rather than null
	}
	return MarshalLayered(&rec, expandDepth)
}

// MarshalLayered encodes v as JSON with the containers opened at depth ≤ depth expanded
// one member per line and deeper ones kept on one line: readable and diffable at the top,
// compact where the bulk is. HTML characters are not escaped (error texts from servers
// stay readable). Non-finite floats are written as 0 (ReplaceNonFinite, in place when v
// is a pointer): callers that keep notes say so with NonFiniteNote first.
func MarshalLayered(v any, depth int) ([]byte, error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		ReplaceNonFinite(v)
	} else if rv.IsValid() {
		c := reflect.New(rv.Type())
		c.Elem().Set(rv)
		ReplaceNonFinite(c.Interface())
		v = c.Interface()
	}
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	src := bytes.TrimRight(compact.Bytes(), "\n")
	out := bytes.NewBuffer(make([]byte, 0, len(src)+len(src)/8))
	indent(out, src, depth)
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// indent writes compact JSON src to dst with containers opened at depth ≤ maxDepth
// expanded one member per line (two spaces a level) and deeper ones left compact.
func indent(dst *bytes.Buffer, src []byte, maxDepth int) {
	newline := func(depth int) {
		dst.WriteByte('\n')
		for range depth {
			dst.WriteString("  ")
		}
	}
	depth := 0
	inString, escaped := false, false
	for i, c := range src {
		if inString {
			dst.WriteByte(c)
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
		switch c {
		case '"':
			inString = true
			dst.WriteByte(c)
		case '{', '[':
			depth++
			dst.WriteByte(c)
			empty := i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']')
			if depth <= maxDepth && !empty {
				newline(depth)
			}
		case '}', ']':
			if depth <= maxDepth && src[i-1] != '{' && src[i-1] != '[' {
				newline(depth - 1)
			}
			dst.WriteByte(c)
			depth--
		case ',':
			dst.WriteByte(c)
			if depth <= maxDepth {
				newline(depth)
			}
		case ':':
			dst.WriteByte(c)
			if depth <= maxDepth {
				dst.WriteByte(' ')
			}
		default:
			dst.WriteByte(c)
		}
	}
}

// Write writes r to path atomically (fsafe.WriteFile).
func Write(path string, r *Record) error {
	data, err := Marshal(r)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return fsafe.WriteFile(path, data)
}

// Read reads and checks one run record. A file that is not a run record yields a
// *FormatError naming it; an I/O failure is returned as it is.
func Read(path string) (*Record, error) {
	data, err := fsafe.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode parses a run record from data; name is used in errors.
func Decode(name string, data []byte) (*Record, error) {
	bad := func(format string, args ...any) error {
		return &FormatError{Path: name, Reason: fmt.Sprintf(format, args...)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, bad("empty file, not a slogate run record")
	}
	// Probe the schema first, so that another kind of JSON file is named as such rather
	// than failing on whichever field happens not to fit.
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
			return nil, bad("not a slogate run record (the JSON is %s, not an object)", article(typ.Value))
		case errors.As(err, &typ):
			return nil, bad("not a slogate run record (schema is %s, not a string)", article(typ.Value))
		}
		return nil, bad("%v", err)
	}
	switch {
	case probe.Schema == nil:
		return nil, bad("not a slogate run record (no schema field; expected %q)", Schema)
	case *probe.Schema != Schema && strings.HasPrefix(*probe.Schema, "slogate.run/"):
		return nil, bad("not a slogate run record this tool can read (schema %q; this tool reads %q)", *probe.Schema, Schema)
	case *probe.Schema != Schema:
		return nil, bad("not a slogate run record (schema %q; expected %q)", *probe.Schema, Schema)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, bad("field %s: a JSON %s cannot be a %s (offset %d)", typ.Field, typ.Value, typ.Type, typ.Offset)
		}
		return nil, bad("%v", err)
	}
	if err := rec.checkTimelines(); err != nil {
		return nil, bad("%v", err)
	}
	return &rec, nil
}

// timelineSlackUS is how far out of order two events of one request may be.
const timelineSlackUS = 1000

// checkTimelines refuses what no measurement can produce, as the baseline reader does:
// a window that ends before it starts, a successful request whose first token comes
// before it was scheduled or whose events run backwards, a negative gap or count. Judged,
// such a record would pass for a measurement; it is a broken file.
//
// Events are ordered within timelineSlackUS: records imported from other tools round
// each time on its own.
func (r *Record) checkTimelines() error {
	if r.Window.EndUS < r.Window.StartUS {
		return fmt.Errorf("window ends (end_us %d) before it starts (start_us %d)", r.Window.EndUS, r.Window.StartUS)
	}
	for k := range r.Requests {
		q := &r.Requests[k]
		at := func(format string, args ...any) error {
			return fmt.Errorf("requests[%d] (i %d): %s", k, q.I, fmt.Sprintf(format, args...))
		}
		switch {
		case q.Chunks < 0 || q.OutputTokens < 0 || q.PromptTokens < 0:
			return at("negative count (chunks %d, output_tokens %d, prompt_tokens %d)", q.Chunks, q.OutputTokens, q.PromptTokens)
		case len(q.ITLUS) > 0 && len(q.ITLUS) >= q.Chunks:
			return at("%d gaps between %d content chunks", len(q.ITLUS), q.Chunks)
		}
		for j, g := range q.ITLUS {
			if g < 0 {
				return at("itl_us[%d] is %d, a negative gap", j, g)
			}
		}
		if q.Error != "" {
			continue // a failed request may stop anywhere
		}
		switch {
		case q.FirstUS < q.SchedUS-timelineSlackUS:
			return at("first_us %d before sched_us %d", q.FirstUS, q.SchedUS)
		case q.LastUS < q.FirstUS-timelineSlackUS:
			return at("last_us %d before first_us %d", q.LastUS, q.FirstUS)
		case q.EndUS < q.LastUS-timelineSlackUS:
			return at("end_us %d before last_us %d", q.EndUS, q.LastUS)
		}
	}
	return nil
}

func article(jsonKind string) string {
	if jsonKind == "array" || jsonKind == "object" {
		return "an " + jsonKind
	}
	return "a " + jsonKind
}

// ReadSweepsDir reads every sweep record (*.json with schema slogate.sweep/v1) of dir, not
// its subdirectories (where a sweep keeps its steps), in name order. Other files are
// passed over: they are ReadDir's to read or refuse. A file that claims the sweep schema
// but does not decode as one is a *FormatError naming it.
func ReadSweepsDir(dir string) ([]*Sweep, error) {
	names, err := jsonNames(dir)
	if err != nil {
		return nil, err
	}
	var out []*Sweep
	for _, n := range names {
		path := filepath.Join(dir, n)
		data, err := fsafe.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var probe struct {
			Schema string `json:"schema"`
		}
		if json.Unmarshal(data, &probe) != nil || probe.Schema != SweepSchema {
			continue
		}
		s, err := DecodeSweep(path, data)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// jsonNames are the names of the *.json files of dir, sorted.
func jsonNames(dir string) ([]string, error) {
	entries, err := fsafe.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// OtherOutputs are the schemas of the files slogate writes beside run records in a
// results directory (the gate's result, a sweep's summary): ReadDir passes over them.
var OtherOutputs = []string{"slogate.gate/v1", "slogate.sweep/v1", "slogate.report-meta/v1", ManifestSchema}

// ReadDir reads every *.json file of dir (not its subdirectories), in name order. Every
// such file must be a run record, or one of slogate's OtherOutputs: anything else yields a
// *FormatError naming it, rather than a baseline or result silently left out of a
// comparison.
func ReadDir(dir string) ([]*Record, error) {
	recs, _, err := readDir(dir)
	return recs, err
}

// readDir is ReadDir, with the file name of each record.
func readDir(dir string) ([]*Record, []string, error) {
	names, err := jsonNames(dir)
	if err != nil {
		return nil, nil, err
	}
	recs := make([]*Record, 0, len(names))
	var files []string
	for _, n := range names {
		path := filepath.Join(dir, n)
		data, err := fsafe.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		if schema, err := SchemaOf(path, data); err == nil && slices.Contains(OtherOutputs, schema) {
			continue
		}
		r, err := Decode(path, data)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, r)
		files = append(files, n)
	}
	return recs, files, nil
}
