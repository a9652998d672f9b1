package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
)

// An agent workload end to end: sessions of three turns are tasks; a failed turn is sent
// again up to twice. Against an engine that fails 15% of requests, the record counts the
// retries as the tasks' requests and reports task goodput and requests per completed
// task; the run becomes a baseline; an engine that fails 60% of its requests fails the
// task_goodput rule; the capacity worksheet prices a completed task.
func TestTasksEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	const config = `version: 1
target: {api: chat, engine: auto}
model: {name: sim-tiny}
workloads:
  - name: agent
    seed: 5
    warmup: {requests: 2}
    arrival: {process: poisson, rate: 10}
    sessions:
      count: 40
      turns: 3
      user_tokens: {dist: uniform, min: 10, max: 30}
      output_tokens: 8
      think_time: 5ms
    tasks: {success: all, retries: 2}
    timeout: 20s
    # This machine may be loaded: the client's precision is not what this checks.
    max_dispatch_lag: 500ms
    slo: {ttft: {p95: 5s}}
gate:
  baselines: baselines
  rules:
    task_goodput: {direction: higher, tolerance: 10%}
    error_rate: {max: 100%}
capacity: {peak_rps: 20, target_utilization: 80%, gpu_hour_usd: 2}
`
	cfg := writeConfig(t, config)
	baseDir, candDir := t.TempDir(), t.TempDir()
	run := func(errorRate float64, dir string) *result.Record {
		t.Helper()
		url := startSim(t, sim.Options{Seed: 1, Faults: sim.Faults{ErrorRate: errorRate}})
		a, out, errb := testApp(t)
		if code := a.run(cmdCtx(t), []string{"run", "-q", "-c", cfg, "--target", url, "-o", dir}); code != ExitOK {
			t.Fatalf("run against an engine failing %.0f%%: exit %d\nstdout:\n%s\nstderr:\n%s", 100*errorRate, code, out, errb)
		}
		rec, err := result.Read(filepath.Join(dir, "agent.json"))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}

	base := run(0.15, baseDir)
	if r := base.Tasks; r == nil || r.By != result.TasksBySession || r.Success != result.TaskSuccessAll || r.Retries != 2 {
		t.Fatalf("record's task rule %+v; want by session, success all, 2 retries", r)
	}
	ts := base.Summary.Tasks
	if ts == nil {
		t.Fatal("no summary.tasks")
	}
	// Every turn's attempts: a retry follows a failed send of the same turn.
	retries, failedTurns := 0, 0
	type key struct{ s, n int }
	last := map[key]result.Request{}
	for _, q := range base.Requests {
		k := key{q.Session, q.Turn}
		if q.Attempt > 0 {
			retries++
			prev, ok := last[k]
			if !ok || prev.OK() || prev.Attempt != q.Attempt-1 {
				t.Fatalf("session %d turn %d attempt %d does not follow a failed attempt %d (%+v)", q.Session, q.Turn, q.Attempt, q.Attempt-1, prev)
			}
			if q.SchedUS < prev.EndUS {
				t.Errorf("session %d turn %d: the retry was scheduled at %d µs, before the failure ended at %d µs", q.Session, q.Turn, q.SchedUS, prev.EndUS)
			}
		}
		last[k] = q
	}
	for _, q := range last {
		if !q.OK() {
			failedTurns++
		}
	}
	if retries == 0 || ts.Retries != retries {
		t.Errorf("%d retries in the requests, summary says %d; want some at a 15%% error rate", retries, ts.Retries)
	}
	if ts.Tasks != 40 || ts.Requests != len(base.Requests) || ts.Completed < 30 || ts.Completed+failedTurns < 40 {
		t.Errorf("tasks %+v; want 40 tasks, all %d requests, most completed (%d turns failed every attempt)", ts, len(base.Requests), failedTurns)
	}
	if ts.RequestsPerCompleted <= 3 || ts.TaskGoodput <= 0 || ts.TaskGoodput > ts.TasksPS {
		t.Errorf("requests per completed task %v (want over the 3 turns: retries cost), task goodput %v, tasks/s %v", ts.RequestsPerCompleted, ts.TaskGoodput, ts.TasksPS)
	}

	a, out, errb := testApp(t)
	if code := a.run(cmdCtx(t), []string{"baseline", "update", "-c", cfg, "-r", baseDir}); code != ExitOK {
		t.Fatalf("baseline update: exit %d\n%s\n%s", code, out, errb)
	}
	bl, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "baselines", "agent", "sim.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(bl), `"task_met"`) {
		t.Error("the baseline keeps no task_met column")
	}

	// The same engine never fails the task_goodput rule against its baseline: 40 tasks'
	// sampling noise (about ±23%) is wider than the 10% tolerance, so it passes only when
	// its interval happens to fall inside it, and is otherwise inconclusive (exit 4).
	same := t.TempDir()
	run(0.15, same)
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"gate", "-c", cfg, "-r", same}); code != ExitOK && code != ExitInconclusive {
		t.Errorf("gate, same engine: exit %d, want pass or inconclusive\n%s\n%s", code, out, errb)
	}

	// An engine failing 60% of its requests loses a turn to its three tries 0.6³ = 22% of
	// the time and completes about 0.784³ = 48% of the tasks: a ratio far enough under
	// the tolerance that 40 tasks' sampling noise (about ±23%) cannot hide it. At 50%
	// (67% of the tasks) the interval's end sometimes came out at 0.904, a warning.
	cand := run(0.6, candDir)
	if cand.Summary.Tasks.SuccessRate >= ts.SuccessRate {
		t.Fatalf("candidate completed %v of its tasks, the baseline %v", cand.Summary.Tasks.SuccessRate, ts.SuccessRate)
	}
	jsonOut := filepath.Join(candDir, "gate.json")
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"gate", "-c", cfg, "-r", candDir, "--json", jsonOut}); code != ExitGateFailed {
		t.Fatalf("gate, failing engine: exit %d, want %d\n%s\n%s", code, ExitGateFailed, out, errb)
	}
	var res gate.Result
	raw, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var tg *gate.MetricResult
	for i := range res.Workloads[0].Metrics {
		if m := &res.Workloads[0].Metrics[i]; m.Metric == "task_goodput" {
			tg = m
		}
	}
	if tg == nil || tg.Verdict != gate.Fail || tg.Unit != gate.UnitTasksPS || tg.Ratio == nil || *tg.Ratio > 0.9 {
		t.Fatalf("task_goodput %+v; want a fail in tasks/s, ratio under 0.9", tg)
	}
	if !strings.Contains(out.String(), "task_goodput") {
		t.Errorf("the verdict table does not name task_goodput:\n%s", out)
	}

	// The comment states the tasks.
	md := filepath.Join(candDir, "comment.md")
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"report", "-r", candDir, "--markdown", md}); code != ExitOK {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errb)
	}
	comment, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(comment), "Tasks: **") || !strings.Contains(string(comment), "requests per completed task") {
		t.Errorf("the comment does not state the tasks:\n%s", comment)
	}

	// The worksheet prices a completed task: GPU-s per request × requests per task.
	a, out, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"capacity", "-r", filepath.Join(baseDir, "agent.json"), "-c", cfg}); code != ExitOK {
		t.Fatalf("capacity: exit %d\n%s\n%s", code, out, errb)
	}
	if !strings.Contains(out.String(), "per completed task") || !strings.Contains(out.String(), "cost per completed task") {
		t.Errorf("the worksheet does not price a task:\n%s", out)
	}
}
