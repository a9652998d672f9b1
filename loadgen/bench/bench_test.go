package bench

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/sim"
)

// A short ladder in-process: every request completes with its tokens, the engine's
// timing comes back through the client, and the table names what it measured. Accuracy
// itself is the machine's, so it is printed, not asserted: a client descheduled on a
// loaded machine (under -race) reads events that piled up in its socket together, so
// single gaps may be short. Only TPOT p50, a whole stream's pace, is held to the
// injected ITL, at half of it.
func TestLadderAgainstFixedEngine(t *testing.T) {
	t.Parallel()
	open := httptest.NewServer((&sim.Fixed{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond}).Handler())
	defer open.Close()
	streams := httptest.NewServer((&sim.Fixed{TTFT: 20 * time.Millisecond, ITL: 30 * time.Millisecond}).Handler())
	defer streams.Close()
	o := Options{
		Open:    Engine{URL: open.URL, TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, Late: FixedLateness(open.URL)},
		Streams: Engine{URL: streams.URL, TTFT: 20 * time.Millisecond, ITL: 30 * time.Millisecond, Late: FixedLateness(streams.URL)},
		Points:  []Point{{Rate: 50, Tokens: 8, Duration: time.Second}, {Streams: 20, Tokens: 20}},
	}
	rs := Run(context.Background(), o)
	if len(rs) != 2 {
		t.Fatalf("%d results", len(rs))
	}
	for _, r := range rs {
		itl := float64(o.engine(r.Point).ITL) / 1e6
		if _, ok := stealTime(); ok && (r.StealPct < 0 || r.StealPct > 100) {
			t.Errorf("%s: steal %.1f%% of the machine's CPU time", r.Point, r.StealPct)
		}
		if _, ok := loadAvg(); ok && (r.LoadStart < 0 || r.LoadEnd < 0) {
			t.Errorf("%s: load average %v→%v though /proc/loadavg reads", r.Point, r.LoadStart, r.LoadEnd)
		}
		if r.EngineLateP99ms < 0 || r.EngineLateP99ms > r.TTFTP99ms {
			// The engine's lateness is in what the client measured from the schedule.
			t.Errorf("%s: engine late p99 %.3f ms, TTFT p99 %.3f ms", r.Point, r.EngineLateP99ms, r.TTFTP99ms)
		}
		if r.Errors != 0 || r.Requests == 0 || r.TPOTP50ms < 0.5*itl || r.TTFTP99ms < 20 {
			t.Errorf("%s: %d requests, %d errors, TTFT p99 %.2f ms, ITL p50 %.2f ms, TPOT p50 %.2f ms (injected ITL %.0f ms)",
				r.Point, r.Requests, r.Errors, r.TTFTP99ms, r.ITLP50ms, r.TPOTP50ms, itl)
		}
	}
	if rs[0].Requests != 50 || rs[1].Requests != 20 || rs[1].BytesPerStream <= 0 {
		t.Errorf("requests %d and %d, bytes per stream %v", rs[0].Requests, rs[1].Requests, rs[1].BytesPerStream)
	}
	var b bytes.Buffer
	Table(&b, o, rs)
	if !strings.Contains(b.String(), "| 50 req/s × 8 tok |") || !strings.Contains(b.String(), "| 20 streams × 20 tok |") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	e := Engine{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond}
	rate := Point{Rate: 1000, Tokens: 16}
	ok := Result{TTFTP99ms: 29, ITLP50ms: 5.2, ITLP99ms: 40}
	if a, why := judge(e, rate, ok); !a {
		t.Errorf("within bounds judged inaccurate: %s", why)
	}
	for _, c := range []struct {
		r    Result
		want string
	}{
		{Result{TTFTP99ms: 31, ITLP50ms: 5}, "TTFT p99"}, // 1.5× the injected 20 ms is 30
		{Result{TTFTP99ms: 21, ITLP50ms: 0}, "ITL p50"},  // events sharing one timestamp
		{Result{TTFTP99ms: 21, ITLP50ms: 5, Errors: 1}, "errors"},
		// An oracle 12 ms late at p99 spent more than the 10 ms TTFT allowance itself.
		{Result{TTFTP99ms: 29, ITLP50ms: 5, EngineLateP99ms: 12}, "engine late"},
	} {
		if a, why := judge(e, rate, c.r); a || !strings.Contains(why, c.want) {
			t.Errorf("%+v: accurate %v, %q; want %q", c.r, a, why, c.want)
		}
	}
	// Streams: TTFT is the connection storm's; the pace is what counts.
	s := Point{Streams: 5000, Tokens: 400}
	if a, why := judge(e, s, Result{TTFTP99ms: 900, ITLP50ms: 5, TPOTP50ms: 5, ITLP99ms: 7}); !a {
		t.Errorf("stream point: %s", why)
	}
	if a, why := judge(e, s, Result{ITLP50ms: 5, TPOTP50ms: 5, ITLP99ms: 8}); a || !strings.Contains(why, "ITL p99") {
		t.Errorf("stream ITL p99 over 1.5×: %v %q", a, why)
	}
	if a, why := judge(e, s, Result{ITLP50ms: 5, TPOTP50ms: 5, ITLP99ms: 7, EngineLateP99ms: 3}); a || !strings.Contains(why, "engine late") {
		t.Errorf("stream point whose engine wrote 3 ms late at p99 (bound 2.5 ms at 5 ms ITL): %v %q", a, why)
	}
}

