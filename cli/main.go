// Package cli is slogate's command line: flag parsing, subcommand wiring and exit codes.
// Each stage lives in its own package (workload, engine, loadgen, result, gate, report,
// ghaction); this package only connects them.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/slogate/slogate/engine"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/slogate/slogate/envinfo"
	"github.com/slogate/slogate/ghaction"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
)

// Exit codes (DESIGN §5), documented in the README and docs/commands.md.
const (
	ExitOK         = 0 // success; the gate passed (warnings allowed)
	ExitGateFailed = 1 // the gate failed
	ExitBadInput   = 2 // bad config, flags or baseline file
	ExitFailure    = 3 // the tool or the engine failed (unreachable, crashed, client-saturated)
	// ExitInconclusive: a rule was left undecided (verdict inconclusive) and fail-on is
	// inconclusive (the default) or warn: nothing was shown either way.
	ExitInconclusive = 4
)

// SignalGrace is how long slogate waits, after the first SIGINT or SIGTERM, for the
// command to write what it measured and return. A second signal, or the end of the grace,
// exits 3 at once, whatever the command is blocked on (a read, an engine that does not
// answer): no signal can leave slogate holding a runner.
const SignalGrace = 10 * time.Second

// Main runs slogate with args (without the program name) and returns the exit code. The
// first SIGINT or SIGTERM cancels the command's context; a second one, or SignalGrace
// after the first, ends the process with exit 3 (watchSignals).
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go watchSignals(sigs, done, cancel, stderr, SignalGrace, forceExit)
	if blockForTest != nil {
		blockForTest()
	}
	a := newApp(stdout, stderr)
	return a.run(ctx, args)
}

// blockForTest, set only by this package's test binary acting as slogate, blocks Main
// before the command in a call no context reaches (the open of a FIFO without a writer),
// as a command stuck in a read would be: what the grace period must end.
var blockForTest func()

// forceExit ends the process at once, killing the engines it started: each run's journal
// is already on disk.
func forceExit(code int) {
	engine.KillStarted()
	os.Exit(code)
}

// watchSignals cancels the command at the first signal of sigs, then exits 3 (through
// exit) at a second signal or after grace, unless done closes first (the command
// returned).
func watchSignals(sigs <-chan os.Signal, done <-chan struct{}, cancel context.CancelCauseFunc, stderr io.Writer, grace time.Duration, exit func(int)) {
	var first os.Signal
	select {
	case first = <-sigs:
	case <-done:
		return
	}
	cancel(fmt.Errorf("interrupted by %v", first))
	fmt.Fprintf(stderr, "slogate: %v: stopping; what was measured is being written (a second signal, or %s, ends slogate at once with exit 3)\n", first, grace)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case s := <-sigs:
		fmt.Fprintf(stderr, "slogate: %v again: exiting now (exit 3)\n", s)
	case <-t.C:
		fmt.Fprintf(stderr, "slogate: still running %s after %v: exiting now (exit 3)\n", grace, first)
	case <-done:
		return
	}
	exit(ExitFailure)
}

// app holds everything a command needs from the outside world, so that commands are
// testable in-process.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	isTTY          bool
	quiet          bool // --quiet: no progress, only the result
	// envOptions returns how to read the GPU and host environment (tests fake nvidia-smi).
	envOptions func() envinfo.Options
	// probeTimeout and preflightTimeout bound the calls to the engine before the run
	// (zero: measure's defaults); tests shorten them.
	probeTimeout, preflightTimeout time.Duration
	// git runs git (the commit that last changed a baseline file); tests fake it.
	git ghaction.GitRunner
	// secrets are redacted from everything written to stdout and stderr and from every
	// record (the GitHub token, the engine's API key).
	secrets *result.Secrets
	// tempDirFunc is where a record goes when the output directory fails at the end
	// (nil: os.TempDir).
	tempDirFunc func() string
	// measured, when set, sees each run's record as measured (measure.Runner.Measured):
	// tests make a block or a calibration run unfit.
	measured func(*result.Record)
	// newRunID, when set, gives each run its id (measure.Runner.NewRunID): tests send
	// the same prompts twice.
	newRunID func() string
}

func (a *app) tempDir() string {
	if a.tempDirFunc != nil {
		return a.tempDirFunc()
	}
	return os.TempDir()
}

func newApp(stdout, stderr io.Writer) *app {
	a := &app{stdout: stdout, stderr: stderr, getenv: os.Getenv, now: time.Now, git: execGit}
	a.envOptions = func() envinfo.Options {
		o := envinfo.DefaultOptions()
		o.Getenv = a.getenv
		o.ToolVersion, o.ToolCommit = ToolVersion()
		return o
	}
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			a.isTTY = true
		}
	}
	return a
}

// execGit runs git in dir ("" the working directory).
func execGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return out, fmt.Errorf("%v: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return out, err
}

type command struct {
	summary string
	run     func(a *app, ctx context.Context, args []string) int
}

