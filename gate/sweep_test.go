package gate

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

const sweepHW = "h100-80gb-hbm3-x1"

// sweepRec is a sweep of workload chat whose highest passing rate is rps, its bracket
// closed to precision.
func sweepRec(rps, precision float64) *result.Sweep {
	top := rps * (1 + precision)
	return &result.Sweep{
		Schema: result.SweepSchema, Workload: "chat", WorkloadHash: "sha256:sweep", Hardware: sweepHW,
		Environment: gatetest.Env(), SLOAttainmentTarget: 0.99, Bound: result.BoundSLO,
		MaxSustainableRPS: &rps, FirstFailingRPS: &top,
		Params: result.SweepParams{MinRPS: 1, MaxRPS: 1000, Factor: 2, Process: "poisson", Precision: precision, StepRequests: 200},
		Steps:  []result.SweepStep{{Step: 1, Phase: "ramp", RateRPS: rps, Verdict: result.StepPass}},
	}
}

// with returns a copy of sw changed by fn.
func with(sw *result.Sweep, fn func(*result.Sweep)) *result.Sweep {
	c := *sw
	fn(&c)
	return &c
}

// sweepStore holds the run baseline of runs (none when nil) and the sweep baselines.
func sweepStore(t testing.TB, runs []*result.Record, sweeps ...*result.Sweep) Store {
	t.Helper()
	fsys := fstest.MapFS{}
	if runs != nil {
		b, err := FromRecords(runs, created)
		if err != nil {
			t.Fatal(err)
		}
		data, err := Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		fsys[RelPath(b.Workload, b.Hardware)] = &fstest.MapFile{Data: data}
	}
	for _, sw := range sweeps {
		data, err := result.MarshalSweep(sw)
		if err != nil {
			t.Fatal(err)
		}
		fsys[SweepRelPath(sw.Workload, SweepHardwareOf(sw))] = &fstest.MapFile{Data: data}
	}
	return Store{FS: fsys, Dir: "baselines"}
}

var sweepRule = workload.Rule{Metric: "max_sustainable_rps", Direction: "higher", Tolerance: 0.05}

