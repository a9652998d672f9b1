package result

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A record holding non-finite floats in the summary, a pointer field, a series, a map and
// a sweep is still written, with each value as 0 and a note naming it.
func TestWriteNonFiniteRecord(t *testing.T) {
	rec := sampleRecord()
	nan, inf := math.NaN(), math.Inf(1)
	rec.Summary.GoodputRPS = nan
	rec.Summary.TTFTms.P99 = inf
	rec.Summary.KVUsage = &Gauge{P50: 0.5, P95: nan, Max: math.Inf(-1)}
	hitRate := math.NaN()
	rec.Summary.PrefixCacheHitRate = &hitRate
	rec.Series.Engine["kv_usage"] = []Sample{{TUS: 1, V: 0.25}, {TUS: 2, V: nan}}
	rec.Calibration.CharsPerToken = inf
	for i := range 10 {
		rec.Series.InFlight = append(rec.Series.InFlight, Sample{TUS: int64(i), V: nan})
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := Write(path, rec); err != nil {
		t.Fatalf("a non-finite float made the record unwritable: %v", err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	s := back.Summary
	if s.GoodputRPS != 0 || s.TTFTms.P99 != 0 || s.KVUsage.P50 != 0.5 || s.KVUsage.P95 != 0 || s.KVUsage.Max != 0 || *s.PrefixCacheHitRate != 0 {
		t.Errorf("summary as read: goodput %v ttft p99 %v kv %+v hit rate %v", s.GoodputRPS, s.TTFTms.P99, *s.KVUsage, *s.PrefixCacheHitRate)
	}
	if kv := back.Series.Engine["kv_usage"]; len(kv) != 2 || kv[0].V != 0.25 || kv[1].V != 0 {
		t.Errorf("series as read: %+v", kv)
	}
	var note string
	for _, n := range back.Notes {
		if strings.HasPrefix(n, "record: ") {
			note = n
		}
	}
	for _, want := range []string{"17 values were not finite", "summary.ttft_ms.p99 (+Inf)", "summary.goodput_rps (NaN)", "calibration.chars_per_token (+Inf)", "and 12 more"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	// What is in memory is what is on disk; writing again adds no second note.
	if rec.Summary.GoodputRPS != 0 {
		t.Error("the record in memory still holds NaN")
	}
	if err := Write(path, rec); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "not finite"); n != 1 {
		t.Errorf("%d notes after a second write", n)
	}

	sw := &Sweep{Notes: nil, Steps: []SweepStep{{RateRPS: 1, GoodputRPS: math.NaN()}}}
	if _, err := MarshalSweep(sw); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if len(sw.Notes) != 1 || !strings.Contains(sw.Notes[0], "steps[0].goodput_rps (NaN)") {
		t.Errorf("sweep notes %q", sw.Notes)
	}
	// Any value MarshalLayered is given, pointer or not.
	if _, err := MarshalLayered(struct{ V []float64 }{[]float64{inf}}, 1); err != nil {
		t.Errorf("MarshalLayered: %v", err)
	}
	m := map[string]any{"a": math.NaN(), "b": []any{1.0, inf}}
	if _, err := MarshalLayered(m, 1); err != nil {
		t.Errorf("MarshalLayered of a map of interfaces: %v", err)
	}
}
