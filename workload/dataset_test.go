package workload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wordCounter counts words: a tokenizer unlike the 4-chars estimate, so that measured
// lengths can be told from estimated ones.
type wordCounter struct{ calls int }

func (w *wordCounter) CountTokens(_ context.Context, text string) (int, error) {
	w.calls++
	return len(strings.Fields(text)), nil
}

func TestDatasetRequests(t *testing.T) {
	chdirRoot(t)
	for _, cfg := range []string{"valid_sharegpt", "valid_prompts"} {
		t.Run(cfg, func(t *testing.T) {
			_, w := loadOne(t, "testdata/config/"+cfg+".yaml")
			_, w2 := loadOne(t, "testdata/config/"+cfg+".yaml")
			ds := w.Dataset
			if len(ds.Entries) < 100 || ds.SHA256 == "" {
				t.Fatalf("%d entries, sha %q", len(ds.Entries), ds.SHA256)
			}
			g, err := NewGenerator(w)
			if err != nil {
				t.Fatal(err)
			}
			est, _ := NewGenerator(w2)
			other, _ := NewGenerator(w2)
			other.SetRunID("another")
			tok := &wordCounter{}
			if err := g.Calibrate(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
			if g.Calibration().Method != "tokenize" || tok.calls < len(ds.Entries) {
				t.Fatalf("calibration %+v after %d tokenizer calls; want every entry measured", g.Calibration(), tok.calls)
			}
			for i := range 2 * len(ds.Entries) {
				it, e := g.Request(i), ds.Entries[i%len(ds.Entries)]
				if !strings.HasSuffix(it.Prompt, e.Prompt) || !saltRE.MatchString(it.Prompt) {
					t.Fatalf("request %d: prompt %.60q does not end with entry line %d", i, it.Prompt, e.Line)
				}
				if it != g.Request(i) {
					t.Fatalf("request %d differs between calls", i)
				}
				words := len(strings.Fields(e.Prompt))
				if it.PromptTokens < words+1 || it.PromptTokens > words+10 {
					t.Fatalf("request %d: prompt target %d, the tokenizer counts %d words plus the salt", i, it.PromptTokens, words)
				}
				switch {
				case e.OutputLen > 0 && it.OutputTokens != e.OutputLen:
					t.Fatalf("request %d: output %d, entry says %d", i, it.OutputTokens, e.OutputLen)
				case e.Reply != "" && it.OutputTokens != len(strings.Fields(e.Reply)):
					t.Fatalf("request %d: output %d, the reply has %d words", i, it.OutputTokens, len(strings.Fields(e.Reply)))
				case e.OutputLen == 0 && e.Reply == "" && (it.OutputTokens < 16 || it.OutputTokens > 128):
					t.Fatalf("request %d: output %d outside output_tokens 16..128", i, it.OutputTokens)
				}
				// Without a tokenizer the lengths are the documented estimate.
				ei := est.Request(i)
				if want := len(e.Prompt) / 4; ei.PromptTokens < want || ei.PromptTokens > want+10 {
					t.Fatalf("request %d: estimated prompt target %d for %d bytes", i, ei.PromptTokens, len(e.Prompt))
				}
				if ei.Prompt == other.Request(i).Prompt || ei.Prompt[saltLen:] != other.Request(i).Prompt[saltLen:] {
					t.Fatalf("request %d: another run id must change the salt only", i)
				}
			}
		})
	}
}

func TestDatasetHashAndErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(file string) []byte {
		return []byte("version: 1\nmodel: {name: m}\nworkloads:\n  - name: w\n    requests: 1\n    arrival: {process: poisson, rate: 1}\n    dataset: {format: sharegpt, file: " + file + "}\n")
	}
	conv := `[{"conversations": [{"from": "human", "value": "Why is the sky blue?"}, {"from": "gpt", "value": "Scattering."}]},
 {"conversations": [{"from": "human", "value": "Only one turn"}]}]`
	write("a.json", conv)
	write("b.json", strings.Replace(conv, "blue", "grey", 1))
	hash := func(file string) string {
		f, err := Parse(filepath.Join(dir, "c.yaml"), cfg(file))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(f.Workloads[0].Dataset.Entries); n != 1 {
			t.Fatalf("%d entries, want 1 (a single-turn conversation is skipped)", n)
		}
		return Hash(f, &f.Workloads[0])
	}
	if hash("a.json") == hash("b.json") {
		t.Error("two datasets that differ by a word hash the same")
	}
	write("bad.json", `[{"conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": "y"}]},
 {"conversations": "none"}]`)
	_, err := Parse(filepath.Join(dir, "c.yaml"), cfg("bad.json"))
	if err == nil || !strings.Contains(err.Error(), "bad.json:2:2: invalid ShareGPT entry") {
		t.Errorf("malformed entry: %v", err)
	}
	write("obj.json", `{"conversations": []}`)
	_, err = Parse(filepath.Join(dir, "c.yaml"), cfg("obj.json"))
	if err == nil || !strings.Contains(err.Error(), "obj.json:1:2: invalid ShareGPT file: expected a JSON array") {
		t.Errorf("not an array: %v", err)
	}
}