func TestSweepVerdicts(t *testing.T) {
	f := testConfig([]workload.Rule{sweepRule})
	r := rec(f, 1, gatetest.Spec{Requests: 100})
	base := sweepRec(20, 0.05)
	for _, c := range []struct {
		name  string
		cand  *result.Sweep
		base  *result.Sweep
		want  Verdict
		ratio float64 // 0: not checked
		warn  string  // in the metric's warnings; "" for none
	}{
		// The baseline's own sweep: exactly 1, whatever the precision.
		{"itself", base, base, Pass, 1, ""},
		// 30% less capacity at a 5% tolerance: far beyond 5% + 5% of bisection precision.
		{"30% lower", sweepRec(14, 0.05), base, Fail, 0.7, ""},
		// 6% lower is beyond the tolerance but within what two 5% brackets can tell apart:
		// warn, and say why rather than fail.
		{"6% lower within precision", sweepRec(18.8, 0.05), base, Warn, 0.94, "within the sweeps' bisection precision (±10%: 5% here, 5% in the baseline)"},
		// 12% lower is beyond the 10% the brackets allow: the precision does not excuse it.
		{"12% lower beyond precision", sweepRec(17.6, 0.05), base, Fail, 0.88, ""},
		// The same 6% with 1% brackets on both sides: finer sweeps tell it apart, so it fails.
		{"6% lower with fine sweeps", sweepRec(18.8, 0.01), sweepRec(20, 0.01), Fail, 0.94, ""},
		// 8% more is past the tolerance but within the brackets: not shown as improved.
		{"8% higher within precision", sweepRec(21.6, 0.05), base, Pass, 1.08, "the improvement (+8.0%) is within"},
		// 30% more is an improvement the brackets cannot explain.
		{"30% higher", sweepRec(26, 0.05), base, Improved, 1.3, ""},
		// The candidate passed every step up to a --max-rate below the baseline's
		// capacity: it is at least that much, which shows nothing.
		{"candidate stopped at max rate", with(sweepRec(10, 0.05), func(s *result.Sweep) { s.Bound, s.FirstFailingRPS = result.BoundMaxRate, nil }), base, Incomparable, 0.5, "higher --max-rate"},
		// The baseline stopped at its --max-rate: more capacity now is not shown as better.
		{"baseline stopped at max rate", sweepRec(30, 0.05), with(base, func(s *result.Sweep) { s.Bound = result.BoundMaxRate }), Pass, 1.5, "only a lower bound"},
		// Another step size or definition: another hash, never compared.
		{"workload changed", with(base, func(s *result.Sweep) { s.WorkloadHash = "sha256:other" }), base, Incomparable, 0, "workload changed: baseline sweep hash sha256:sweep, sweep hash sha256:other"},
		// No step passed, and the first failing rate is a quarter of the baseline's
		// capacity: a regression whatever the exact number.
		{"no step passed, far below", with(base, func(s *result.Sweep) { s.MaxSustainableRPS, s.FirstFailingRPS = nil, ptrTo(5.0) }), base, Fail, 0, "below 5 req/s"},
		// No step passed, but the failing rate is near the baseline's: nothing shown.
		{"no step passed, near", with(base, func(s *result.Sweep) { s.MaxSustainableRPS, s.FirstFailingRPS = nil, ptrTo(19.5) }), base, Warn, 0, "lower --min-rate"},
		// The candidate has a sweep and no baseline sweep exists yet.
		{"no baseline sweep", base, nil, Warn, 0, "no baseline sweep at " + filepath.Join("baselines", "chat", sweepHW+".sweep.json") + ": create it with `slogate baseline update"},
		// The load generator bounded the sweep: no number, and the gate refuses it.
		{"client-limited", with(base, func(s *result.Sweep) {
			s.Bound, s.MaxSustainableRPS, s.FirstFailingRPS = result.BoundClient, nil, nil
			s.Steps = []result.SweepStep{{Step: 1, RateRPS: 50, Verdict: result.StepClient, Reason: "dispatch lag p99 9 ms > 1 ms"}}
		}), base, Error, 0, "the gate refuses to judge this sweep: the load generator, not the engine, limited the sweep at 50 req/s"},
		// An engine that failed mid-sweep: no number either.
		{"failed", with(base, func(s *result.Sweep) {
			s.Bound, s.MaxSustainableRPS, s.Failure = "", nil, "step 3 at 8 req/s: interrupted"
		}), base, Error, 0, "the sweep failed: step 3"},
	} {
		var bases []*result.Sweep
		if c.base != nil {
			bases = append(bases, c.base)
		}
		// The same verdict beside a run record of the workload and from the sweep alone.
		for _, runs := range [][]*result.Record{{r}, nil} {
			res, err := Evaluate(Input{Config: f, Runs: runs, Sweeps: []*result.Sweep{c.cand}, Store: sweepStore(t, []*result.Record{r}, bases...)})
			if err != nil {
				t.Fatalf("%s (%d runs): %v", c.name, len(runs), err)
			}
			if len(res.Workloads) != 1 {
				t.Fatalf("%s (%d runs): %d workloads", c.name, len(runs), len(res.Workloads))
			}
			w := res.Workloads[0]
			m := metric(t, w, "max_sustainable_rps")
			warns := strings.Join(m.Warnings, "; ")
			switch {
			case m.Verdict != c.want:
				t.Errorf("%s (%d runs): %s, want %s (%s)", c.name, len(runs), m.Verdict, c.want, warns)
			case c.ratio != 0 && (m.Ratio == nil || math.Abs(*m.Ratio-c.ratio) > 1e-12):
				t.Errorf("%s (%d runs): ratio %v, want %v", c.name, len(runs), val(m.Ratio), c.ratio)
			case c.ratio == 1 && *m.Ratio != 1:
				t.Errorf("%s: ratio %v, want exactly 1", c.name, *m.Ratio)
			case c.warn != "" && !strings.Contains(warns, c.warn):
				t.Errorf("%s (%d runs): warnings %q, want %q", c.name, len(runs), warns, c.warn)
			case c.warn == "" && warns != "":
				t.Errorf("%s (%d runs): unexpected warnings %q", c.name, len(runs), warns)
			case w.Verdict != Worst(m.Verdict, Pass):
				t.Errorf("%s (%d runs): workload %s, metric %s", c.name, len(runs), w.Verdict, m.Verdict)
			}
			if m.Unit != UnitRPS || (m.Ratio != nil && (m.Method != MethodExact || m.Resolution != c.cand.Params.Precision+c.base.Params.Precision)) {
				t.Errorf("%s: unit %s method %s resolution %v; want req/s, exact, the sum of the precisions", c.name, m.Unit, m.Method, m.Resolution)
			}
			// A workload in error shows its reason, not its rows: the reason says why.
			if c.want == Error && !strings.Contains(w.Reason, "max_sustainable_rps: the gate refuses") {
				t.Errorf("%s: reason %q", c.name, w.Reason)
			}
			if len(runs) == 0 && !strings.Contains(strings.Join(w.Warnings, ";"), "only its sweep was judged") {
				t.Errorf("%s: sweep-only warnings %v", c.name, w.Warnings)
			}
		}
	}
}

