package result

import (
	"errors"
	"strings"
	"testing"
)

// The run-record reader refuses timelines no measurement produces, as the baseline
// reader does, so that the gate calls the file bad input instead of judging it.
func TestDecodeRefusesImpossibleTimelines(t *testing.T) {
	ok := Request{I: 0, SchedUS: 100, SendUS: 110, FirstUS: 200, LastUS: 300, EndUS: 310, Chunks: 3, OutputTokens: 3, ITLUS: []int64{50, 50}}
	cases := []struct {
		name string
		edit func(*Record)
		want string // "" for a record that must decode
	}{
		{"a real timeline", func(r *Record) {}, ""},
		{"a failed request may stop anywhere", func(r *Record) { r.Requests[0].Error, r.Requests[0].EndUS = "timeout", 0 }, ""},
		{"window backwards", func(r *Record) { r.Window = Window{StartUS: 500, EndUS: 100} }, "window ends (end_us 100) before it starts (start_us 500)"},
		{"first before sched", func(r *Record) { r.Requests[0].SchedUS = 5000 }, "first_us 200 before sched_us 5000"},
		{"last before first", func(r *Record) { r.Requests[0].FirstUS, r.Requests[0].EndUS = 3000, 3000 }, "last_us 300 before first_us 3000"},
		{"end before last", func(r *Record) { r.Requests[0].LastUS = 2500 }, "end_us 310 before last_us 2500"},
		// Importers round each time on its own: a few microseconds out of order is not
		// a broken file.
		{"rounding", func(r *Record) { r.Requests[0].EndUS = 297 }, ""},
		{"negative gap", func(r *Record) { r.Requests[0].ITLUS[1] = -5 }, "itl_us[1] is -5"},
		{"more gaps than chunks allow", func(r *Record) { r.Requests[0].ITLUS = []int64{1, 1, 1} }, "3 gaps between 3 content chunks"},
		{"negative tokens", func(r *Record) { r.Requests[0].OutputTokens = -1 }, "negative count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := ok
			q.ITLUS = append([]int64(nil), ok.ITLUS...)
			rec := &Record{Schema: Schema, Workload: "w", Window: Window{StartUS: 100, EndUS: 310}, Requests: []Request{q}}
			c.edit(rec)
			data, err := Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Decode("r.json", data)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a FormatError with %q", err, c.want)
			}
		})
	}
}
