package cli

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

func TestShardedRunMergesToTheWholeSchedule(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	cfgText := strings.Replace(tinyConfig, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n", 1)
	cfg := writeConfig(t, cfgText)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	// Three machines, started at different moments, each with its own output directory.
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range 3 {
		wg.Go(func() {
			a, _, _ := testApp(t)
			codes[i] = a.run(cmdCtx(t), []string{"run", "-c", cfg, "--target", url, "-o", dirs[i], "--shard", []string{"1/3", "2/3", "3/3"}[i]})
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != ExitOK {
			t.Fatalf("shard %d/3: exit %d", i+1, c)
		}
	}
	merged := filepath.Join(t.TempDir(), "small.json")
	a, out, errb := testApp(t)
	args := []string{"merge", "-o", merged}
	for _, d := range dirs {
		args = append(args, filepath.Join(d, "small.json"))
	}
	if code := a.run(cmdCtx(t), args); code != ExitOK {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errb)
	}
	rec, err := result.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	// Every request of the schedule exactly once, at its scheduled offset (to the
	// microsecond the record keeps, ±1 for rounding).
	f, err := workload.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gen, _ := workload.NewGenerator(&f.Workloads[0])
	arr := gen.Arrivals()
	if len(rec.Requests) != len(arr) || rec.Summary.Requests != len(arr) || rec.Shard != "" {
		t.Fatalf("merged %d requests (summary %d, shard %q), schedule has %d", len(rec.Requests), rec.Summary.Requests, rec.Shard, len(arr))
	}
	for k, r := range rec.Requests {
		if d := r.SchedUS - arr[k].Microseconds(); r.I != k || d < -1 || d > 1 || r.SendUS < r.SchedUS-1 || r.EndUS < r.SendUS {
			t.Fatalf("request %d: i %d sched %d (want %d) send %d end %d", k, r.I, r.SchedUS, arr[k].Microseconds(), r.SendUS, r.EndUS)
		}
	}
	// A set with a shard missing is refused.
	a, _, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"merge", "-o", merged, filepath.Join(dirs[0], "small.json"), filepath.Join(dirs[1], "small.json")}); code != ExitBadInput {
		t.Errorf("incomplete set: exit %d, stderr %q", code, errb)
	}
}

func TestShardRefusesClosedLoop(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, strings.Replace(tinyConfig, "arrival: {process: poisson, rate: 20}", "arrival: {process: closed, users: 2}", 1))
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", cfg, "--target", "http://127.0.0.1:1", "--shard", "1/2"}); code != ExitBadInput || !strings.Contains(errb.String(), "closed-loop") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}
