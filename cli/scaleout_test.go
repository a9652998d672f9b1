package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// scaleConfig is tinyConfig with a longer schedule (more requests to compare a merged
// run with an unsharded one) and a dispatch-lag bound a loaded test machine keeps.
var scaleConfig = strings.NewReplacer(
	"    requests: 40\n", "    requests: 90\n",
	"    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 30s\n",
).Replace(tinyConfig)

// runShards runs n shards of cfg against url, shard k launched k×stagger after the first,
// all anchored to startAt; it returns their records.
func runShards(t *testing.T, cfg, url string, n int, startAt time.Time, stagger time.Duration) []string {
	t.Helper()
	paths := make([]string, n)
	codes := make([]int, n)
	errs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		dir := t.TempDir()
		paths[i] = filepath.Join(dir, "small.json")
		wg.Go(func() {
			time.Sleep(time.Duration(i) * stagger)
			a, _, errb := testApp(t)
			codes[i] = a.run(cmdCtx(t), []string{"run", "-c", cfg, "--target", url, "-o", dir,
				"--shard", fmt.Sprintf("%d/%d", i+1, n), "--start-at", startAt.Format(time.RFC3339Nano)})
			errs[i] = errb.String()
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != ExitOK {
			t.Fatalf("shard %d/%d: exit %d\n%s", i+1, n, c, errs[i])
		}
	}
	return paths
}

func TestSynchronizedShardsMergeToOneRun(t *testing.T) {
	quiet(t)
	long(t)
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, scaleConfig)

	// Three machines that come up 0.4 s apart, all told to start at the same moment.
	startAt := time.Now().Add(4 * time.Second)
	paths := runShards(t, cfg, url, 3, startAt, 400*time.Millisecond)
	merged := filepath.Join(t.TempDir(), "small.json")
	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), append([]string{"merge", "-o", merged}, paths...)); code != ExitOK {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errb)
	}
	m, err := result.Read(merged)
	if err != nil {
		t.Fatal(err)
	}

	// Every shard opened its window at the common start, not when it came up: the
	// opening times agree within the worst lateness each recorded (plus timer slack).
	var shards []*result.Record
	worst := 0.0
	var first, last time.Time
	for _, p := range paths {
		r, err := result.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
		s := r.Sync
		if s == nil || !s.StartAt.Equal(startAt.UTC()) || s.LateMS < 0 || s.MaxLateMS <= 0 {
			t.Fatalf("shard %s: start sync %+v, want start_at %v", r.Shard, s, startAt.UTC())
		}
		if d := s.OpenedAt.Sub(s.StartAt).Seconds()*1000 - s.LateMS; math.Abs(d) > 50 {
			t.Errorf("shard %s opened %v after start_at but recorded %.1f ms late", r.Shard, s.OpenedAt.Sub(s.StartAt), s.LateMS)
		}
		worst = max(worst, s.LateMS)
		if first.IsZero() || s.OpenedAt.Before(first) {
			first = s.OpenedAt
		}
		if s.OpenedAt.After(last) {
			last = s.OpenedAt
		}
	}
	if spread := last.Sub(first); spread.Seconds()*1000 > worst+50 {
		t.Errorf("shards opened %v apart with a worst lateness of %.1f ms: the start was not synchronized", spread, worst)
	}
	t.Logf("start skew: worst shard %.2f ms late; windows opened within %v of each other", worst, last.Sub(first))

	// The merged record states the worst skew, keeps every shard's environment, and has
	// everything a single run's record has.
	if m.Sync == nil || m.Sync.LateMS != worst || m.Sync.WorstShard == "" {
		t.Errorf("merged start sync %+v, want late_ms %.3f", m.Sync, worst)
	}
	if len(m.Shards) != 3 {
		t.Fatalf("merged shards %+v", m.Shards)
	}
	scraped := 0
	for _, s := range m.Shards {
		if len(s.Environment) == 0 || s.Requests == 0 {
			t.Errorf("shard info %+v", s)
		}
		if s.Scraped {
			scraped++
		}
	}
	if scraped != 1 || m.Summary.Running == nil || len(m.Series.Engine) == 0 || m.Summary.PrefixCache == nil {
		t.Errorf("engine gauges: %d shards scraped, running %v, series %d, prefix cache %v", scraped, m.Summary.Running, len(m.Series.Engine), m.Summary.PrefixCache)
	}
	if m.Summary.KVConcurrency == nil || m.Summary.LittleLaw == nil || len(m.Series.InFlight) == 0 {
		t.Fatalf("merged summary lacks kv_concurrency %v, little_law %v or the in-flight series (%d)", m.Summary.KVConcurrency, m.Summary.LittleLaw, len(m.Series.InFlight))
	}
	for _, n := range m.Notes {
		if strings.HasPrefix(n, "shard ") && strings.Contains(n, result.NoteLittleLaw) {
			t.Errorf("a shard's Little's law note survived the merge: %q", n)
		}
	}
	// The in-flight series is the sum of the shards': its peak is at least any shard's.
	peak := func(ss []result.Sample) float64 {
		p := 0.0
		for _, s := range ss {
			p = max(p, s.V)
		}
		return p
	}
	for _, r := range shards {
		if peak(r.Series.InFlight) > peak(m.Series.InFlight) {
			t.Errorf("shard %s peaks at %g in flight, the merged series at %g", r.Shard, peak(r.Series.InFlight), peak(m.Series.InFlight))
		}
	}

	// An unsharded run of the same workload: the same schedule, the same KV-limited
	// concurrency (same requests, same engine), and metrics within sampling error.
	dir := t.TempDir()
	a, _, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", cfg, "--target", url, "-o", dir}); code != ExitOK {
		t.Fatalf("unsharded run: exit %d\n%s", code, errb)
	}
	whole, err := result.Read(filepath.Join(dir, "small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Requests) != len(m.Requests) {
		t.Fatalf("merged %d requests, unsharded %d", len(m.Requests), len(whole.Requests))
	}
	// The unsharded record counts from its own epoch, the merged one from the common
	// start: compare offsets from the first arrival.
	for k := range m.Requests {
		dm, dw := m.Requests[k].SchedUS-m.Requests[0].SchedUS, whole.Requests[k].SchedUS-whole.Requests[0].SchedUS
		if d := dm - dw; d < -2 || d > 2 {
			t.Fatalf("request %d scheduled %d µs after the first merged, %d µs unsharded", k, dm, dw)
		}
	}
	if *m.Summary.KVConcurrency != *whole.Summary.KVConcurrency {
		t.Errorf("kv_concurrency merged %+v, unsharded %+v", *m.Summary.KVConcurrency, *whole.Summary.KVConcurrency)
	}
	ms, ws := m.Summary, whole.Summary
	if ms.Completed != ws.Completed || math.Abs(ms.GoodputRPS/ws.GoodputRPS-1) > 0.15 || math.Abs(ms.ThroughputRPS/ws.ThroughputRPS-1) > 0.15 {
		t.Errorf("merged completed %d goodput %.3f throughput %.3f; unsharded %d %.3f %.3f", ms.Completed, ms.GoodputRPS, ms.ThroughputRPS, ws.Completed, ws.GoodputRPS, ws.ThroughputRPS)
	}
	if r := ms.TTFTms.P50 / ws.TTFTms.P50; r < 0.5 || r > 2 {
		t.Errorf("TTFT p50 merged %.2f ms, unsharded %.2f ms", ms.TTFTms.P50, ws.TTFTms.P50)
	}
	var tables strings.Builder
	report.RunTable(&tables, m, "merged from 3 shards")
	report.RunTable(&tables, whole, "unsharded")
	t.Logf("merged beside unsharded:\n%s", tables.String())

	// Shards of runs with different start times are not one run: exit 2.
	other := runShards(t, cfg, url, 1, time.Now().Add(200*time.Millisecond), 0)
	_ = other
	a, _, errb = testApp(t)
	// Shard 1/1 against shard 2/3 and 3/3: a different set, refused whatever the reason.
	if code := a.run(cmdCtx(t), []string{"merge", "-o", merged, other[0], paths[1], paths[2]}); code != ExitBadInput {
		t.Errorf("mismatched shards: exit %d, stderr %q", code, errb)
	}
}

