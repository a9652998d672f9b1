package workload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadOne loads a config of the repository and returns its file and first workload.
func loadOne(t *testing.T, path string) (*File, *Workload) {
	t.Helper()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f, &f.Workloads[0]
}

// The same trace and seed give the same requests byte for byte; another run id changes
// the salt only.
func TestReplayDeterminism(t *testing.T) {
	chdirRoot(t)
	for _, cfg := range []string{"valid_mooncake", "valid_azure", "valid_burstgpt"} {
		t.Run(cfg, func(t *testing.T) {
			path := "testdata/config/" + cfg + ".yaml"
			f1, w1 := loadOne(t, path)
			f2, w2 := loadOne(t, path)
			if Hash(f1, w1) != Hash(f2, w2) {
				t.Fatal("two loads of one file hash differently")
			}
			g1, err1 := NewGenerator(w1)
			g2, err2 := NewGenerator(w2)
			g3, err3 := NewGenerator(w2)
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			g3.SetRunID("another-run")
			a1, a2 := g1.Arrivals(), g2.Arrivals()
			if len(a1) < 20 || len(a1) != len(a2) {
				t.Fatalf("arrivals: %d and %d, want the same number, at least 20", len(a1), len(a2))
			}
			for i := range a1 {
				if a1[i] != a2[i] {
					t.Fatalf("arrival %d: %v vs %v", i, a1[i], a2[i])
				}
				r1, r2, r3 := g1.Request(i), g2.Request(i), g3.Request(i)
				if r1 != r2 {
					t.Fatalf("request %d differs between two loads:\n%+v\n%+v", i, r1, r2)
				}
				rec := w1.Arrival.Records[i]
				if r1.PromptTokens != rec.Input || r1.OutputTokens != rec.Output {
					t.Fatalf("request %d: lengths %d/%d, trace line %d says %d/%d", i, r1.PromptTokens, r1.OutputTokens, rec.Line, rec.Input, rec.Output)
				}
				// Prompts are about 4 chars per token (the estimate), within a word.
				if got, want := len(r1.Prompt), 4*rec.Input; got < want-100 || got > want+100 {
					t.Fatalf("request %d: prompt of %d bytes for %d tokens, want about %d", i, got, rec.Input, want)
				}
				sl := saltLen
				if len(rec.Blocks) > 0 {
					sl = runSaltLen
				}
				if r1.Prompt == r3.Prompt || r1.Prompt[sl:] != r3.Prompt[sl:] {
					t.Fatalf("request %d: another run id must change the salt (first %d bytes) and nothing else:\n%.80q\n%.80q", i, sl, r1.Prompt, r3.Prompt)
				}
			}
		})
	}
}

// Entries that share their first k hash ids share k blocks of text, and no more.
func TestMooncakeBlocksAreShared(t *testing.T) {
	chdirRoot(t)
	_, w := loadOne(t, "testdata/config/valid_mooncake.yaml")
	g, err := NewGenerator(w)
	if err != nil {
		t.Fatal(err)
	}
	recs := w.Arrival.Records
	checked := map[int]int{}
	for i := range recs {
		for j := range i {
			a, b := recs[i].Blocks, recs[j].Blocks
			k := 0
			for k < len(a) && k < len(b) && a[k] == b[k] {
				k++
			}
			if k >= len(a) || k >= len(b) {
				continue // one is a prefix of the other: shared up to the shorter length
			}
			common := commonPrefix(g.Request(i).Prompt, g.Request(j).Prompt)
			// k blocks of 512 tokens at 4 chars each, give or take a word per block.
			want := 4 * 512 * k
			if common < want-64*k-64 || common > want+64*k+64 {
				t.Fatalf("requests %d and %d share %d hash ids, and %d bytes of prompt; want about %d", i, j, k, common, want)
			}
			checked[k]++
		}
	}
	if checked[0] == 0 || checked[1] == 0 || checked[2] == 0 {
		t.Fatalf("the sample trace shares too little to test: pairs by shared blocks %v", checked)
	}
	t.Logf("pairs by shared blocks: %v", checked)
}

