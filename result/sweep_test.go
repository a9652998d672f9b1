package result

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stepRecord is a run record of n requests scheduled every 100 ms, each completed 50 ms
// later, whose summary says what the case needs; queue, when set, is the engine's
// queue-depth series, one sample per scheduled request.
func stepRecord(n int, attain, errRate float64, queue []float64) *Record {
	rec := &Record{SLOAttainmentTarget: 0.99, MaxDispatchLagMS: 1}
	met := int(math.Round(attain * float64(n)))
	for i := range n {
		at := int64(i) * 100_000
		rec.Requests = append(rec.Requests, Request{I: i, SchedUS: at, SendUS: at, EndUS: at + 50_000, SLOMet: i < met})
	}
	if queue != nil {
		rec.Series.Engine = map[string][]Sample{}
		for i, v := range queue {
			rec.Series.Engine["queue_depth"] = append(rec.Series.Engine["queue_depth"], Sample{TUS: int64(i) * 100_000, V: v})
		}
	}
	rec.Summary = Summary{Requests: n, Completed: n, SLOAttainment: attain, ErrorRate: errRate,
		GoodputRPS: 9, ThroughputRPS: 10, TTFTms: Percentiles{P99: 120}, ITLms: Percentiles{P99: 30}, E2Ems: Percentiles{Mean: 800}}
	return rec
}

// inFlightGrew gives r a client in-flight series, one sample a scheduled request, that
// grows from 0 to 30.
func inFlightGrew(r *Record) *Record {
	for i, v := range ramp(len(r.Requests), 0, 30) {
		r.Series.InFlight = append(r.Series.InFlight, Sample{TUS: int64(i) * 100_000, V: v})
	}
	return r
}

// completedEvery makes r's requests complete every us microseconds, 50 ms after the
// first was scheduled.
func completedEvery(r *Record, us int64) *Record {
	for i := range r.Requests {
		r.Requests[i].EndUS = int64(i)*us + 50_000
	}
	return r
}

func ramp(n int, from, to float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from + (to-from)*float64(i)/float64(n-1)
	}
	return out
}