func TestMergeRefusesShardsOfDifferentStarts(t *testing.T) {
	t.Parallel()
	long(t)
	url := startSim(t, sim.Options{Seed: 1})
	cfg := writeConfig(t, scaleConfig)
	a := runShards(t, cfg, url, 2, time.Now().Add(2*time.Second), 0)
	b := runShards(t, cfg, url, 2, time.Now().Add(2*time.Second), 0)
	app, _, errb := testApp(t)
	if code := app.run(cmdCtx(t), []string{"merge", "-o", filepath.Join(t.TempDir(), "m.json"), a[0], b[1]}); code != ExitBadInput || !strings.Contains(errb.String(), "start time") {
		t.Errorf("exit %d, stderr %q", code, errb)
	}
}

func TestLateShardIsRefused(t *testing.T) {
	t.Parallel()
	url := startSim(t, sim.Options{Seed: 1})
	// A dispatch-lag bound the late start does not break, so that only the start check
	// judges it.
	cfg := writeConfig(t, strings.Replace(tinyConfig, "    timeout: 20s\n", "    timeout: 20s\n    max_dispatch_lag: 5s\n", 1))
	// The common start was a second ago: this shard's window opens a second late.
	dir := t.TempDir()
	a, _, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"run", "-c", cfg, "--target", url, "-o", dir, "--shard", "1/1", "--start-at", time.Now().Add(-time.Second).Format(time.RFC3339Nano)}); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	rec, err := result.Read(filepath.Join(dir, "small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Sync == nil || rec.Sync.LateMS < 900 {
		t.Fatalf("start sync %+v: want about 1000 ms late", rec.Sync)
	}
	// Its first requests were due before it started: they went out at once, and their
	// lag counts against latency from the scheduled time.
	if lag := rec.Requests[0].SendUS - rec.Requests[0].SchedUS; lag < 500_000 {
		t.Errorf("first request sent %d µs after its scheduled time: the schedule was not anchored to --start-at", lag)
	}
	why := rec.Unfit()
	if !strings.Contains(why, "after the common start time") {
		t.Errorf("gate.Unfit = %q", why)
	}
	merged := filepath.Join(t.TempDir(), "small.json")
	a, _, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"merge", "-o", merged, filepath.Join(dir, "small.json")}); code != ExitOK {
		t.Fatalf("merge: exit %d %s", code, errb)
	}
	m, _ := result.Read(merged)
	if why := m.Unfit(); !strings.Contains(why, "shard 1/1 opened its window") {
		t.Errorf("merged: gate.Unfit = %q", why)
	}
}

