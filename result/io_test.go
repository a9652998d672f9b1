package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// sampleRecord is a whole record built from the scenario, as the CLI would write it.
func sampleRecord() *Record {
	reqs := scenario()
	for i := range reqs {
		Judge(&reqs[i], scenarioSLO)
	}
	in := scenarioInput()
	return &Record{
		Schema:       Schema,
		Workload:     "chat-steady",
		WorkloadHash: "sha256:0123abcd",
		Config:       "slogate.yaml",
		Target:       "http://127.0.0.1:8000",
		API:          "chat",
		Model:        "stories260K",
		Mode:         "open",
		Start:        time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		ToolVersion:  "v0.1.0",
		Window:       in.Window,
		Calibration:  Calibration{Method: "tokenize", CharsPerToken: 4.1},
		SLO:          scenarioSLO,
		// Server text travels as it came: the encoder must not mangle <, > or &.
		Environment:         map[string]string{"engine.name": "vllm", "engine.version": "0.8.5 <rc&1>"},
		SLOAttainmentTarget: 0.99,
		MaxDispatchLagMS:    1,
		Summary:             Summarize(reqs, in),
		Warmup:              WarmupSummaryOf(reqs[:1]),
		Requests:            reqs,
		Series: Series{
			InFlight: []Sample{{TUS: 0, V: 1}, {TUS: 500_000, V: 2}},
			Engine:   map[string][]Sample{"queue_depth": {{TUS: 0, V: 0}}},
		},
		Notes: []string{"a note with \"quotes\", {braces} and [brackets]"},
	}
}

func TestMarshalGolden(t *testing.T) {
	got, err := Marshal(sampleRecord())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "record.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./result/ -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("Marshal differs from %s (-want +got):\n%s", golden, d)
	}
	// Re-indenting must only move whitespace.
	var a, b bytes.Buffer
	plain, _ := json.Marshal(sampleRecord())
	if err := json.Compact(&a, got); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	json.Compact(&b, plain)
	var x, y any
	json.Unmarshal(a.Bytes(), &x)
	json.Unmarshal(b.Bytes(), &y)
	if d := cmp.Diff(y, x); d != "" {
		t.Errorf("indented output decodes differently (-plain +indented):\n%s", d)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "nested") // Write creates it
	path := filepath.Join(dir, "chat-steady.json")
	rec := sampleRecord()
	if err := Write(path, rec); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rec, got); d != "" {
		t.Errorf("round trip differs (-wrote +read):\n%s", d)
	}

	// Overwriting replaces the file whole and leaves no temporary file behind.
	rec.Workload = "second"
	if err := Write(path, rec); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "chat-steady.json" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only chat-steady.json", names)
	}
	if got, _ := Read(path); got == nil || got.Workload != "second" {
		t.Errorf("overwrite not visible: %+v", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (a record is shared, not secret)", fi.Mode().Perm())
	}
}