func TestStepOfVerdicts(t *testing.T) {
	flat := ramp(40, 1, 1)
	cases := []struct {
		name   string
		rec    func() *Record
		want   string
		reason string
	}{
		// Attainment at the target with a flat queue: the engine keeps up.
		{"pass", func() *Record { return stepRecord(40, 0.99, 0, flat) }, StepPass, ""},
		// One miss too many: below the target is a fail, whatever the margin.
		{"fail", func() *Record { return stepRecord(40, 0.975, 0, flat) }, StepFail, "every SLO target: 39 of 40 (97.50%"},
		// The queue grew by 20 while arrivals lasted: saturated even though the short step
		// still met the SLO; a longer one would not.
		{"queue-grew", func() *Record { return stepRecord(40, 1, 0, ramp(40, 0, 20)) }, StepSaturated, "engine's waiting queue grew by"},
		// Growth under the limit (max(4, 10% of 40)) is noise, not saturation.
		{"queue-noise", func() *Record { return stepRecord(40, 1, 0, ramp(40, 0, 3)) }, StepPass, ""},
		// Attainment collapsed to a third of the target.
		{"collapse", func() *Record { return stepRecord(40, 0.3, 0, flat) }, StepSaturated, "attainment collapsed"},
		// The engine sheds load with errors.
		{"errors", func() *Record { return stepRecord(40, 0.8, 0.2, flat) }, StepSaturated, "error rate 20.0%"},
		// Client-saturated is no verdict on the engine, even with perfect attainment.
		{"client", func() *Record {
			r := stepRecord(40, 1, 0, flat)
			r.Summary.ClientSaturated = true
			r.Summary.DispatchLagms.P99 = 3.5
			return r
		}, StepClient, "dispatch lag p99 3.500 ms > 1 ms"},
		// An incomplete run measured nothing steady.
		{"incomplete", func() *Record {
			r := stepRecord(40, 1, 0, flat)
			r.Incomplete, r.IncompleteReason = true, "interrupted"
			return r
		}, StepFailed, "interrupted"},
		// Without engine metrics the client's in-flight count stands in; after the fill
		// (the first requests' latency) it grows by 30.
		{"client-in-flight-grew", func() *Record { return inFlightGrew(stepRecord(40, 1, 0, nil)) }, StepSaturated, "client's in-flight count grew"},
		// A saturated step's mean latency is mostly backlog: 10 s here, longer than the
		// step. The fill is the first requests' latency (50 ms), so the growth is still
		// judged (skipping the mean E2E left no sample, and the step passed).
		{"saturated-in-flight-grew", func() *Record {
			r := inFlightGrew(stepRecord(40, 1, 0, nil))
			r.Summary.E2Ems.Mean = 10_000
			return r
		}, StepSaturated, "client's in-flight count grew by"},
		// Sent at 10 req/s, completed at 7: the engine did not keep up, though its queue
		// gauge (scraped) read flat and every request met the SLO.
		{"did-not-keep-up", func() *Record { return completedEvery(stepRecord(40, 1, 0, flat), 142_857) }, StepSaturated, "the engine did not keep up: requests completed at 7.2 req/s of the 10.3 req/s"},
		// Completed at 95% of the pace: within the 10% margin.
		{"kept-up", func() *Record { return completedEvery(stepRecord(40, 1, 0, flat), 105_263) }, StepPass, ""},
		// Neither a queue series nor the engine's gauge: nothing says whether the engine
		// kept up, and the step is refused, naming the shortest step that can.
		{"too-short", func() *Record { return stepRecord(40, 1, 0, nil) }, StepTooShort, "a step needs at least 1s of arrivals (--step-duration 1s, or --step-requests 10 at 10 req/s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec()
			st := StepOf(rec, 10)
			if st.Verdict != tc.want || !strings.Contains(st.Reason, tc.reason) {
				t.Errorf("verdict %q (%q), want %q containing %q", st.Verdict, st.Reason, tc.want, tc.reason)
			}
			if st.RateRPS != 10 || st.Requests != 40 || st.TTFTP99ms != 120 || st.ITLP99ms != 30 || st.E2EMeanms != rec.Summary.E2Ems.Mean {
				t.Errorf("step figures %+v", st)
			}
		})
	}
}

func TestQueueGrowth(t *testing.T) {
	// 40 samples rising linearly 0 → 39 over the arrivals: the last quarter's mean (34.5)
	// minus the first quarter's (4.5) is 30.
	rec := stepRecord(40, 1, 0, ramp(40, 0, 39))
	g, src, ok := QueueGrowth(rec)
	if !ok || src != QueueSourceEngine || g != 30 {
		t.Errorf("growth %g from %q (ok %v), want 30 from the engine", g, src, ok)
	}
	// Samples after the last arrival are the drain, not growth: a queue that rises and
	// then falls back to 0 after arrivals end still grew.
	rec.Series.Engine["queue_depth"] = append(rec.Series.Engine["queue_depth"], Sample{TUS: 5_000_000, V: 0})
	if g2, _, _ := QueueGrowth(rec); g2 != g {
		t.Errorf("growth %g with a drain sample, want %g", g2, g)
	}
	// No series at all: unknown, not zero.
	rec = stepRecord(40, 1, 0, nil)
	if _, _, ok := QueueGrowth(rec); ok {
		t.Error("growth known without any sample")
	}
}

