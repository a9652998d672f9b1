package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slogate/slogate/loadgen/bench"
)

const loadbenchUsage = `slogate loadbench [--quick | --points LIST] [--server-procs N] [--client-procs N] [--rerun [--rerun-procs C/E]] [--cpuprofile PREFIX]

Measures this machine's load generator: walks a ladder of open-loop rates (500 to 5,000
req/s × 16 tokens, 200 to 2,000 req/s × 128 tokens) and closed-loop stream counts (1,000
to 10,000 streams × 400 tokens) against engines of exact timing (slogate sim --fixed-*:
TTFT 20 ms, ITL 5 ms; 50 ms ITL for the streams), each served by its own child process,
and prints for each point the achieved rate, TTFT p99, ITL p50/p99, dispatch lag p99, the
client's goroutine lateness, how far behind its schedule the engine itself wrote (p99),
client and server CPU over the measured window, bytes per open stream and whether the
client still measured what the engine did (no error; for rates TTFT p99 from the scheduled
time within 1.5× the injected TTFT and ITL p50 within 10% of the injected ITL; for streams
TPOT and ITL p50 within 10% and ITL p99 within 1.5× the injected ITL). A point whose engine
wrote later than that allowance (0.5× TTFT at rates, 0.5× ITL for streams) is the engine's
or the machine's limit, and says so: no client could measure it. Run it on a quiet
machine: it measures the machine. --quick runs a short ladder (a smoke test); --points
runs the points listed, e.g. --points 1000x128,streams:2000x400 (RATExTOKENS for 5 s, or
streams:NxTOKENS). --rerun runs the inaccurate points again with the engines given more of
the machine than the client (GOMAXPROCS C for the client, E for the engines; default half
the cores and all of them): a point that turns accurate was limited by the engine's share
of the cores. The table is Markdown, ready for docs/loadbench.md.`