func ptrTo(v float64) *float64 { return &v }

func TestSweepMissing(t *testing.T) {
	f := testConfig([]workload.Rule{sweepRule, {Metric: "goodput", Direction: "higher", Tolerance: 0.05}})
	r := rec(f, 1, gatetest.Spec{Requests: 100})
	// Runs and a sweep baseline, no candidate sweep: a warning row that says how to get one.
	res := evaluate(t, f, sweepStore(t, []*result.Record{r}, sweepRec(20, 0.05)), r)
	m := metric(t, res.Workloads[0], "max_sustainable_rps")
	if m.Verdict != Warn || m.Method != MethodNone || m.Baseline != nil || !strings.Contains(strings.Join(m.Warnings, ";"), "run `slogate sweep -c slogate.yaml -w chat -o RESULTS_DIR`") {
		t.Errorf("no candidate sweep: %s %s %v", m.Verdict, m.Method, m.Warnings)
	}
	if res.Verdict != Warn || metric(t, res.Workloads[0], "goodput").Verdict != Pass {
		t.Errorf("the rest of the gate: %s", res.Verdict)
	}
	// A min on the rule is an absolute limit on the candidate's capacity alone.
	f = testConfig([]workload.Rule{{Metric: "max_sustainable_rps", Min: ptrTo(25)}})
	res, err := Evaluate(Input{Config: f, Sweeps: []*result.Sweep{sweepRec(20, 0.05)}, Store: Store{FS: fstest.MapFS{}, Dir: "baselines"}})
	if err != nil {
		t.Fatal(err)
	}
	if m := metric(t, res.Workloads[0], "max_sustainable_rps"); m.Verdict != Fail || m.Method != MethodAbsolute || !strings.Contains(strings.Join(m.Warnings, ";"), "below the minimum 25") {
		t.Errorf("min 25 req/s against 20: %s %s %v", m.Verdict, m.Method, m.Warnings)
	}
}

