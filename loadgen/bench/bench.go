// Package bench measures the load generator itself: it walks a ladder of open-loop
// rates and closed-loop stream counts against an engine of exact timing (sim.Fixed), and
// says at each point whether what the client measured is still what the engine did
// (slogate loadbench). It is a benchmark, not a test: its figures depend on the machine.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/loadgen"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// Point is one step of the ladder: an open loop at Rate req/s for Duration, or (Rate 0)
// a closed loop of Streams concurrent streams sending one request each; Tokens is the
// output length of every request.
type Point struct {
	Rate     float64
	Streams  int
	Tokens   int
	Duration time.Duration
}

func (p Point) String() string {
	if p.Rate > 0 {
		return fmt.Sprintf("%g req/s × %d tok", p.Rate, p.Tokens)
	}
	return fmt.Sprintf("%d streams × %d tok", p.Streams, p.Tokens)
}

// Result is what the client measured at a point, against the injected timing.
type Result struct {
	Point
	Requests, Errors   int
	AchievedRPS        float64
	TTFTP99ms          float64 // from the scheduled time
	ITLP50ms, ITLP99ms float64
	TPOTP50ms          float64
	DispatchLagP99ms   float64
	ReaderLagP99ms     float64
	// EngineLateP99ms is how far behind its schedule the engine wrote its events at p99
	// (-1: not known): an oracle that falls behind is the machine's limit, not the
	// client's.
	EngineLateP99ms float64
	ClientCPUus     float64 // client CPU per request, µs
	ServerCPUus     float64 // server CPU per request, µs (0: unknown)
	ClientCores     float64 // client CPU over the point's wall time from the window's opening
	ServerCores     float64
	// StealPct is the share of the machine's CPU time the hypervisor took over the
	// window (/proc/stat steal; -1: unknown): a virtual machine whose cores are taken
	// away stalls client and engine alike.
	StealPct float64
	// LoadStart and LoadEnd are the machine's 1-minute load average (/proc/loadavg) when
	// the window opened and when the point ended (-1: unknown). Client and engine share
	// the machine with whatever else runs on it (2,000 req/s × 16 tokens read TTFT p99
	// 27 to 36 ms in some runs of the ladder and 66 ms in another), so the host's state
	// is printed beside what it measured.
	LoadStart, LoadEnd float64
	BytesPerStream     float64 // live Go heap + stacks halfway through the streams, above the idle level, per open stream (closed points)
	Accurate           bool
	Why                string // the first accuracy criterion missed
	// ClientProcs and ServerProcs are the GOMAXPROCS the point ran under, when they were
	// set (0: the Go default, every core): a rerun that gives the engine more of the
	// machine than the client says so.
	ClientProcs, ServerProcs int
}

// Engine is a fixed-timing engine the points are sent to.
type Engine struct {
	URL       string
	TTFT, ITL time.Duration // its injected timing
	// CPU returns the server's CPU time so far (nil: not measured).
	CPU func() time.Duration
	// Procs is the engine's GOMAXPROCS when it was set (0: the Go default).
	Procs int
	// Late returns how far behind its schedule the engine wrote its events at p99 since
	// the last call, and starts afresh (nil: not known; sim.Fixed's /fixed/lateness).
	Late func() (time.Duration, error)
}

// Options say whom to measure and how: the open-loop points go to Open, the stream
// points to Streams (the figures: 20 ms TTFT and 5 ms ITL; 50 ms ITL for streams).
type Options struct {
	Open, Streams Engine
	Points        []Point
	Log           io.Writer
	// ClientProcs is this client's GOMAXPROCS when it was set (0: the Go default), for
	// the table.
	ClientProcs int
}

func (o Options) engine(p Point) Engine {
	if p.Rate > 0 {
		return o.Open
	}
	return o.Streams
}