func sampleSweep() *Sweep {
	return &Sweep{
		Schema:              SweepSchema,
		Workload:            "chat-steady",
		WorkloadHash:        "sha256:0123abcd",
		Config:              "slogate.yaml",
		Target:              "http://127.0.0.1:8000",
		API:                 "completions",
		Model:               "sim-tiny",
		Start:               time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		ToolVersion:         "v0.1.0",
		Hardware:            "sim",
		Environment:         map[string]string{"engine.name": "sim", "engine.version": "0.0.0 <rc&1>"},
		SLO:                 []SLOTarget{{Metric: "ttft", Percentile: 99, LimitMS: 300}},
		SLOAttainmentTarget: 0.99,
		Params:              SweepParams{MinRPS: 6, MaxRPS: 10000, Factor: 2, Process: "constant", Precision: 0.05, StepDurationS: 4},
		Steps: []SweepStep{
			{Step: 1, Phase: "ramp", RateRPS: 6, Verdict: StepPass, Requests: 24, Completed: 24, SLOAttainment: 1, GoodputRPS: 5.9, ThroughputRPS: 5.9, TTFTP99ms: 40, ITLP99ms: 25, E2EMeanms: 600, QueueGrowth: ptrF(0), QueueSource: QueueSourceEngine,
				KVConcurrency: &KVConcurrency{Value: 32, CapacityTokens: 1024, PerRequestTokens: 32, Source: "engine"}},
			{Step: 2, Phase: "ramp", RateRPS: 12, Verdict: StepSaturated, Reason: "the engine's waiting queue grew by 11.0 while arrivals lasted (limit 4.8)", Requests: 48, Completed: 48, SLOAttainment: 0.5, GoodputRPS: 4, ThroughputRPS: 9, TTFTP99ms: 900, ITLP99ms: 30, E2EMeanms: 1500, QueueGrowth: ptrF(11), QueueSource: QueueSourceEngine},
			{Step: 3, Phase: "bisect", RateRPS: 9, Verdict: StepPass, Requests: 36, Completed: 36, SLOAttainment: 1, GoodputRPS: 8.8, ThroughputRPS: 8.8, TTFTP99ms: 80, ITLP99ms: 28, E2EMeanms: 700, QueueGrowth: ptrF(0.5), QueueSource: QueueSourceEngine,
				KVConcurrency: &KVConcurrency{Value: 32, CapacityTokens: 1024, PerRequestTokens: 32, Source: "engine"}},
		},
		MaxSustainableRPS: ptrF(9),
		FirstFailingRPS:   ptrF(12),
		Bound:             BoundSLO,
		Notes:             []string{"a note"},
	}
}

func ptrF(v float64) *float64 { return &v }

func TestSweepGoldenAndRoundTrip(t *testing.T) {
	got, err := MarshalSweep(sampleSweep())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "sweep.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./result/ -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("MarshalSweep differs from %s (-want +got):\n%s", golden, d)
	}

	path := filepath.Join(t.TempDir(), "out", "chat-steady.sweep.json")
	if err := WriteSweep(path, sampleSweep()); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSweep(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sampleSweep(), back); d != "" {
		t.Errorf("round trip differs (-wrote +read):\n%s", d)
	}
	if op := back.OperatingStep(); op == nil || op.Step != 3 {
		t.Errorf("operating step %+v, want step 3 (the pass at 9 req/s)", op)
	}
}

func TestDecodeSweepRejects(t *testing.T) {
	run, _ := Marshal(sampleRecord())
	cases := []struct {
		name, data, want string
	}{
		// A run record handed where a sweep is expected names both schemas.
		{"run-record", string(run), `schema "slogate.run/v1"; expected "slogate.sweep/v1"`},
		// Cut short.
		{"truncated", `{"schema": "slogate.sweep/v1", "steps": [`, "truncated or corrupt JSON"},
		// A wrong type in a known field names the field.
		{"bad-field", `{"schema": "slogate.sweep/v1", "max_sustainable_rps": "fast"}`, "field max_sustainable_rps"},
		// Not an object.
		{"array", `[1, 2]`, "not a slogate record"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSweep("x.json", []byte(tc.data))
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a FormatError containing %q", err, tc.want)
			}
		})
	}
	// Writing a sweep with a foreign schema is refused rather than mislabelled.
	s := sampleSweep()
	s.Schema = Schema
	if _, err := MarshalSweep(s); err == nil {
		t.Error("MarshalSweep accepted a run schema")
	}
}

