package measure

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/sim"
)

// A session workload run against the simulator with its prefix cache off: the record's
// summary breaks TTFT down by turn and by history length, later turns (longer histories)
// are slower, and the terminal table and the HTML report show it, the latter as the two
// charts.
func TestSessionBreakdownReport(t *testing.T) {
	t.Parallel()
	simURL := startSim(t, sim.Options{Seed: 1, Profile: sessionProfile, NoPrefixCaching: true})
	rec := runOnce(t, testRunner(nil), sessionsConfig, simURL)
	bt := rec.Summary.ByTurn
	if len(bt) != 5 {
		t.Fatalf("by_turn %+v, want 5 turns", bt)
	}
	for _, x := range bt {
		if x.Requests != 4 || x.Completed != 4 {
			t.Errorf("turn %d: %d requests, %d completed, want 4 sessions' worth", x.Turn, x.Requests, x.Completed)
		}
	}
	t.Logf("TTFT p50 by turn: %v %v %v %v %v ms; history p50 %d → %d tokens", bt[0].TTFTP50ms, bt[1].TTFTP50ms, bt[2].TTFTP50ms, bt[3].TTFTP50ms, bt[4].TTFTP50ms, bt[0].HistoryTokensP50, bt[4].HistoryTokensP50)
	// Without a cache the fifth turn prefills four turns of history (600 tokens and more
	// at 200 µs each): well above the first's.
	if !(bt[4].TTFTP50ms > bt[0].TTFTP50ms+50) || !(bt[4].HistoryTokensP50 > bt[0].HistoryTokensP50+500) {
		t.Errorf("turn 5 TTFT p50 %v ms, history %d; turn 1 %v ms, history %d: want the growth the history costs",
			bt[4].TTFTP50ms, bt[4].HistoryTokensP50, bt[0].TTFTP50ms, bt[0].HistoryTokensP50)
	}
	if len(rec.Summary.ByHistory) < 3 {
		t.Errorf("by_history %+v, want the histories spread over several buckets", rec.Summary.ByHistory)
	}
	var term bytes.Buffer
	report.RunTable(&term, rec, "")
	if !strings.Contains(term.String(), "by turn:") || !strings.Contains(term.String(), "by history length:") {
		t.Errorf("terminal table:\n%s", term.String())
	}
	var page bytes.Buffer
	if err := report.WriteHTML(&page, report.HTMLReport{Candidate: rec}); err != nil {
		t.Fatal(err)
	}
	s := page.String()
	for _, title := range []string{"TTFT by turn", "TTFT by history length"} {
		i := strings.Index(s, "<b>"+title+".</b>")
		if i < 0 {
			t.Fatalf("the HTML report has no chart %q", title)
		}
		fig := s[i : i+strings.Index(s[i:], "</figure>")]
		if !strings.Contains(fig, "<svg") || strings.Contains(fig, `class="missing"`) {
			t.Errorf("chart %q not drawn:\n%.300s", title, fig)
		}
	}
	if !strings.Contains(s, "<h2>By turn</h2>") {
		t.Error("the HTML report has no per-turn table")
	}
}