// DefaultPoints is the ladder of the targets: 5,000 req/s × 16 tokens, 2,000 req/s
// × 128 tokens, and 10,000 streams (50 ms ITL, 400 tokens) with the points below them.
func DefaultPoints() []Point {
	var ps []Point
	for _, r := range []float64{500, 1000, 2000, 5000} {
		ps = append(ps, Point{Rate: r, Tokens: 16, Duration: 5 * time.Second})
	}
	for _, r := range []float64{200, 500, 1000, 2000} {
		ps = append(ps, Point{Rate: r, Tokens: 128, Duration: 5 * time.Second})
	}
	for _, n := range []int{1000, 2000, 5000, 10000} {
		ps = append(ps, Point{Streams: n, Tokens: 400})
	}
	return ps
}

// Accuracy bounds: TTFT p99 from the scheduled time within 1.5× the injected TTFT (rate
// points), ITL p50 within 10% of the injected ITL, and for stream points TPOT p50 within
// 10% and ITL p99 within 1.5× the injected ITL, with no error anywhere.
const (
	TTFTSlack   = 1.5
	ITLP50Slack = 0.10
	ITLP99Slack = 1.5
)

// Run measures every point in turn.
func Run(ctx context.Context, o Options) []Result {
	var out []Result
	for _, p := range o.Points {
		if ctx.Err() != nil {
			break
		}
		r := measure(ctx, o, p)
		if o.Log != nil {
			fmt.Fprintf(o.Log, "loadbench: %s: %s\n", p, verdict(r))
		}
		out = append(out, r)
	}
	return out
}

func verdict(r Result) string {
	if r.Accurate {
		return "accurate"
	}
	return "inaccurate: " + r.Why
}

type source struct {
	arrivals []time.Duration
	tokens   int
}

func (s *source) Arrivals() []time.Duration { return s.arrivals }
func (s *source) Request(i int) workload.Item {
	return workload.Item{Index: i, Class: "bench", PromptTokens: 16, OutputTokens: s.tokens, Prompt: "The quick brown fox jumps over the lazy dog and keeps running."}
}
func (s *source) WarmupRequest(i int) workload.Item { it := s.Request(i); it.Warmup = true; return it }
func (s *source) ThinkTime(u, n int) time.Duration  { return 0 }

var _ loadgen.Source = (*source)(nil)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// collect collects twice: what the points before left in a sync.Pool survives one
// collection (in the pool's victim cache), and counted in the idle level it would be
// subtracted from the streams' memory once a collection during the point drops it.
func collect() {
	runtime.GC()
	runtime.GC()
}

// cpuTicks is the machine's CPU time so far, over every core, in USER_HZ ticks: all of
// it, and what the hypervisor took (steal).
type cpuTicks struct{ total, steal int64 }

// stealTime reads the first line of /proc/stat (user nice system idle iowait irq softirq
// steal ...). The steal clock is the hypervisor's own count, so a short window's share is
// right even though the other fields are sampled at the tick.
func stealTime() (cpuTicks, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTicks{}, false
	}
	var t cpuTicks
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuTicks{}, false
		}
		t.total += n
		if i == 7 {
			t.steal = n
		}
	}
	return t, true
}

// loadAvg reads the 1-minute load average, the first field of /proc/loadavg: runnable and
// uninterruptible tasks, averaged by the kernel, so it counts what else the machine runs.
func loadAvg() (float64, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// liveBytes is the Go heap and stacks, less the load generator's GC ballast (which no
// stream holds, and which the first run allocates).
func liveBytes() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse - uint64(loadgen.GCFloorHeld())
}