// A step is judged by the SLO as declared: without slo.attainment each target at its
// own percentile (errors miss), with a Wilson interval that says whether the step's
// requests can tell; with it, every target at the declared fraction.
func TestStepTargets(t *testing.T) {
	// Requests a second apart, with a flat queue gauge: a step that kept up, whose
	// misses (TTFT 1.1 s) are spread over it.
	rec := func(n, met int, declared bool, slo []SLOTarget) *Record {
		r := &Record{SLO: slo, SLOAttainmentTarget: 0.99, SLOAttainmentDeclared: declared}
		r.Series.Engine = map[string][]Sample{}
		miss := map[int]bool{}
		for j := range n - met {
			miss[int((float64(j)+0.5)*float64(n)/float64(n-met))] = true
		}
		for i := range n {
			at := int64(i) * 1_000_000
			r.Series.Engine["queue_depth"] = append(r.Series.Engine["queue_depth"], Sample{TUS: at, V: 0})
			q := Request{I: i, SchedUS: at, SendUS: at, FirstUS: at + 100_000, LastUS: at + 200_000,
				EndUS: at + 200_000, OutputTokens: 10, Chunks: 10, Finish: "length"}
			if miss[i] {
				q.FirstUS += 1_000_000 // a TTFT of 1.1 s
				q.LastUS += 1_000_000
				q.EndUS += 1_000_000
			}
			Judge(&q, slo)
			r.Requests = append(r.Requests, q)
		}
		r.Summary = Summary{Requests: n, Completed: n}
		return r
	}
	p95 := []SLOTarget{{Metric: MetricTTFT, Percentile: 95, LimitMS: 600}}
	tests := []struct {
		name      string
		recs      []*Record
		verdict   string
		undecided bool
		metric    string
	}{
		// The defect's step: 26 of 27 within a p95 SLO is 96.3%, above the 95% it asks;
		// 27 requests cannot tell (interval [81.7%, 99.3%]), so it is undecided, a pass
		// by the point estimate, where the default 99% failed it.
		{"p95, 26 of 27", []*Record{rec(27, 26, false, p95)}, StepPass, true, MetricTTFT},
		// Enough requests decide it.
		{"p95, 199 of 200", []*Record{rec(200, 199, false, p95)}, StepPass, false, MetricTTFT},
		// Runs of one step pool: one of 50 undecided, four with 2 misses in 200 decided.
		{"p95, one run of 50", []*Record{rec(50, 49, false, p95)}, StepPass, true, MetricTTFT},
		{"p95, pooled runs", []*Record{rec(50, 49, false, p95), rec(50, 50, false, p95), rec(50, 49, false, p95), rec(50, 50, false, p95)}, StepPass, false, MetricTTFT},
		// Clearly under 95%: a decided fail.
		{"p95, 20 of 27", []*Record{rec(27, 20, false, p95)}, StepFail, false, MetricTTFT},
		// A declared attainment is the rule: 26 of 27 under 99% fails (undecided).
		{"declared 99%", []*Record{rec(27, 26, true, p95)}, StepFail, true, "all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := StepOfRuns(tc.recs, 1)
			t.Logf("%s: %s %q %+v", tc.name, st.Verdict, st.Reason, st.Targets)
			if st.Verdict != tc.verdict || st.Undecided != tc.undecided || len(st.Targets) != 1 || st.Targets[0].Metric != tc.metric {
				t.Errorf("verdict %q undecided %v targets %+v; want %q undecided %v on %q", st.Verdict, st.Undecided, st.Targets, tc.verdict, tc.undecided, tc.metric)
			}
			if tg := st.Targets[0]; !(tg.Low <= tg.Attainment && tg.Attainment <= tg.High) {
				t.Errorf("interval [%v, %v] does not hold %v", tg.Low, tg.High, tg.Attainment)
			}
		})
	}
}
