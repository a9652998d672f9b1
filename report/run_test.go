package report

import (
	"strings"
	"testing"

	"github.com/slogate/slogate/result"
)

// The terminal table shows per-token ITL, and says what it is, only when chunks carried
// several tokens.
func TestRunTablePerTokenITL(t *testing.T) {
	rec := &result.Record{Workload: "w", Mode: "open"}
	rec.Summary.ITLms = result.Percentiles{P50: 8, Count: 10}
	var b strings.Builder
	RunTable(&b, rec, "")
	if strings.Contains(b.String(), "ITL/token") {
		t.Errorf("a per-token row with one token a chunk:\n%s", b.String())
	}
	rec.Summary.ITLTokenms = result.Percentiles{P50: 2, Count: 40}
	rec.Summary.TokensPerChunk = &result.TokensPerChunk{Mean: 4, Inferred: 3}
	b.Reset()
	RunTable(&b, rec, "")
	out := b.String()
	if !strings.Contains(out, "ITL/token") || !strings.Contains(out, "chunks carried 4.000 tokens on average") || !strings.Contains(out, "inferred from usage for 3") {
		t.Errorf("table:\n%s", out)
	}
}

// TestPrefixSplitSaysWhichHitsAreWhose: a cold run's prefix-cache line names the hits the
// run's own requests had computed and the rest apart, in words that do not contradict
// each other (it read "the run's own 0 tokens (…), not the run's own 611 tokens").
func TestPrefixSplitSaysWhichHitsAreWhose(t *testing.T) {
	foreign, rate := 611.0, 0.06
	pc := &result.PrefixCacheStats{HitRate: 0.07, Source: "engine counters", Own: &result.OwnHits{Hits: 12, Readmitted: 12, Method: "per-request"}, Foreign: &foreign, ForeignRate: &rate}
	got := prefixSplit(pc)
	for _, want := range []string{"of the hits, 12 tokens the run's own requests had computed (12 re-admitted after preemption, 0 declared shared history, 0 the opening every prompt shares; told apart per-request)", "611 they had not (6.0% of the prompts: the figure a cold run is judged by)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Count(got, "the run's own") != 1 {
		t.Errorf("%q names the run's own hits twice", got)
	}
}