func measure(ctx context.Context, o Options, p Point) Result {
	e := o.engine(p)
	res := Result{Point: p, ClientProcs: o.ClientProcs, ServerProcs: e.Procs}
	epoch := time.Now()
	client := engine.NewClient(engine.ClientOptions{BaseURL: e.URL, Model: "sim-fixed", Epoch: epoch})
	src := &source{tokens: p.Tokens}
	cfg := loadgen.Config{Streamer: client, Source: src, Epoch: epoch, API: engine.APICompletions, Model: "sim-fixed",
		Timeout: time.Minute, Warmup: 8, WarmupConcurrency: 4}
	if p.Rate > 0 {
		n := int(p.Rate * p.Duration.Seconds())
		for i := range n {
			src.arrivals = append(src.arrivals, time.Duration(float64(i)/p.Rate*float64(time.Second)))
		}
	} else {
		cfg.Closed, cfg.Users, cfg.Requests = true, p.Streams, p.Streams
	}
	collect()
	idle := liveBytes()
	var live uint64
	if cfg.Closed {
		// The live heap and stacks once, halfway through the streams, after a
		// collection: what the open streams hold, not the garbage a sample between
		// collections would count with it.
		cfg.Observe = func(ctx context.Context) {
			t := time.NewTimer(e.TTFT + time.Duration(p.Tokens)*e.ITL/2)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
				collect()
				live = liveBytes()
			}
		}
	}
	res.EngineLateP99ms = -1
	// CPU, wall time and the engine's lateness count from the window's opening: the
	// warm-up (40 s of 4 streams at the stream points) would dilute the cores.
	var srv0 time.Duration
	cpu0, wall0 := cpuTime(), time.Now() // a run that never opens its window
	steal0, stealOK := stealTime()
	res.LoadStart, res.LoadEnd = -1, -1
	if l, ok := loadAvg(); ok {
		res.LoadStart = l
	}
	cfg.OpenWindow = func(context.Context) {
		steal0, stealOK = stealTime()
		if l, ok := loadAvg(); ok {
			res.LoadStart = l
		}
		if e.Late != nil {
			e.Late() // the warm-up and the points before are not this point's
		}
		cpu0, wall0 = cpuTime(), time.Now()
		if e.CPU != nil {
			srv0 = e.CPU()
		}
	}
	out, err := loadgen.Run(ctx, cfg)
	res.StealPct = -1
	if steal1, ok := stealTime(); ok && stealOK && steal1.total > steal0.total {
		res.StealPct = 100 * float64(steal1.steal-steal0.steal) / float64(steal1.total-steal0.total)
	}
	if l, ok := loadAvg(); ok {
		res.LoadEnd = l
	}
	wall := time.Since(wall0)
	cpu := cpuTime() - cpu0
	var srv time.Duration
	if e.CPU != nil {
		srv = e.CPU() - srv0
	}
	if err != nil {
		res.Why = err.Error()
		return res
	}
	if e.Late != nil {
		if late, err := e.Late(); err == nil {
			res.EngineLateP99ms = float64(late) / 1e6
		}
	}
	s := result.Summarize(out.Measured, result.SummaryInput{Window: out.Window, OpenLoop: !cfg.Closed, MaxDispatchLag: time.Hour})
	res.Requests = s.Requests
	for _, n := range s.Errors {
		res.Errors += n
	}
	res.AchievedRPS = s.ThroughputRPS
	if p.Rate > 0 && out.Window.EndUS > out.Window.StartUS && len(src.arrivals) > 1 {
		// Sending rate over the schedule's span: what the dispatcher kept up with.
		first, last := out.Measured[0].SendUS, out.Measured[len(out.Measured)-1].SendUS
		if last > first {
			res.AchievedRPS = float64(len(out.Measured)-1) / (float64(last-first) / 1e6)
		}
	}
	res.TTFTP99ms, res.ITLP50ms, res.ITLP99ms, res.TPOTP50ms = s.TTFTms.P99, s.ITLms.P50, s.ITLms.P99, s.TPOTms.P50
	res.DispatchLagP99ms = s.DispatchLagms.P99
	if out.ReaderLag != nil {
		res.ReaderLagP99ms = out.ReaderLag.P99
	}
	n := max(s.Requests, 1)
	res.ClientCPUus = float64(cpu.Microseconds()) / float64(n)
	res.ServerCPUus = float64(srv.Microseconds()) / float64(n)
	res.ClientCores = cpu.Seconds() / wall.Seconds()
	res.ServerCores = srv.Seconds() / wall.Seconds()
	if cfg.Closed && live > idle {
		res.BytesPerStream = float64(live-idle) / float64(p.Streams)
	}
	res.Accurate, res.Why = judge(e, p, res)
	return res
}

