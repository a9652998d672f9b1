package schemas

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/interop"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// compile compiles every schema, with format assertions on (date-time must be one).
func compile(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, file := range Files {
		data, err := FS.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := c.AddResource(Base+file, doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for id, file := range Files {
		s, err := c.Compile(Base + file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out[id] = s
	}
	return out
}

// validate checks data against the schema its "schema" field names; false when the
// file is none of slogate's.
func validate(t *testing.T, schemas map[string]*jsonschema.Schema, name string, data []byte) bool {
	t.Helper()
	var probe struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	s := schemas[probe.Schema]
	if s == nil {
		if strings.HasPrefix(probe.Schema, "slogate.") {
			t.Errorf("%s: schema %q has no JSON Schema in schemas/", name, probe.Schema)
		}
		return false
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return true
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s does not validate against %s:\n%v", name, Files[probe.Schema], err)
	}
	return true
}

// TestRepositoryFiles validates every slogate file committed in the repository: the
// golden records and sweeps, and the baselines. Committed, not merely present: what
// `slogate demo` or `run` wrote into the checkout (slogate-out/, ignored by git) is the
// tool's output, checked by TestProducedFiles, and once the README's first command has
// run it holds files of schemas this directory does not describe.
func TestRepositoryFiles(t *testing.T) {
	schemas := compile(t)
	seen := map[string]int{}
	for _, path := range committedJSON(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if validate(t, schemas, path, data) {
			var probe struct{ Schema string }
			_ = json.Unmarshal(data, &probe)
			seen[probe.Schema]++
		}
	}
	// The repository holds at least a golden record, a golden sweep and a baseline.
	for _, id := range []string{"slogate.run/v1", "slogate.sweep/v1", "slogate.baseline/v1"} {
		if seen[id] == 0 {
			t.Errorf("no committed file of schema %s was found to validate", id)
		}
	}
	t.Logf("validated %v", seen)
}

// committedJSON lists the repository's committed .json files outside schemas/, as paths
// from this directory. Without git (a source archive), every .json file in the tree is
// taken, .git and node_modules aside.
func committedJSON(t *testing.T) []string {
	t.Helper()
	keep := func(p string) bool {
		return strings.HasSuffix(p, ".json") && !strings.HasPrefix(p, filepath.Join("..", "schemas")+string(filepath.Separator))
	}
	var paths []string
	if out, err := exec.Command("git", "-C", "..", "ls-files", "-z").Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if p := filepath.Join("..", filepath.FromSlash(f)); f != "" && keep(p) {
				paths = append(paths, p)
			}
		}
		return paths
	}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && keep(path) {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestProducedFiles validates what the tool writes: a native record, its baseline, a
// gate result, and the records and baselines of each importer.
func TestProducedFiles(t *testing.T) {
	schemas := compile(t)
	f := &workload.File{
		Path: "slogate.yaml", Target: workload.Target{API: "chat"}, Model: workload.Model{Name: "m"},
		Workloads: []workload.Workload{{Name: "chat", Seed: 7, Requests: 200}},
		Gate:      workload.GateConfig{Resamples: 200, Confidence: 0.95, Seed: 1, Drift: workload.DefaultDrift()},
	}
	h := workload.Hash(f, &f.Workloads[0])
	native := []*result.Record{
		gatetest.Record(1, gatetest.Spec{Hash: h, Requests: 200, KVConcurrency: 40}),
		gatetest.Record(2, gatetest.Spec{Hash: h, Requests: 200, KVConcurrency: 40, ErrorRate: 0.05}),
	}
	// A run on an engine slogate started carries its start, into its baseline too.
	native[0].Startup = &result.Startup{StartedAt: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), PortMS: 41000, HealthMS: 41002, ModelMS: 41010, ReadyMS: 41002, FirstTokenMS: 41350,
		Phases: []result.StartPhase{{Name: "weights_load", Seconds: 24.84, Source: "log", AtMS: 27000, Line: "INFO 05-06 20:59:57 [default_loader.py:267] Loading weights took 24.84 seconds"}}}
	recs := append([]*result.Record(nil), native...)
	for _, c := range []struct{ tool, file, cfg, workload string }{
		{interop.ToolVLLM, "vllm/candidate.json", "slogate.yaml", "vllm-chat"},
		{interop.ToolAIPerf, "aiperf/candidate/profile_export.jsonl", "slogate.yaml", "aiperf-chat"},
		{interop.ToolGuideLLM, "guidellm/candidate.json", "guidellm.yaml", "guidellm-chat"},
	} {
		cfg, err := workload.Load(filepath.Join("../testdata/import", c.cfg))
		if err != nil {
			t.Fatal(err)
		}
		var w *workload.Workload
		for i := range cfg.Workloads {
			if cfg.Workloads[i].Name == c.workload {
				w = &cfg.Workloads[i]
			}
		}
		path := filepath.Join("../testdata/import", c.file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := interop.Import(c.tool, path, data, func(n string) ([]byte, error) { return os.ReadFile(filepath.Join(filepath.Dir(path), n)) },
			interop.Options{Config: cfg, Workload: w, Hardware: "imported", ToolVersion: "test", Benchmark: 1})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rs...)
	}
	for _, r := range recs {
		data, err := result.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, schemas, "record of "+r.Workload, data)
		b, err := gate.FromRecords([]*result.Record{r}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		bd, err := gate.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, schemas, "baseline of "+r.Workload, bd)
	}
	b, err := gate.FromRecords(native[:1], time.Now())
	if err != nil {
		t.Fatal(err)
	}
	bd, _ := gate.Marshal(b)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "chat"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, gate.RelPath("chat", gate.HardwareOf(native[0]))), bd, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := gate.Evaluate(gate.Input{Config: f, Runs: native[1:], Store: gate.DirStore(dir)})
	if err != nil {
		t.Fatal(err)
	}
	gd, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, schemas, "gate result", gd)
}