func TestSweepHashAndDrift(t *testing.T) {
	f := testConfig([]workload.Rule{sweepRule})
	base := sweepRec(20, 0.05)
	cand := with(base, func(s *result.Sweep) {
		s.Environment = gatetest.Env()
		s.Environment["engine.name"] = "sglang"
	})
	in := Input{Config: f, Sweeps: []*result.Sweep{cand}, Store: sweepStore(t, nil, base),
		SweepHash: func(w *workload.Workload, sw *result.Sweep) string { return "sha256:now" }}
	res, err := Evaluate(in)
	if err != nil {
		t.Fatal(err)
	}
	w := res.Workloads[0]
	m := metric(t, w, "max_sustainable_rps")
	// A sweep made from an older definition is said, as a stale run record is.
	if !strings.Contains(strings.Join(m.Warnings, ";"), "another definition of \"chat\" than slogate.yaml has now (sweep hash sha256:sweep, file hash sha256:now)") {
		t.Errorf("warnings %v", m.Warnings)
	}
	// Sweep-only: the drift is between the two sweeps, and engine.name fails by default.
	if m.Verdict != Pass || w.Verdict != Fail || w.WorkloadHash != "sha256:sweep" || w.BaselinePath != filepath.Join("baselines", "chat", sweepHW+".sweep.json") {
		t.Errorf("metric %s, workload %s, hash %s, path %s; want pass, fail on drift", m.Verdict, w.Verdict, w.WorkloadHash, w.BaselinePath)
	}
}

func TestSweepInputs(t *testing.T) {
	f := testConfig([]workload.Rule{sweepRule})
	empty := Store{FS: fstest.MapFS{}, Dir: "baselines"}
	sw := sweepRec(20, 0.05)
	// Two sweeps of one workload and hardware: which one is the candidate?
	if _, err := Evaluate(Input{Config: f, Sweeps: []*result.Sweep{sw, sw}, Store: empty}); !errors.As(err, new(*InputError)) || !strings.Contains(err.Error(), "two sweeps") {
		t.Errorf("two sweeps: %v", err)
	}
	// A sweep of another workload only: nothing to judge, said as such.
	rag := with(sw, func(s *result.Sweep) { s.Workload = "rag" })
	if _, err := Evaluate(Input{Config: f, Sweeps: []*result.Sweep{rag}, Store: empty}); !errors.As(err, new(*InputError)) || !strings.Contains(err.Error(), "no run records or sweeps") {
		t.Errorf("a sweep of an unknown workload only: %v", err)
	}
	// -w of a workload with a sweep and no runs is fine.
	res, err := Evaluate(Input{Config: f, Sweeps: []*result.Sweep{sw, rag}, Store: empty, Workloads: []string{"chat"}})
	if err != nil || len(res.Workloads) != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `sweep of workload "rag"`) {
		t.Errorf("chat selected: %v, %+v", err, res)
	}
	// Without a max_sustainable_rps rule a sweep is not judged, and the gate says so.
	g := testConfig([]workload.Rule{{Metric: "goodput", Direction: "higher", Tolerance: 0.05}})
	r := rec(g, 1, gatetest.Spec{Requests: 100})
	res = evaluate(t, g, storeOf(t, []*result.Record{r}), r)
	res2, err := Evaluate(Input{Config: g, Runs: []*result.Record{r}, Sweeps: []*result.Sweep{sw}, Store: storeOf(t, []*result.Record{r})})
	if err != nil || len(res2.Warnings) != 1 || !strings.Contains(res2.Warnings[0], "no max_sustainable_rps rule") || len(res2.Workloads[0].Metrics) != len(res.Workloads[0].Metrics) {
		t.Errorf("sweep without a rule: %v %v", err, res2.Warnings)
	}
	// A sweep baseline that cannot be used is bad input naming the file, as a baseline is.
	bad := Store{FS: fstest.MapFS{SweepRelPath("chat", sweepHW): {Data: []byte("{")}}, Dir: "baselines"}
	var fe *FileError
	if _, err := Evaluate(Input{Config: f, Sweeps: []*result.Sweep{sw}, Store: bad}); !errors.As(err, &fe) || !strings.Contains(fe.Path, "h100-80gb-hbm3-x1.sweep.json") {
		t.Errorf("corrupt sweep baseline: %v", err)
	}
}