func (a *app) cmdLoadbench(ctx context.Context, args []string) int {
	fs := a.flagSet("loadbench", loadbenchUsage)
	quick := fs.Bool("quick", false, "a short ladder of small points")
	pointList := fs.String("points", "", "the points to run instead of the ladder: RATExTOKENS or streams:NxTOKENS, comma-separated")
	serverProcs := fs.Int("server-procs", 0, "GOMAXPROCS of the engine processes (0: the Go default)")
	clientProcs := fs.Int("client-procs", 0, "GOMAXPROCS of this client (0: the Go default)")
	rerun := fs.Bool("rerun", false, "rerun the inaccurate points with the engines given more of the machine than the client (--rerun-procs)")
	rerunProcs := fs.String("rerun-procs", "", "GOMAXPROCS of the client/engines for --rerun, `C/E` (default: half the cores for the client, all for the engines)")
	cpuProfile := fs.String("cpuprofile", "", "write CPU profiles to `PREFIX`-client.pprof, PREFIX-open.pprof and PREFIX-streams.pprof (the engines')")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	var points []bench.Point
	if *pointList != "" {
		ps, err := bench.ParsePoints(*pointList)
		if err != nil {
			a.errorf("loadbench: --points: %v", err)
			return ExitBadInput
		}
		points = ps
	}
	rc, re := max(1, runtime.NumCPU()/2), runtime.NumCPU()
	if *rerunProcs != "" {
		a1, b1, ok := strings.Cut(*rerunProcs, "/")
		c1, err1 := strconv.Atoi(a1)
		e1, err2 := strconv.Atoi(b1)
		if !ok || err1 != nil || err2 != nil || c1 < 1 || e1 < 1 {
			a.errorf("loadbench: --rerun-procs %q: want CLIENT/ENGINE, two positive GOMAXPROCS values (1/2)", *rerunProcs)
			return ExitBadInput
		}
		rc, re = c1, e1
	}
	if *clientProcs > 0 {
		defer setMaxProcs(*clientProcs)()
	}
	prof := func(string) string { return "" }
	if *cpuProfile != "" {
		prof = func(name string) string { return *cpuProfile + "-" + name + ".pprof" }
		stop, err := startCPUProfile(prof("client"))
		if err != nil {
			a.errorf("loadbench: --cpuprofile: %v", err)
			return ExitBadInput
		}
		defer stop()
	}
	open, stop1, err := startFixed(ctx, 20*time.Millisecond, 5*time.Millisecond, *serverProcs, prof("open"))
	if err != nil {
		a.errorf("loadbench: %v", err)
		return ExitFailure
	}
	defer func() {
		if stop1 != nil {
			stop1()
		}
	}()
	streams, stop2, err := startFixed(ctx, 20*time.Millisecond, 50*time.Millisecond, *serverProcs, prof("streams"))
	if err != nil {
		a.errorf("loadbench: %v", err)
		return ExitFailure
	}
	defer func() {
		if stop2 != nil {
			stop2()
		}
	}()
	o := bench.Options{Open: open, Streams: streams, Points: bench.DefaultPoints(), Log: a.stderr, ClientProcs: *clientProcs}
	if *quick {
		o.Points = []bench.Point{{Rate: 200, Tokens: 16, Duration: 2 * time.Second}, {Streams: 200, Tokens: 40}}
	}
	if points != nil {
		o.Points = points
	}
	rs := bench.Run(ctx, o)
	if again := bench.Inaccurate(rs); *rerun && len(again) > 0 && ctx.Err() == nil {
		// The same points with the engines on more of the machine than the client: a
		// point that becomes accurate was limited by the engine's share of the cores.
		stop1()
		stop2()
		stop1, stop2 = nil, nil
		ro := o
		ro.Points, ro.ClientProcs = again, rc
		var err error
		if ro.Open, stop1, err = startFixed(ctx, 20*time.Millisecond, 5*time.Millisecond, re, prof("rerun-open")); err != nil {
			a.errorf("loadbench: %v", err)
			return ExitFailure
		}
		if ro.Streams, stop2, err = startFixed(ctx, 20*time.Millisecond, 50*time.Millisecond, re, prof("rerun-streams")); err != nil {
			a.errorf("loadbench: %v", err)
			return ExitFailure
		}
		restore := setMaxProcs(rc)
		rs = append(rs, bench.Run(ctx, ro)...)
		restore()
	}
	bench.Table(a.stdout, o, rs)
	if ctx.Err() != nil {
		return ExitFailure
	}
	return ExitOK
}

// startFixed runs `slogate sim --fixed-ttft --fixed-itl` as a child process (its CPU
// apart from the client's) and returns it as a bench engine.
func startFixed(ctx context.Context, ttft, itl time.Duration, procs int, profile string) (bench.Engine, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return bench.Engine{}, nil, err
	}
	args := []string{"sim", "--addr", "127.0.0.1:0", "--fixed-ttft", ttft.String(), "--fixed-itl", itl.String()}
	if profile != "" {
		args = append(args, "--cpuprofile", profile)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = os.Environ()
	if procs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return bench.Engine{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return bench.Engine{}, nil, err
	}
	stop := func() {
		// SIGTERM first, so that the engine writes its profile.
		cmd.Process.Signal(syscall.SIGTERM)
		t := time.AfterFunc(5*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		t.Stop()
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "serving on "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			pid := cmd.Process.Pid
			url = strings.TrimSpace(url)
			return bench.Engine{URL: url, TTFT: ttft, ITL: itl, CPU: func() time.Duration { return procCPU(pid) }, Procs: procs, Late: bench.FixedLateness(url)}, stop, nil
		}
	}
	stop()
	return bench.Engine{}, nil, fmt.Errorf("the fixed-timing engine did not start")
}

// procCPU is a process's user + system CPU time from /proc (0 where there is none).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz
}

func setMaxProcs(n int) func() {
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}
