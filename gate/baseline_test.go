package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

var created = time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC)

// TestBaselineSize holds the budget: 2,000 requests of 500 output tokens, with
// realistically jittered gaps, stay under 1 MB.
func TestBaselineSize(t *testing.T) {
	rec := gatetest.Record(1, gatetest.Spec{Requests: 2000, OutputTokens: 500, FixedOutput: true})
	b, err := FromRecords([]*result.Record{rec}, created)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	itl := 0
	for _, s := range b.Trials[0].Requests.ITL {
		itl += len(s)
	}
	recData, _ := result.Marshal(rec)
	t.Logf("baseline of 2000 requests × 500 tokens: %d bytes (ITL sketches %d bytes, %.0f per request); the run record: %d bytes",
		len(data), itl, float64(itl)/2000, len(recData))
	if len(data) >= 1<<20 {
		t.Errorf("baseline is %d bytes, want under 1 MB", len(data))
	}
}

func TestBaselineWriteLoad(t *testing.T) {
	recs := []*result.Record{
		gatetest.Record(1, gatetest.Spec{Requests: 200, Trial: 2, ErrorRate: 0.05, KVConcurrency: 80}),
		gatetest.Record(2, gatetest.Spec{Requests: 200, Trial: 1, ErrorRate: 0.05, KVConcurrency: 80}),
	}
	b, err := FromRecords(recs, created.Add(123*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := Write(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "chat", "h100-80gb-hbm3-x1.json"); p != want {
		t.Errorf("written to %s, want %s", p, want)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "chat", ".*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	got, err := Load(os.DirFS(dir), "chat/h100-80gb-hbm3-x1.json")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Created.Equal(created) {
		t.Errorf("created %v, want %v (whole seconds, UTC)", got.Created, created)
	}
	if got.Trials[0].Trial != 1 || got.Trials[1].Trial != 2 {
		t.Errorf("trials %d, %d; want them in trial order", got.Trials[0].Trial, got.Trials[1].Trial)
	}
	if diff := cmp.Diff(recs[1].Summary, got.Trials[0].Summary); diff != "" {
		t.Errorf("summary of trial 1 changed on the way (-want +got):\n%s", diff)
	}
	// What the gate computes on must be the same whether it came from the record or
	// from the file.
	for i, rec := range []*result.Record{recs[1], recs[0]} {
		want, have := runOf(rec), got.runs[i]
		if diff := cmp.Diff(want, have, cmp.AllowUnexported(run{}), cmpopts.IgnoreFields(run{}, "built")); diff != "" {
			t.Errorf("trial %d: run from the file differs from the run from the record (-record +file):\n%s", i+1, diff)
		}
	}
	if got.Environment["engine.version"] != "0.6.3" || got.Hardware != "h100-80gb-hbm3-x1" || got.WorkloadHash != "sha256:test" {
		t.Errorf("identity lost: %+v", got)
	}
}

func TestFromRecordsRefuses(t *testing.T) {
	ok := gatetest.Record(1, gatetest.Spec{})
	for _, c := range []struct {
		name  string
		recs  []*result.Record
		unfit bool
		want  string
	}{
		// The gate refuses to judge these, so they must not become the reference either.
		{"incomplete", []*result.Record{gatetest.Record(1, gatetest.Spec{Incomplete: true})}, true, "incomplete (engine crashed)"},
		{"saturated", []*result.Record{gatetest.Record(1, gatetest.Spec{ClientSaturated: true})}, true, "load generator was saturated"},
		// Two records claiming one trial: which one is the baseline?
		{"duplicate trial", []*result.Record{ok, gatetest.Record(2, gatetest.Spec{})}, false, "two run records of trial 0"},
		// One baseline file holds one workload on one hardware.
		{"mixed workloads", []*result.Record{ok, gatetest.Record(2, gatetest.Spec{Workload: "rag", Trial: 1})}, false, `workloads "chat" and "rag"`},
		{"mixed hardware", []*result.Record{ok, gatetest.Record(2, gatetest.Spec{Hardware: "a100-sxm4-80gb-x1", Trial: 1})}, false, "hardware"},
		{"mixed hashes", []*result.Record{ok, gatetest.Record(2, gatetest.Spec{Hash: "sha256:other", Trial: 1})}, false, "workload hashes"},
		{"none", nil, false, "no run records"},
	} {
		_, err := FromRecords(c.recs, created)
		var ue *UnfitError
		switch {
		case err == nil:
			t.Errorf("%s: made a baseline; want an error", c.name)
		case errors.As(err, &ue) != c.unfit:
			t.Errorf("%s: %v (%T); unfit error: %v, want %v", c.name, err, err, !c.unfit, c.unfit)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v; want it to say %q", c.name, err, c.want)
		}
	}
}

// validBaseline is a small good baseline file, to corrupt.
func validBaseline(t *testing.T) []byte {
	t.Helper()
	b, err := FromRecords([]*result.Record{gatetest.Record(1, gatetest.Spec{Requests: 50})}, created)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestLoadBadFiles(t *testing.T) {
	good := string(validBaseline(t))
	runRec, _ := result.Marshal(gatetest.Record(1, gatetest.Spec{Requests: 5}))
	for _, c := range []struct {
		name, data, want string
	}{
		{"empty", "", "empty file"},
		{"truncated", good[:len(good)/2], "truncated or corrupt JSON"},
		{"not JSON", "requests,ttft\n1,2\n", "truncated or corrupt JSON"},
		{"array", "[1, 2]", "not a slogate baseline (the JSON is array"},
		{"no schema", `{"workload": "chat"}`, "no schema field"},
		// The most likely mistake: a run record copied where its baseline should be.
		{"run record", string(runRec), "a run record (schema \"slogate.run/v1\"), not a baseline"},
		{"future schema", strings.Replace(good, BaselineSchema, "slogate.baseline/v9", 1), `a baseline this tool cannot read (schema "slogate.baseline/v9"`},
		{"other schema", `{"schema": "acme.bench/v1"}`, `not a slogate baseline (schema "acme.bench/v1"`},
		{"wrong type", strings.Replace(good, `"n": 50`, `"n": "50"`, 1), "field trials.requests.n"},
		{"short column", strings.Replace(good, `"ok": "1`, `"ok": "`, 1), "requests.ok has 49 entries for 50 requests"},
		{"bad bit", strings.Replace(good, `"ok": "1`, `"ok": "x`, 1), `requests.ok[0]: 'x' is neither`},
		{"bad sketch", strings.Replace(good, `"itl": ["`, `"itl": ["!`, 1), "requests.itl[0]: corrupt ITL sketch"},
		{"no trials", strings.Replace(good, `"trials": [`, `"trials": [], "x": [`, 1), "no trials"},
		{"other gamma", strings.Replace(good, `"gamma": 1.02`, `"gamma": 1.05`, 1), "gamma 1.05"},
	} {
		_, err := Load(fstest.MapFS{"chat/cpu.json": {Data: []byte(c.data)}}, "chat/cpu.json")
		var fe *FileError
		switch {
		case !errors.As(err, &fe):
			t.Errorf("%s: %v (%T), want a *FileError", c.name, err, err)
		case fe.Path != "chat/cpu.json" || !strings.Contains(fe.Reason, c.want):
			t.Errorf("%s: %v; want chat/cpu.json named and %q", c.name, err, c.want)
		}
	}
}

func TestStoreLookup(t *testing.T) {
	good := validBaseline(t)
	fsys := fstest.MapFS{
		"chat/h100-80gb-hbm3-x1.json": {Data: good},
		"rag/h100-80gb-hbm3-x1.json":  {Data: good},
		"chat/a100-sxm4-80gb-x1.json": {Data: good},
	}
	s := Store{FS: fsys, Dir: "baselines"}
	b, p, err := s.Lookup("chat", "h100-80gb-hbm3-x1")
	if err != nil || b == nil || p != filepath.Join("baselines", "chat", "h100-80gb-hbm3-x1.json") {
		t.Errorf("Lookup chat: %v, %s, %v", b != nil, p, err)
	}
	b, p, err = s.Lookup("chat", "l4-x1")
	if err != nil || b != nil || p != filepath.Join("baselines", "chat", "l4-x1.json") {
		t.Errorf("Lookup of a missing baseline: %v, %s, %v; want nil, its path, no error", b != nil, p, err)
	}
	for _, c := range []struct{ workload, hardware, want string }{
		// A file copied into another workload's directory.
		{"rag", "h100-80gb-hbm3-x1", `baseline of workload "chat", not "rag"`},
		// A file renamed to another hardware.
		{"chat", "a100-sxm4-80gb-x1", `baseline of hardware "h100-80gb-hbm3-x1", not "a100-sxm4-80gb-x1"`},
	} {
		_, _, err := s.Lookup(c.workload, c.hardware)
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(fe.Path, "baselines") {
			t.Errorf("Lookup %s/%s: %v; want a *FileError naming the file and %q", c.workload, c.hardware, err, c.want)
		}
	}
	// The error names the file as the user knows it, not as the FS does.
	bad := Store{FS: fstest.MapFS{"chat/cpu.json": {Data: []byte("{")}}, Dir: "repo/baselines"}
	_, _, err = bad.Lookup("chat", "cpu")
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join("repo", "baselines", "chat", "cpu.json")+": ") {
		t.Errorf("corrupt file: %v; want it named repo/baselines/chat/cpu.json", err)
	}
}

func TestWriteRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "..", "a/b"} {
		b := &Baseline{Workload: name, Hardware: "cpu"}
		if _, err := Write(t.TempDir(), b); err == nil {
			t.Errorf("Write with workload %q succeeded; want a refusal", name)
		}
	}
}

// TestBaselineRefusesAllFailed: a run whose every request failed measured nothing of the
// engine: it cannot become a baseline, and the refusal says what failed.
func TestBaselineRefusesAllFailed(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.10}})
	r := rec(f, 1, gatetest.Spec{Requests: 50, ErrorRate: 1})
	if r.Summary.Completed != 0 {
		t.Fatalf("a run of only errors completed %d", r.Summary.Completed)
	}
	_, err := FromRecords([]*result.Record{r}, created)
	var ue *UnfitError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "every one of its 50 requests failed") {
		t.Fatalf("error %v, want an UnfitError saying every request failed", err)
	}
	if _, err := FromRecords([]*result.Record{rec(f, 2, gatetest.Spec{Requests: 50, ErrorRate: 0.5})}, created); err != nil {
		t.Errorf("half failed: %v, want a baseline", err)
	}
}