func TestStoreLookupSweep(t *testing.T) {
	sw := sweepRec(20, 0.05)
	data, err := result.MarshalSweep(sw)
	if err != nil {
		t.Fatal(err)
	}
	run := validBaseline(t)
	s := Store{FS: fstest.MapFS{
		"chat/" + sweepHW + ".sweep.json": {Data: data},
		"rag/" + sweepHW + ".sweep.json":  {Data: data},
		"chat/l4-x1.sweep.json":           {Data: data},
		"chat/a10-x1.sweep.json":          {Data: run},
	}, Dir: "baselines"}
	got, p, err := s.LookupSweep("chat", sweepHW)
	if err != nil || got == nil || *got.MaxSustainableRPS != 20 || p != filepath.Join("baselines", "chat", sweepHW+".sweep.json") {
		t.Errorf("LookupSweep chat: %v %s %v", got, p, err)
	}
	if got, _, err := s.LookupSweep("chat", "cpu"); got != nil || err != nil {
		t.Errorf("missing sweep baseline: %v %v; want nil, no error", got, err)
	}
	for _, c := range []struct{ workload, hardware, want string }{
		// Copied into another workload's directory.
		{"rag", sweepHW, `sweep of workload "chat", not "rag"`},
		// Renamed to another hardware.
		{"chat", "l4-x1", `sweep of hardware "h100-80gb-hbm3-x1", not "l4-x1"`},
		// A run baseline saved under a sweep baseline's name.
		{"chat", "a10-x1", "not a slogate sweep record"},
	} {
		_, _, err := s.LookupSweep(c.workload, c.hardware)
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(fe.Path, "baselines") {
			t.Errorf("LookupSweep %s/%s: %v; want a *FileError naming the file and %q", c.workload, c.hardware, err, c.want)
		}
	}
	// A lister of *.json files that takes "<hw>.sweep" for a hardware finds no run
	// baseline there, rather than an error.
	if b, _, err := s.Lookup("chat", sweepHW+".sweep"); b != nil || err != nil {
		t.Errorf("Lookup of a sweep file: %v %v", b, err)
	}
}

func TestWriteSweep(t *testing.T) {
	dir := t.TempDir()
	sw := sweepRec(20, 0.05)
	p, err := WriteSweep(dir, sw)
	if err != nil || p != filepath.Join(dir, "chat", sweepHW+".sweep.json") {
		t.Fatalf("WriteSweep: %s %v", p, err)
	}
	got, _, err := DirStore(dir).LookupSweep("chat", sweepHW)
	if err != nil || got == nil || *got.MaxSustainableRPS != 20 || got.Params != sw.Params || len(got.Steps) != 1 {
		t.Errorf("read back: %+v %v", got, err)
	}
	if _, err := WriteSweep(dir, with(sw, func(s *result.Sweep) { s.Workload = "../x" })); err == nil {
		t.Error("WriteSweep of workload ../x succeeded")
	}
	// A run baseline's hardware must not collide with a sweep baseline's file name.
	if _, err := Write(dir, &Baseline{Workload: "chat", Hardware: "h100.sweep"}); err == nil {
		t.Error("Write of hardware h100.sweep succeeded")
	}
}

// TestAuditBesideSweep: a sweep baseline beside a run baseline leaves the audit of the
// run baseline as it was.
func TestAuditBesideSweep(t *testing.T) {
	f := testConfig(nil)
	r := rec(f, 1, gatetest.Spec{Requests: 50})
	a, err := AuditBaselines(AuditInput{Config: f, Store: sweepStore(t, []*result.Record{r}, sweepRec(20, 0.05)), Env: gatetest.Env(), Hardware: sweepHW, Now: created})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Entries) != 1 || a.Entries[0].Hardware != sweepHW || a.Verdict != Pass {
		t.Errorf("audit: %+v", a)
	}
}
