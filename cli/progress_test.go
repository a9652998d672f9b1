package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/slogate/slogate/sim"
)

// TestRunProgressWithoutTTY: a run whose stderr is not a terminal (a CI log) prints
// plain progress lines, without escape codes; --quiet prints none.
func TestRunProgressWithoutTTY(t *testing.T) {
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, tinyConfig)
	for _, quiet := range []bool{false, true} {
		a, _, errb := testApp(t)
		args := []string{"run", "-c", cfg, "--target", url, "-o", t.TempDir()}
		if quiet {
			args = append(args, "--quiet")
		}
		a.run(context.Background(), args)
		log := errb.String()
		if strings.ContainsAny(log, "\x1b\r") {
			t.Errorf("quiet %v: escape codes in a non-terminal log: %q", quiet, log)
		}
		has := strings.Contains(log, "[small] measured 40/40 (100%)")
		if has == quiet {
			t.Errorf("quiet %v: progress line present %v in:\n%s", quiet, has, log)
		}
	}
}
