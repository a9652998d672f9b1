package gate

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeBaseline: no file makes the baseline reader panic; a file it accepts has
// trials it can resample.
func FuzzDecodeBaseline(f *testing.F) {
	paths, _ := filepath.Glob("../baselines/*/*.json")
	if len(paths) == 0 {
		f.Fatal("no baseline seeds")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"schema":"` + BaselineSchema + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode("fuzz.json", data)
		if err != nil {
			return
		}
		if len(b.runs) != len(b.Trials) || len(b.Trials) == 0 {
			t.Fatalf("%d runs for %d trials", len(b.runs), len(b.Trials))
		}
	})
}

// FuzzDecodeSketch: a sketch decodes to ascending, non-negative gaps or an error, and
// an encoded sketch decodes to as many gaps as were encoded.
func FuzzDecodeSketch(f *testing.F) {
	f.Add(encodeSketch([]int64{10, 20, 20, 5000, 120000}))
	f.Add(encodeSketch(nil))
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		gaps, err := decodeSketch(s)
		if err != nil {
			return
		}
		for i, g := range gaps {
			if g < 0 || (i > 0 && g < gaps[i-1]) {
				t.Fatalf("gap %d is %v after %v", i, g, gaps[max(i-1, 0)])
			}
		}
		in := make([]int64, len(gaps))
		for i, g := range gaps {
			in[i] = int64(g)
		}
		if back, err := decodeSketch(encodeSketch(in)); err != nil || len(back) != len(in) {
			t.Fatalf("re-encoded %d gaps: %d back, %v", len(in), len(back), err)
		}
	})
}
