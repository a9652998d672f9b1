package cli

import (
	"context"

	"github.com/slogate/slogate/sim"
)

const simUsage = `slogate sim [--addr 127.0.0.1:8000] [--profile NAME] [faults]

Serves the simulated continuous-batching engine (vLLM's API and metrics) until
interrupted. Profiles and faults are described in docs/sim.md.`

func (a *app) cmdSim(ctx context.Context, args []string) int {
	fs := a.flagSet("sim", simUsage)
	addr := fs.String("addr", "127.0.0.1:8000", "listen `address`")
	var o sim.Options
	o.Bind(fs)
	if code, ok := a.parse(fs, args); !ok {
		return code
	}
	if err := sim.Serve(ctx, *addr, o, a.stderr); err != nil {
		a.errorf("sim: %v", err)
		return ExitFailure
	}
	return ExitOK
}