// TestSchemasReject: the schemas can fail; each row breaks one rule of one format.
func TestSchemasReject(t *testing.T) {
	schemas := compile(t)
	golden, err := os.ReadFile("../result/testdata/record.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ why, from, to string }{
		{"mode outside its enum", `"mode": "open"`, `"mode": "sideways"`},
		{"a latency that is a string", `"p50":60.031`, `"p50":"60.031"`},
		{"start that is not a date-time", `"start": "2025-03-01T12:00:00Z"`, `"start": "March 1st"`},
		{"an SLO on an unknown metric", `{"metric":"ttft","percentile":95,"limit_ms":200}`, `{"metric":"ttfb","percentile":95,"limit_ms":200}`},
		{"a required field gone", `"workload_hash": "sha256:0123abcd",`, ``},
	} {
		bad := bytes.Replace(golden, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(bad, golden) {
			t.Fatalf("%s: %q not in the golden record", c.why, c.from)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if schemas["slogate.run/v1"].Validate(inst) == nil {
			t.Errorf("%s: the run schema accepts it", c.why)
		}
	}
}

// TestSchemasCoverTypes: every JSON field of the Go types is in its schema, and every
// property a schema lists for a struct is a field of it. Adding a field to a record is
// one line in the schema; this test names the line missing.
func TestSchemasCoverTypes(t *testing.T) {
	docs := map[string]map[string]any{}
	for _, file := range Files {
		data, _ := FS.ReadFile(file)
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		docs[file] = doc
	}
	c := coverage{t: t, docs: docs, seen: map[string]bool{}}
	c.walk("run.v1.json", docs["run.v1.json"], reflect.TypeFor[result.Record](), "result.Record")
	c.walk("baseline.v1.json", docs["baseline.v1.json"], reflect.TypeFor[gate.Baseline](), "gate.Baseline")
	c.walk("gate.v1.json", docs["gate.v1.json"], reflect.TypeFor[gate.Result](), "gate.Result")
	c.walk("sweep.v1.json", docs["sweep.v1.json"], reflect.TypeFor[result.Sweep](), "result.Sweep")
}

type coverage struct {
	t    *testing.T
	docs map[string]map[string]any
	seen map[string]bool
}

// resolve follows $ref (file#/$defs/Name or #/$defs/Name).
func (c *coverage) resolve(file string, node map[string]any) (string, map[string]any, string) {
	ref, _ := node["$ref"].(string)
	if ref == "" {
		return file, node, ""
	}
	f, frag, _ := strings.Cut(ref, "#")
	if f == "" {
		f = file
	}
	n := any(c.docs[f])
	for _, p := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		m, _ := n.(map[string]any)
		n = m[p]
	}
	m, _ := n.(map[string]any)
	if m == nil {
		c.t.Errorf("%s: $ref %q resolves to nothing", file, ref)
	}
	return f, m, f + "#" + frag
}

func (c *coverage) walk(file string, node map[string]any, typ reflect.Type, path string) {
	if node == nil {
		return
	}
	file, node, ref := c.resolve(file, node)
	if node == nil {
		return
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Slice:
		if items, ok := node["items"].(map[string]any); ok {
			c.walk(file, items, typ.Elem(), path+"[]")
		}
		return
	case reflect.Map:
		if ap, ok := node["additionalProperties"].(map[string]any); ok {
			c.walk(file, ap, typ.Elem(), path+"{}")
		}
		return
	case reflect.Struct:
	default:
		return
	}
	if typ == reflect.TypeFor[time.Time]() {
		return
	}
	key := typ.String() + " " + ref
	if ref != "" && c.seen[key] {
		return
	}
	c.seen[key] = true
	props, _ := node["properties"].(map[string]any)
	where := file
	if ref != "" {
		where = ref
	}
	var names []string
	for i := range typ.NumField() {
		fld := typ.Field(i)
		if !fld.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(fld.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = fld.Name
		}
		names = append(names, name)
		p, ok := props[name].(map[string]any)
		if !ok {
			c.t.Errorf("%s.%s (JSON %q) is not in %s: add the property (docs/record.md, 'Changing the formats')", path, fld.Name, name, where)
			continue
		}
		c.walk(file, p, fld.Type, path+"."+fld.Name)
	}
	for p := range props {
		if !slices.Contains(names, p) {
			c.t.Errorf("%s lists %q, which %s does not have", where, p, typ)
		}
	}
}
