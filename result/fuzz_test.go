package result

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeRecord: no file makes the run-record reader panic, and a record it accepts
// can be summarized and written again.
func FuzzDecodeRecord(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.json")
	if len(paths) == 0 {
		f.Fatal("no record seeds")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Decode("fuzz.json", data)
		if err != nil {
			return
		}
		_ = Summarize(rec.Requests, SummaryInput{Window: rec.Window, SLO: rec.SLO})
		if _, err := Marshal(rec); err != nil {
			t.Fatalf("a record that was read cannot be written: %v", err)
		}
	})
}