func judge(e Engine, p Point, r Result) (bool, string) {
	ttft, itl := float64(e.TTFT)/1e6, float64(e.ITL)/1e6
	switch {
	case r.Errors > 0:
		return false, fmt.Sprintf("%d errors", r.Errors)
	case r.EngineLateP99ms > EngineLateBound(e, p):
		// The client cannot measure a schedule the engine did not keep.
		return false, fmt.Sprintf("engine late: it wrote its events %.1f ms behind schedule at p99 (bound %.1f ms)", r.EngineLateP99ms, EngineLateBound(e, p))
	case p.Rate == 0 && (r.TPOTP50ms < (1-ITLP50Slack)*itl || r.TPOTP50ms > (1+ITLP50Slack)*itl):
		// Streams all open at once: their TTFT is the connection storm's, not the
		// client's accuracy; what must hold is every stream's pace.
		return false, fmt.Sprintf("TPOT p50 %.2f ms not within 10%% of %.1f ms", r.TPOTP50ms, itl)
	case p.Rate > 0 && r.TTFTP99ms > TTFTSlack*ttft:
		return false, fmt.Sprintf("TTFT p99 %.1f ms > %.1f ms", r.TTFTP99ms, TTFTSlack*ttft)
	case r.ITLP50ms < (1-ITLP50Slack)*itl || r.ITLP50ms > (1+ITLP50Slack)*itl:
		return false, fmt.Sprintf("ITL p50 %.2f ms not within 10%% of %.1f ms", r.ITLP50ms, itl)
	case p.Rate == 0 && r.ITLP99ms > ITLP99Slack*itl:
		return false, fmt.Sprintf("ITL p99 %.1f ms > %.1f ms", r.ITLP99ms, ITLP99Slack*itl)
	}
	return true, ""
}

// FixedLateness reads and resets the lateness p99 of the fixed-timing engine at url
// (sim.Fixed's /fixed/lateness): Engine.Late.
func FixedLateness(url string) func() (time.Duration, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	return func() (time.Duration, error) {
		resp, err := c.Get(url + "/fixed/lateness")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var l sim.Lateness
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			return 0, fmt.Errorf("%s/fixed/lateness: %v", url, err)
		}
		return time.Duration(l.P99US) * time.Microsecond, nil
	}
}

// EngineLateBound is how far behind schedule (p99, ms) the engine may write its events at
// p before the point measures the engine rather than the client: the whole of the
// accuracy allowance, (TTFTSlack − 1) × TTFT at rate points and (ITLP99Slack − 1) × ITL at
// stream points. Above it, an exact client would still read the point as inaccurate.
func EngineLateBound(e Engine, p Point) float64 {
	if p.Rate > 0 {
		return (TTFTSlack - 1) * float64(e.TTFT) / 1e6
	}
	return (ITLP99Slack - 1) * float64(e.ITL) / 1e6
}

// loadCell is the load-average column: start→end, "-" where unknown.
func loadCell(r Result) string {
	if r.LoadStart < 0 || r.LoadEnd < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f→%.2f", r.LoadStart, r.LoadEnd)
}

// hostState says what the machine was doing while a point ran: the hypervisor's steal and
// the load average, each where known.
func hostState(r Result) string {
	var parts []string
	if r.StealPct >= 0 {
		parts = append(parts, fmt.Sprintf("steal %.1f%%", r.StealPct))
	}
	if c := loadCell(r); c != "-" {
		parts = append(parts, "load "+c)
	}
	return strings.Join(parts, ", ")
}