func TestWriteDefaultsAndRefusals(t *testing.T) {
	dir := t.TempDir()
	// A record without schema or requests is written with both.
	path := filepath.Join(dir, "a.json")
	if err := Write(path, &Record{Workload: "w"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"schema": "slogate.run/v1"`)) || !bytes.Contains(data, []byte(`"requests": []`)) {
		t.Errorf("defaults missing:\n%s", data)
	}
	// Another schema is refused, and nothing is left on disk.
	bad := filepath.Join(dir, "b.json")
	if err := Write(bad, &Record{Schema: "other/v9"}); err == nil {
		t.Error("Write accepted a record of another schema")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("refused write left files: %d entries", len(entries))
	}
}

func TestReadFormatErrors(t *testing.T) {
	good, err := Marshal(sampleRecord())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		content []byte
		reason  string // a substring of the reason
	}{
		// Cut short by a full disk or a killed job.
		{"truncated", good[:len(good)/2], "truncated or corrupt JSON at offset"},
		// A workload file passed where a record was expected.
		{"yaml", []byte("version: 1\nworkloads: []\n"), "truncated or corrupt JSON at offset 1"},
		// Zero bytes.
		{"empty", nil, "empty file"},
		// JSON, but another tool's.
		{"other schema", []byte(`{"schema":"k6.summary/v2","metrics":{}}`), `not a slogate run record (schema "k6.summary/v2"`},
		// A record from a newer slogate.
		{"newer version", []byte(`{"schema":"slogate.run/v2"}`), `(schema "slogate.run/v2"; this tool reads "slogate.run/v1")`},
		// JSON with no schema at all.
		{"no schema", []byte(`{"summary":{}}`), "no schema field"},
		// Not an object.
		{"array", []byte(`[1,2,3]`), "the JSON is an array"},
		// A schema that is not even a string.
		{"schema number", []byte(`{"schema":1}`), "schema is a number"},
		// The right schema, a field of the wrong type: names the field.
		{"bad field", []byte(`{"schema":"slogate.run/v1","requests":[{"i":"zero"}]}`), "field requests.i"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name+".json")
			os.WriteFile(path, tc.content, 0o644)
			_, err := Read(path)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("Read error = %v (%T), want *FormatError", err, err)
			}
			if fe.Path != path || !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("error %q does not name %s", err, path)
			}
			if !strings.Contains(fe.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", fe.Reason, tc.reason)
			}
		})
	}
	// A missing file is an I/O error, not a format error.
	_, err = Read(filepath.Join(t.TempDir(), "absent.json"))
	var fe *FormatError
	if err == nil || errors.As(err, &fe) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing file = %v, want a not-exist error", err)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	a, b := sampleRecord(), sampleRecord()
	a.Workload, b.Workload = "alpha", "beta"
	for name, r := range map[string]*Record{"b.json": b, "a.json": a} {
		if err := Write(filepath.Join(dir, name), r); err != nil {
			t.Fatal(err)
		}
	}
	// Not records, and not *.json: ignored (a leftover temporary file, a README).
	os.WriteFile(filepath.Join(dir, ".c.json.123.tmp"), []byte("{"), 0o644)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# results"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub.json"), 0o755)
	recs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Workload != "alpha" || recs[1].Workload != "beta" {
		t.Fatalf("ReadDir = %d records, want alpha then beta", len(recs))
	}

	// A *.json that is not a record is an error naming it, never silently skipped.
	bad := filepath.Join(dir, "c.json")
	os.WriteFile(bad, []byte(`{"schema":"other"}`), 0o644)
	_, err = ReadDir(dir)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Path != bad {
		t.Errorf("ReadDir error = %v, want a FormatError naming %s", err, bad)
	}
}

func TestReadDirPassesOverOtherOutputs(t *testing.T) {
	dir := t.TempDir()
	rec := &Record{Schema: Schema, Workload: "w", WorkloadHash: "sha256:x", Requests: []Request{}}
	if err := Write(filepath.Join(dir, "w.json"), rec); err != nil {
		t.Fatal(err)
	}
	// The gate's result and a sweep summary sit beside records; a baseline must not.
	os.WriteFile(filepath.Join(dir, "gate.json"), []byte(`{"schema":"slogate.gate/v1","verdict":"pass"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "w.sweep.json"), []byte(`{"schema":"slogate.sweep/v1"}`), 0o644)
	recs, err := ReadDir(dir)
	if err != nil || len(recs) != 1 || recs[0].Workload != "w" {
		t.Fatalf("got %d records, %v", len(recs), err)
	}
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"schema":"slogate.baseline/v1"}`), 0o644)
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), "b.json") {
		t.Fatalf("a baseline in a results directory: err %v", err)
	}
}

func TestReadSweepsDir(t *testing.T) {
	dir := t.TempDir()
	rec := &Record{Schema: Schema, Workload: "w", WorkloadHash: "sha256:x", Requests: []Request{}}
	if err := Write(filepath.Join(dir, "w.json"), rec); err != nil {
		t.Fatal(err)
	}
	max := 12.5
	for name, wl := range map[string]string{"b.sweep.json": "beta", "a.sweep.json": "alpha"} {
		sw := &Sweep{Workload: wl, WorkloadHash: "sha256:s", Bound: BoundSLO, MaxSustainableRPS: &max}
		if err := WriteSweep(filepath.Join(dir, name), sw); err != nil {
			t.Fatal(err)
		}
	}
	// A sweep's steps live in a subdirectory: run records of other rates, never read here.
	if err := Write(filepath.Join(dir, "a.sweep", "step1.json"), rec); err != nil {
		t.Fatal(err)
	}
	// The gate's result, and a file that is not JSON: ReadDir's business, passed over.
	os.WriteFile(filepath.Join(dir, "gate.json"), []byte(`{"schema":"slogate.gate/v1"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "junk.json"), []byte(`{`), 0o644)
	sws, err := ReadSweepsDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sws) != 2 || sws[0].Workload != "alpha" || sws[1].Workload != "beta" || *sws[0].MaxSustainableRPS != 12.5 {
		t.Fatalf("ReadSweepsDir = %+v, want alpha then beta at 12.5 req/s", sws)
	}

	// A file that says it is a sweep and is not one is refused by name.
	bad := filepath.Join(dir, "c.sweep.json")
	os.WriteFile(bad, []byte(`{"schema":"slogate.sweep/v1","steps":"none"}`), 0o644)
	_, err = ReadSweepsDir(dir)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Path != bad {
		t.Errorf("ReadSweepsDir error = %v, want a FormatError naming %s", err, bad)
	}
	if _, err := ReadSweepsDir(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
}
