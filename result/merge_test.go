package result

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shardsOf splits the sample record's requests round-robin into n shards, as a
// deterministic slice of one schedule, each shard summarized on its own.
func shardsOf(n int, oneBased bool) []*Record {
	whole := sampleRecord()
	out := make([]*Record, n)
	for k := range n {
		r := *whole
		idx := k
		if oneBased {
			idx = k + 1
		}
		r.Shard = formatShard(idx, n)
		r.Start = whole.Start.Add(time.Duration(k) * time.Second) // the machines started apart
		r.Requests = nil
		for _, q := range whole.Requests {
			if q.I%n == k {
				r.Requests = append(r.Requests, q)
			}
		}
		// Each shard's own window ends with its own last request.
		r.Window = Window{StartUS: 0, EndUS: 1_000_000 - int64(k)*100_000}
		r.Summary = Summarize(r.Requests, SummaryInput{Window: r.Window, SLO: r.SLO, OpenLoop: true, MaxDispatchLag: time.Millisecond})
		out[k] = &r
	}
	return out
}

func formatShard(i, n int) string {
	return strings.Join([]string{itoa(i), itoa(n)}, "/")
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestMergeEqualsWhole(t *testing.T) {
	whole := sampleRecord()
	for _, tc := range []struct {
		name     string
		n        int
		oneBased bool
		reverse  bool
	}{
		// The usual pair of matrix jobs.
		{"two shards", 2, true, false},
		// Given in any order.
		{"three shards reversed", 3, true, true},
		// Numbered from 0 (a Kubernetes Indexed Job's completion index).
		{"zero-based", 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shards := shardsOf(tc.n, tc.oneBased)
			if tc.reverse {
				for i, j := 0, len(shards)-1; i < j; i, j = i+1, j-1 {
					shards[i], shards[j] = shards[j], shards[i]
				}
			}
			m, err := Merge(shards...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(whole.Summary, m.Summary); d != "" {
				t.Errorf("merged summary differs from the whole run's (-whole +merged):\n%s", d)
			}
			if d := cmp.Diff(whole.Requests, m.Requests); d != "" {
				t.Errorf("merged requests differ (-whole +merged):\n%s", d)
			}
			if m.Window != whole.Window || m.Shard != "" || !m.Start.Equal(whole.Start) {
				t.Errorf("window %+v shard %q start %v; want %+v, no shard, the earliest start", m.Window, m.Shard, m.Start, whole.Window)
			}
		})
	}
}

func TestMergeRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shard func() []*Record
		want  string
	}{
		// Shards of different workloads (or of a changed one).
		{"mixed hashes", func() []*Record {
			s := shardsOf(2, true)
			s[1].WorkloadHash = "sha256:ffff"
			return s
		}, "workload hash"},
		// The same shard uploaded twice.
		{"duplicate shard", func() []*Record {
			s := shardsOf(2, true)
			return []*Record{s[0], s[0]}
		}, "appears twice"},
		// One matrix job failed to upload.
		{"missing shard", func() []*Record { return shardsOf(3, true)[:2] }, "missing 3/3"},
		// Shards of two different splits.
		{"different n", func() []*Record {
			s := shardsOf(2, true)
			s[1].Shard = "2/3"
			return s
		}, "one of 3"},
		// A record that was never a shard.
		{"not a shard", func() []*Record { return []*Record{sampleRecord()} }, "not a shard"},
		// A malformed shard field.
		{"bad shard", func() []*Record {
			s := shardsOf(2, true)
			s[0].Shard = "1of2"
			return s
		}, `shard "1of2"`},
		// Two shards that both sent request 0: they did not split one schedule.
		{"overlapping requests", func() []*Record {
			s := shardsOf(2, true)
			s[1].Requests = append(s[1].Requests, s[0].Requests[0])
			return s
		}, "request 0 appears in more than one shard"},
		// Judged against different SLOs: the merged attainment would mean nothing.
		{"different slo", func() []*Record {
			s := shardsOf(2, true)
			s[1].SLO = []SLOTarget{{Metric: MetricTTFT, Percentile: 99, LimitMS: 1}}
			return s
		}, "has SLO"},
		{"nothing", func() []*Record { return nil }, "no shard records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(tc.shard()...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Merge error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMergeMetadata(t *testing.T) {
	s := shardsOf(2, true)
	s[1].Incomplete, s[1].IncompleteReason = true, "interrupted"
	s[1].Environment = map[string]string{"engine.name": "vllm", "engine.version": "0.9.0"}
	s[0].Notes = []string{"same"}
	s[1].Notes = []string{"same"}
	m, err := Merge(s...)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Incomplete || m.IncompleteReason != "shard 2/2: interrupted" {
		t.Errorf("incomplete %v %q, want true and the shard's reason", m.Incomplete, m.IncompleteReason)
	}
	joined := strings.Join(m.Notes, "\n")
	if strings.Count(joined, "same") != 1 || !strings.Contains(joined, `engine.version = "0.9.0"`) || !strings.Contains(joined, "merged from 2 shards") {
		t.Errorf("notes = %q", m.Notes)
	}
	if m.Environment["engine.version"] != s[0].Environment["engine.version"] {
		t.Errorf("environment is not the lowest shard's: %v", m.Environment)
	}
	// The shards themselves are untouched.
	if s[0].Shard != "1/2" || len(s[0].Requests) != 3 {
		t.Errorf("Merge modified its input: %q, %d requests", s[0].Shard, len(s[0].Requests))
	}
}

func TestSumSeriesIsAStepFunctionSum(t *testing.T) {
	a := &Record{Series: Series{InFlight: []Sample{{0, 1}, {100, 3}, {200, 0}}}}
	b := &Record{Series: Series{InFlight: []Sample{{50, 2}, {200, 5}}}}
	got := sumSeries([]*Record{a, b})
	// At 0 only a has begun (1); at 50 b adds 2; at 100 a rises to 3; at 200 a is 0, b 5.
	want := []Sample{{0, 1}, {50, 3}, {100, 5}, {200, 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sum %v, want %v", got, want)
	}
	if sumSeries([]*Record{{}, {}}) != nil {
		t.Error("no samples should sum to none")
	}
}