func TestParsePoints(t *testing.T) {
	t.Parallel()
	ps, err := ParsePoints("1000x128, streams:2000x400")
	if err != nil || len(ps) != 2 || ps[0] != (Point{Rate: 1000, Tokens: 128, Duration: 5 * time.Second}) || ps[1] != (Point{Streams: 2000, Tokens: 400}) {
		t.Fatalf("got %+v, %v", ps, err)
	}
	for _, bad := range []string{"", "1000", "x128", "0x16", "1000x0", "streams:1.5x4", "streams:-2x4", "1000x12.5"} {
		if _, err := ParsePoints(bad); err == nil || !strings.Contains(err.Error(), "RATExTOKENS") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

// A rerun with the engine given more of the machine reads as its own row, and the highest
// accurate point is named from the first run only.
func TestTableRerunRows(t *testing.T) {
	t.Parallel()
	o := Options{Open: Engine{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond}}
	p := Point{Rate: 2000, Tokens: 16, Duration: time.Second}
	rs := []Result{
		{Point: Point{Rate: 1000, Tokens: 16}, Accurate: true},
		{Point: p, Why: "TTFT p99 40.0 ms > 30.0 ms"},
		{Point: p, Accurate: true, ClientProcs: 1, ServerProcs: 2},
	}
	if got := Inaccurate(rs); len(got) != 1 || got[0] != p {
		t.Fatalf("Inaccurate: %+v", got)
	}
	var b bytes.Buffer
	Table(&b, o, rs)
	s := b.String()
	for _, want := range []string{"| 2000 req/s × 16 tok | all/all |", "| 2000 req/s × 16 tok | 1/2 |", "no: TTFT p99 40.0 ms", "highest accurate point (open × 16 tok): 1000 req/s × 16 tok"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

// The host's state is printed beside what it measured: the load-average column, and the
// steal and load of the point named as the highest accurate one, since where the accurate
// edge lies depends on the host.
func TestTableHostState(t *testing.T) {
	t.Parallel()
	o := Options{Open: Engine{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond}}
	rs := []Result{
		// Known steal and load.
		{Point: Point{Rate: 1000, Tokens: 16}, Accurate: true, StealPct: 0.9, LoadStart: 1.5, LoadEnd: 2.25},
		// Neither known (no /proc): dashes, and no host state on the edge line.
		{Point: Point{Streams: 1000, Tokens: 400}, Accurate: true, StealPct: -1, LoadStart: -1, LoadEnd: -1},
	}
	var b bytes.Buffer
	Table(&b, o, rs)
	s := b.String()
	for _, want := range []string{
		"| steal % | load 1 min start→end |",
		"| 0.9 | 1.50→2.25 |",
		"| - | - |",
		"highest accurate point (open × 16 tok): 1000 req/s × 16 tok (steal 0.9%, load 1.50→2.25)\n",
		"highest accurate point (streams × 400 tok): 1000 streams × 400 tok\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	// Every row has as many cells as the header.
	lines := strings.Split(s, "\n")
	cells := strings.Count(lines[2], "|")
	for _, l := range lines[3:] {
		if strings.HasPrefix(l, "| ") && strings.Count(l, "|") != cells {
			t.Errorf("row %q has %d bars, the header %d", l, strings.Count(l, "|"), cells)
		}
	}
}
