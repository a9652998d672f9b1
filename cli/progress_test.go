package cli

import (
	"strings"
	"testing"

	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// TestRunProgressWithoutTTY: a run whose stderr is not a terminal (a CI log) prints
// plain progress lines, without escape codes; --quiet prints none.
func TestRunProgressWithoutTTY(t *testing.T) {
	t.Parallel()
	long(t)
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, tinyConfig)
	for _, quiet := range []bool{false, true} {
		a, _, errb := testApp(t)
		args := []string{"run", "-c", cfg, "--target", url, "-o", t.TempDir()}
		if quiet {
			args = append(args, "--quiet")
		}
		a.run(cmdCtx(t), args)
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

// A session workload's arrival rate counts session starts, while progress counts turns:
// it has no target rate to show ("… of 2.00 target" compared turns a second with it).
func TestTargetRateOfSessions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		want float64
	}{{"valid_sessions.yaml", 0}, {"valid_minimal.yaml", -1}} {
		f, err := workload.Load("../testdata/config/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		got := targetRate(f, f.Workloads[0].Name)
		if c.want == 0 && got != 0 {
			t.Errorf("%s: target rate %v, want none", c.file, got)
		}
		if c.want < 0 && got <= 0 {
			t.Errorf("%s: target rate %v, want the arrival rate", c.file, got)
		}
	}
}