func TestShardFromEnv(t *testing.T) {
	t.Parallel()
	cases := []struct {
		idx, n, want, err string
	}{
		{"0", "3", "1/3", ""},    // Kubernetes counts from 0, shards from 1
		{"2", "3", "3/3", ""},    // the last pod
		{"3", "3", "", "from 0"}, // an index beyond the completions
		{"", "3", "", "must both be set"},
		{"1", "x", "", "from 0"},
	}
	for _, c := range cases {
		got, err := shardFromEnv(func(k string) string {
			return map[string]string{"JOB_COMPLETION_INDEX": c.idx, "SLOGATE_SHARDS": c.n}[k]
		})
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q of %q: %q, %v", c.idx, c.n, got, err)
		}
	}
	for _, s := range []string{"2026-12-01T20:00:00Z", "@1796155200", "@1796155200.5"} {
		if _, err := parseStartAt(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"tomorrow", "@-1", "20:00", "@1e30"} {
		if _, err := parseStartAt(s); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

// ciStep runs `slogate ci` as one step of a workflow job with env as its environment
// and returns its exit code, its log and its step outputs.
func ciStep(t *testing.T, env map[string]string) (int, string, map[string]string) {
	t.Helper()
	outFile := filepath.Join(t.TempDir(), "outputs")
	env["GITHUB_OUTPUT"], env["GITHUB_STEP_SUMMARY"] = outFile, filepath.Join(t.TempDir(), "summary")
	a, out, errb := testApp(t)
	a.getenv = func(k string) string { return env[k] }
	code := a.run(cmdCtx(t), []string{"ci"})
	outputs := map[string]string{}
	data, _ := os.ReadFile(outFile)
	lines := strings.Split(string(data), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if k, _, ok := strings.Cut(lines[i], "<<"); ok {
			outputs[k] = lines[i+1]
		}
	}
	return code, out.String() + errb.String(), outputs
}

// The Actions flow of docs/scale-out.md, each job in its own directory as on its own
// runner: a baseline, three matrix jobs in mode run with their shard and the common
// start time, then the fan-in job in mode merge over their downloaded records, which
// gates the merged run and posts one comment.
func TestCIShardMatrixFanIn(t *testing.T) {
	t.Parallel()
	long(t)
	url := startSim(t, sim.Options{Seed: 1})
	cfg := scaleConfig + "gate:\n  baselines: baselines\n  drift: {tool.version: ignore}\n  rules:\n    goodput: {direction: higher, tolerance: 50%}\n    error_rate: {max: 5%}\n"
	gh := newFakeGitHub(t)
	job := func() string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "slogate.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "pr.json"), []byte(`{"pull_request":{"number":7,"head":{"repo":{"full_name":"acme/serving","fork":false}},"base":{"repo":{"full_name":"acme/serving"}}}}`), 0o644)
		return dir
	}
	env := func(dir, mode string, extra ...string) map[string]string {
		e := map[string]string{
			"INPUT_CONFIG": "slogate.yaml", "INPUT_MODE": mode, "INPUT_TARGET": url, "INPUT_GITHUB-TOKEN": "tok-1",
			"INPUT_WORKING-DIRECTORY": dir, "GITHUB_API_URL": gh.srv.URL, "GITHUB_REPOSITORY": "acme/serving",
			"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": filepath.Join(dir, "pr.json"),
			"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42", "GITHUB_SHA": "0123456789abcdef",
		}
		for i := 0; i+1 < len(extra); i += 2 {
			e[extra[i]] = extra[i+1]
		}
		return e
	}

	// The baseline, as a release's unsharded run would make it.
	fanIn := job()
	if code, log, _ := ciStep(t, env(fanIn, "baseline", "GITHUB_EVENT_NAME", "push", "INPUT_GITHUB-TOKEN", "")); code != ExitOK {
		t.Fatalf("baseline: exit %d\n%s", code, log)
	}

	startAt := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	shardsDir := filepath.Join(fanIn, "shards")
	var wg sync.WaitGroup
	codes, logs := make([]int, 3), make([]string, 3)
	for i := range 3 {
		wg.Go(func() {
			dir := job()
			codes[i], logs[i], _ = ciStep(t, env(dir, "run", "INPUT_SHARD", fmt.Sprintf("%d/3", i+1), "INPUT_START-AT", startAt))
			// actions/upload-artifact, then download-artifact into shards/shard-N.
			if err := os.CopyFS(filepath.Join(shardsDir, fmt.Sprintf("shard-%d", i+1)), os.DirFS(filepath.Join(dir, "slogate-out"))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != ExitOK {
			t.Fatalf("shard job %d: exit %d\n%s", i+1, c, logs[i])
		}
	}
	gh.mu.Lock()
	if len(gh.comments) != 0 {
		t.Errorf("the shard jobs commented: %d comments", len(gh.comments))
	}
	gh.mu.Unlock()

	code, log, outputs := ciStep(t, env(fanIn, "merge", "INPUT_SHARDS", "shards"))
	if code != ExitOK {
		t.Fatalf("merge: exit %d\n%s", code, log)
	}
	if v := outputs["verdict"]; v != "pass" && v != "improved" && v != "warn" {
		t.Errorf("verdict %q\n%s", v, log)
	}
	m, err := result.Read(filepath.Join(fanIn, "slogate-out", "small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 3 || m.Sync == nil || len(m.Requests) != 90 {
		t.Errorf("merged record: %d shards, sync %+v, %d requests", len(m.Shards), m.Sync, len(m.Requests))
	}
	// The fan-in's results directory lists the merged record as its run: a later
	// `slogate report -r` or `gate -r` reads it, not the baseline step's run record.
	run, _, err := result.ReadRun(filepath.Join(fanIn, "slogate-out"))
	if err != nil || len(run) != 1 || len(run[0].Shards) != 3 {
		t.Errorf("the results directory's run: %d records, %v", len(run), err)
	}
	gh.mu.Lock()
	defer gh.mu.Unlock()
	if len(gh.comments) != 1 || !strings.Contains(gh.comments[0].Body, "small") {
		t.Errorf("comments after the fan-in: %d", len(gh.comments))
	}

	// mode merge without its input is bad input.
	code, log, _ = ciStep(t, env(fanIn, "merge"))
	if code != ExitBadInput || !strings.Contains(log, "input shards") {
		t.Errorf("merge without shards: exit %d\n%s", code, log)
	}
}