// The hash pins the trace's content and its cut, not its path or the config's layout.
func TestTraceHash(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../testdata/traces/mooncake.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("a.jsonl", string(data))
	write("b.jsonl", string(data))
	// The same entries, one timestamp a millisecond later.
	write("c.jsonl", strings.Replace(string(data), `"timestamp": 11,`, `"timestamp": 12,`, 1))
	cfg := func(trace, extra string) string {
		return `version: 1
model: {name: m}
workloads:
  - name: w
    requests: 10
    arrival: {process: trace, format: mooncake, trace: ` + trace + extra + `}
`
	}
	hash := func(src string) string {
		t.Helper()
		p := write("c.yaml", src)
		f, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return Hash(f, &f.Workloads[0])
	}
	base := hash(cfg("a.jsonl", ""))
	if h := hash(cfg("b.jsonl", "")); h != base {
		t.Error("the same trace content under another name hashes differently")
	}
	if h := hash("# a comment\n" + cfg("a.jsonl", ", time_scale: 1")); h != base {
		t.Error("a comment and the default time_scale changed the hash")
	}
	for _, other := range []string{cfg("c.jsonl", ""), cfg("a.jsonl", ", time_scale: 0.5"), cfg("a.jsonl", ", start: 1s"), cfg("a.jsonl", ", window: 30s"), cfg("a.jsonl", ", block_tokens: 256")} {
		if h := hash(other); h == base {
			t.Errorf("config %q hashes like the original", other)
		}
	}
}

// Start, window and time scale cut and stretch the trace.
func TestTraceCut(t *testing.T) {
	dir := t.TempDir()
	trace := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:00:00.0000000,10,1\n" +
		"2023-11-16 18:00:01.0000000,20,2\n" +
		"2023-11-16 18:00:02.5000000,30,0\n" +
		"2023-11-16 18:00:04.0000000,40,4\n"
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `version: 1
model: {name: m}
workloads:
  - name: w
    requests: 2
    arrival: {process: trace, format: azure, trace: t.csv, start: 1s, window: 3s, time_scale: 2}
`
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, w := loadOne(t, p)
	a := w.Arrival
	if len(a.Offsets) != 2 || a.Offsets[0] != 0 || a.Offsets[1] != 3*time.Second {
		t.Fatalf("offsets %v, want [0s 3s] (entries at 1s and 2.5s, from 1s, doubled)", a.Offsets)
	}
	// A 0-token output (a failed request in the trace) is replayed with one token.
	if a.Records[0].Input != 20 || a.Records[1].Input != 30 || a.Records[1].Output != 1 || a.Records[1].Line != 4 {
		t.Fatalf("records %+v", a.Records)
	}
	if ml := MaxLengths(w); len(ml) != 1 || ml[0].MaxPrompt != 30 || ml[0].MaxOutput != 2 {
		t.Fatalf("MaxLengths %+v, want prompt 30, output 2", ml)
	}
}

// Bad trace files are reported at their own line and column.
func TestTraceFileErrors(t *testing.T) {
	cases := []struct {
		format, name, data, want string
	}{
		{"mooncake", "t.jsonl", `{"timestamp": 5, "input_length": 10, "output_length": 1}` + "\n" + `{"timestamp": 4, "input_length": 10, "output_length": 1}`,
			"t.jsonl:2:1: invalid timestamp 4: timestamps must be in ascending order (previous 5)"},
		{"mooncake", "t.jsonl", `{"timestamp": 5, "input_length": 10}`, `t.jsonl:1:1: invalid mooncake line: missing "output_length"`},
		{"mooncake", "t.jsonl", `{"timestamp": 5, "input_length": 10, "output_length": 1, "prompt": "x"}`, `t.jsonl:1:1: invalid mooncake line: unknown field "prompt"`},
		{"mooncake", "t.jsonl", `{"timestamp": 5, "input_length": -1, "output_length": 1}`, `t.jsonl:1:1: invalid lengths -1, 1`},
		{"burstgpt", "t.csv", "Timestamp,Request tokens\n1,2\n", `t.csv:1:1: the burstgpt trace header lacks the column "Response tokens"`},
		{"burstgpt", "t.csv", "Timestamp,Request tokens,Response tokens\n1,2,3\n2,x,3\n", `t.csv:3:3: invalid Request tokens "x": expected a token count`},
		{"burstgpt", "t.csv", "Timestamp,Request tokens,Response tokens\n1,2,3\n2,3\n", `t.csv:3:1: invalid CSV: wrong number of fields`},
		{"azure", "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", `t.csv:2:1: invalid TIMESTAMP "yesterday": expected a time such as`},
		{"azure", "t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n", `holds no requests`},
		{"azure", "t.csv", "", `t.csv:1:1: the azure trace is empty`},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, c.name), []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Parse(filepath.Join(dir, "c.yaml"), []byte(`version: 1
model: {name: m}
workloads:
  - name: w
    requests: 1
    arrival: {process: trace, format: `+c.format+`, trace: `+c.name+`}
`))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v\nwant it to contain %q", c.format, c.data, err, c.want)
		}
	}
	// A missing trace file is an error of the config.
	_, err := Parse("c.yaml", []byte("version: 1\nmodel: {name: m}\nworkloads:\n  - name: w\n    requests: 1\n    arrival: {process: trace, format: azure, trace: nowhere.csv}\n"))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:6:53: invalid arrival.trace \"nowhere.csv\": cannot read trace nowhere.csv") {
		t.Errorf("missing trace: %v", err)
	}
}