func commands() map[string]command {
	return map[string]command{
		"run":        {"run the workloads of a config against an engine and write run records", (*app).cmdRun},
		"gate":       {"compare run records with the committed baselines and give a verdict", (*app).cmdGate},
		"baseline":   {"baseline update: make run records (and sweeps) the new baselines", (*app).cmdBaseline},
		"ab":         {"A/B in one job: the baseline and candidate engines in alternating blocks on this machine, gated", (*app).cmdAB},
		"plan":       {"print what gating a pull request costs (GPU minutes per mode, blocks, detectable change) before it runs", (*app).cmdPlan},
		"calibrate":  {"measure the engine's run-to-run spread on this runner (A/A runs) and store it with the baseline", (*app).cmdCalibrate},
		"audit":      {"show each baseline's versions, age and drift from the current environment", (*app).cmdAudit},
		"sim":        {"serve the simulated engine (vLLM's API) for tests and demos", (*app).cmdSim},
		"demo":       {"run the whole pipeline on the built-in simulated engine (no GPU, no server)", (*app).cmdDemo},
		"sweep":      {"find the highest arrival rate that meets the SLO (the capacity a latency SLO allows)", (*app).cmdSweep},
		"capacity":   {"print the capacity worksheet: GPUs and cost for a traffic profile", (*app).cmdCapacity},
		"import":     {"import vLLM, guidellm or AIPerf results as run records", (*app).cmdImport},
		"export":     {"export a run record as CSV (one row per request or ITL gap) or as vLLM's result JSON", (*app).cmdExport},
		"loadbench":  {"measure this machine's load generator against engines of exact timing", (*app).cmdLoadbench},
		"merge":      {"merge the shard records of one run made on several machines", (*app).cmdMerge},
		"completion": {"print a shell completion script (bash, zsh or fish)", (*app).cmdCompletion},
		"report":     {"render the pull-request comment and the HTML report from a results directory", (*app).cmdReport},
		"ci":         {"the GitHub Action: run, gate, report and publish (reads INPUT_* variables)", (*app).cmdCI},
		"version":    {"print the version", func(a *app, _ context.Context, args []string) int { return a.cmdVersion(args) }},
	}
}

func (a *app) run(ctx context.Context, args []string) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		a.usage(a.stderr, cmds)
		if len(args) == 0 {
			return ExitBadInput
		}
		return ExitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(a.stderr, "slogate: unknown command %q; expected one of %s\n", args[0], quoteList(sortedKeys(cmds)))
		return ExitBadInput
	}
	// The GitHub token (and, once a config names it, the engine's API key) never
	// reaches the terminal, a log or an annotation, whatever text carried it there.
	if a.secrets == nil {
		a.secrets = &result.Secrets{}
		a.secrets.Add(a.getenv("GITHUB_TOKEN"), a.getenv("INPUT_GITHUB-TOKEN"), a.getenv("INPUT_GITHUB_TOKEN"))
		a.stdout, a.stderr = a.secrets.Writer(plainWriter{a.stdout}), a.secrets.Writer(plainWriter{a.stderr})
	}
	return c.run(a, ctx, args[1:])
}

// plainWriter strips bidi controls from what reaches the terminal: server text in an
// error or a note must not reorder what the reader sees.
type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) {
	s := report.StripBidi(string(b))
	if _, err := io.WriteString(p.w, s); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (a *app) usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintf(w, "slogate gates changes to an LLM serving stack on measured serving quality.\n\nUsage: slogate COMMAND [flags]\n\nCommands:\n")
	for _, name := range sortedKeys(cmds) {
		fmt.Fprintf(w, "  %-10s %s\n", name, cmds[name].summary)
	}
	fmt.Fprintf(w, "\nExit codes: 0 ok, 1 gate failed, 2 bad input, 3 tool or engine failure (also a second\nSIGINT or SIGTERM, or the first after %s), 4 inconclusive (--fail-on).\nRun 'slogate COMMAND -h' for a command's flags.\n", SignalGrace)
}

func (a *app) flagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "%s\n\nFlags:\n", usage)
		printFlags(a.stderr, fs)
	}
	return fs
}

// aliasOf matches the usage of a flag that is another's alias: "... (same as -c)".
var aliasOf = regexp.MustCompile(`\(same as -{1,2}([A-Za-z0-9-]+)\)$`)

// printFlags lists each flag once, with its aliases ("-c, --config file"), its usage and
// its default where the usage does not state one and it is not the zero value.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	aliases := map[string][]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if m := aliasOf.FindStringSubmatch(f.Usage); m != nil && fs.Lookup(m[1]) != nil {
			aliases[m[1]] = append(aliases[m[1]], f.Name)
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if m := aliasOf.FindStringSubmatch(f.Usage); m != nil && fs.Lookup(m[1]) != nil {
			return
		}
		names := []string{dash(f.Name)}
		for _, al := range aliases[f.Name] {
			names = append(names, dash(al))
		}
		arg, usage := flag.UnquoteUsage(f)
		line := "  " + strings.Join(names, ", ")
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintln(w, line)
		if !strings.Contains(usage, "(default") && !zeroDefault(f.DefValue) {
			if arg == "string" || arg == "file" || arg == "dir" || arg == "URL" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "    \t%s\n", strings.ReplaceAll(usage, "\n", "\n    \t"))
	})
}

func dash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func zeroDefault(v string) bool {
	switch v {
	case "", "0", "false", "0%", "0s", "[]":
		return true
	}
	return false
}

// parseWithFiles parses flags that may come before, between or after file arguments
// (import and export take both); ok is false when the command must return code.
func (a *app) parseWithFiles(fs *flag.FlagSet, args []string) (files []string, code int, ok bool) {
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, ExitOK, false
			}
			return nil, ExitBadInput, false
		}
		if fs.NArg() == 0 {
			return files, 0, true
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// parse parses flags; ok is false when the command must return code.
func (a *app) parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, false
		}
		return ExitBadInput, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(a.stderr, "slogate %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return ExitBadInput, false
	}
	return 0, true
}

func (a *app) errorf(format string, args ...any) {
	fmt.Fprintf(a.stderr, "slogate: "+format+"\n", args...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// stringList is a repeatable (or comma-separated) string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}