// Table writes the results as docs/loadbench.md shows them, and names the highest accurate
// point of each kind (output length of the open loop, and streams) among the rows run
// with the default share of the machine, with the host's state while it ran (steal and
// load average): where the accurate edge lies depends on the host. Rows run with GOMAXPROCS set say so in the
// procs column (client/engine), so that a rerun with the engine given more of the machine
// reads beside the first run of the same point.
func Table(w io.Writer, o Options, rs []Result) {
	fmt.Fprintf(w, "fixed-timing engines: rate points TTFT %v ITL %v; stream points TTFT %v ITL %v\n\n", o.Open.TTFT, o.Open.ITL, o.Streams.TTFT, o.Streams.ITL)
	fmt.Fprintf(w, "| point | procs client/engine | achieved req/s | TTFT p99 ms | ITL p50 ms | ITL p99 ms | TPOT p50 ms | dispatch lag p99 ms | reader lag p99 ms | engine late p99 ms | client CPU µs/req | engine CPU µs/req | client cores | engine cores | steal %% | load 1 min start→end | KB/stream | errors | accurate |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	best := map[string]Result{}
	for _, r := range rs {
		kb := "-"
		if r.BytesPerStream > 0 {
			kb = fmt.Sprintf("%.1f", r.BytesPerStream/1024)
		}
		late := "-"
		if r.EngineLateP99ms >= 0 {
			late = fmt.Sprintf("%.3f", r.EngineLateP99ms)
		}
		steal := "-"
		if r.StealPct >= 0 {
			steal = fmt.Sprintf("%.1f", r.StealPct)
		}
		acc := "yes"
		if !r.Accurate {
			acc = "no: " + r.Why
		}
		fmt.Fprintf(w, "| %s | %s/%s | %.0f | %.1f | %.2f | %.1f | %.2f | %.3f | %.3f | %s | %.0f | %.0f | %.2f | %.2f | %s | %s | %s | %d | %s |\n",
			r.Point, procs(r.ClientProcs), procs(r.ServerProcs), r.AchievedRPS, r.TTFTP99ms, r.ITLP50ms, r.ITLP99ms, r.TPOTP50ms, r.DispatchLagP99ms, r.ReaderLagP99ms, late, r.ClientCPUus, r.ServerCPUus, r.ClientCores, r.ServerCores, steal, loadCell(r), kb, r.Errors, acc)
		key := fmt.Sprintf("open × %d tok", r.Tokens)
		if r.Rate == 0 {
			key = fmt.Sprintf("streams × %d tok", r.Tokens)
		}
		if r.Accurate && r.ClientProcs == o.ClientProcs && r.ServerProcs == o.engine(r.Point).Procs {
			best[key] = r
		}
	}
	var lines []string
	for k, r := range best {
		line := fmt.Sprintf("highest accurate point (%s): %s", k, r.Point)
		if h := hostState(r); h != "" {
			line += " (" + h + ")"
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	if len(lines) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
}

func procs(n int) string {
	if n == 0 {
		return "all"
	}
	return strconv.Itoa(n)
}

// Inaccurate returns the points of rs that were not measured accurately, for a rerun.
func Inaccurate(rs []Result) []Point {
	var ps []Point
	for _, r := range rs {
		if !r.Accurate {
			ps = append(ps, r.Point)
		}
	}
	return ps
}

// ParsePoints reads a ladder written as comma-separated points: RATExTOKENS for an open
// loop of 5 s ("1000x128"), streams:NxTOKENS for a closed loop of N streams
// ("streams:2000x400").
func ParsePoints(s string) ([]Point, error) {
	var ps []Point
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		spec, closed := strings.CutPrefix(f, "streams:")
		a, b, ok := strings.Cut(spec, "x")
		n, err1 := strconv.ParseFloat(a, 64)
		tok, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || n <= 0 || tok <= 0 || (closed && n != float64(int(n))) {
			return nil, fmt.Errorf("point %q: want RATExTOKENS (1000x128) or streams:NxTOKENS (streams:2000x400), positive numbers", f)
		}
		if closed {
			ps = append(ps, Point{Streams: int(n), Tokens: tok})
		} else {
			ps = append(ps, Point{Rate: n, Tokens: tok, Duration: 5 * time.Second})
		}
	}
	return ps, nil
}
