package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime/pprof"

	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/sim"
)

const simUsage = `slogate sim [--addr 127.0.0.1:8000] [--profile NAME] [faults]

Serves the simulated continuous-batching engine (vLLM's API and metrics) until
interrupted. Profiles and faults are described in docs/sim.md. With --fixed-ttft and
--fixed-itl it serves an engine of exact timing instead (no batching model, the same
timing at any load): the oracle of 'slogate loadbench'.`

func (a *app) cmdSim(ctx context.Context, args []string) int {
	fs := a.flagSet("sim", simUsage)
	addr := fs.String("addr", "127.0.0.1:8000", "listen `address`")
	var o sim.Options
	o.Bind(fs)
	var fixed sim.Fixed
	fs.DurationVar(&fixed.TTFT, "fixed-ttft", 0, "serve the fixed-timing engine: time to the first token")
	fs.DurationVar(&fixed.ITL, "fixed-itl", 0, "serve the fixed-timing engine: time between tokens")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the engine to `file` when it stops")
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			a.errorf("sim: --cpuprofile: %v", err)
			return ExitBadInput
		}
		defer stop()
	}
	if fixed.TTFT > 0 || fixed.ITL > 0 {
		if err := sim.ServeFixed(ctx, *addr, &fixed, a.stderr); err != nil {
			a.errorf("sim: %v", err)
			return ExitFailure
		}
		return ExitOK
	}
	if !flagGiven(fs, "profile") {
		fmt.Fprintln(a.stderr, defaultProfileNote(o.Profile))
	}
	if err := sim.Serve(ctx, *addr, o, a.stderr); err != nil {
		a.errorf("sim: %v", err)
		return ExitFailure
	}
	return ExitOK
}

// startCPUProfile profiles this process into path until the returned func is called.
func startCPUProfile(path string) (func(), error) {
	f, err := fsafe.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// defaultProfileNote says, when no --profile was given, how much context the default
// profile serves and which profile serves a realistic workload: a prompt of a few
// thousand tokens does not fit the tiny one, and the run refuses it before sending.
func defaultProfileNote(p sim.Profile) string {
	big, err := sim.LookupProfile("llama-8b-h100")
	if err != nil {
		return fmt.Sprintf("slogate sim: default profile %s: at most %d tokens of prompt and output a request", p.Name, p.MaxModelLen)
	}
	return fmt.Sprintf("slogate sim: default profile %s: at most %d tokens of prompt and output a request; --profile %s serves %d, shaped like %s on one H100 (docs/sim.md)",
		p.Name, p.MaxModelLen, big.Name, big.MaxModelLen, big.Model)
}

// flagGiven says whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
