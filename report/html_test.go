package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
)

// update rewrites golden files. Other golden tests of this package should use it rather
// than register the flag a second time (which panics).
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// hostile is text an engine under test could return: it must reach the page as text.
const hostile = `<script>alert(1)</script> @everyone`

var testSLO = []result.SLOTarget{
	{Metric: result.MetricTTFT, Percentile: 95, LimitMS: 150},
	{Metric: result.MetricITL, Percentile: 99, LimitMS: 40},
}

// recordSpec describes a small deterministic record.
type recordSpec struct {
	n        int     // requests
	ttftMS   float64 // base TTFT
	gapMS    float64 // base inter-token gap
	gaps     int     // gaps per request
	errors   bool    // request 3 times out, request 7 gets an HTTP 500 with hostile detail
	engine   bool    // engine gauges sampled
	inFlight bool    // client in-flight series
	env      map[string]string
	notes    []string
}

// buildRecord makes a record whose every number follows from spec (no randomness), with
// its summary computed by the result package as a real run's would be.
func buildRecord(spec recordSpec) *result.Record {
	const startUS = 5_000_000
	rec := &result.Record{
		Schema: result.Schema, Workload: "chat-steady", WorkloadHash: "3f2a9c0d7e1b4a5f6c8d9e0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e",
		Mode: "open", Model: "meta-llama/Llama-3.1-8B-Instruct", API: "chat",
		Target: "http://127.0.0.1:8000", Start: time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC),
		ToolVersion: "v0.3.0", Calibration: result.Calibration{Method: "tokenize", CharsPerToken: 4},
		SLO: testSLO, SLOAttainmentTarget: 0.99,
		Environment: spec.env, Notes: spec.notes,
	}
	var end int64 = startUS
	for i := range spec.n {
		sched := int64(startUS + i*250_000)
		q := result.Request{I: i, SchedUS: sched, SendUS: sched + int64(50+10*(i%3)), PromptTarget: 800, OutputTarget: spec.gaps + 1, PromptTokens: 800 + i}
		switch {
		case spec.errors && i == 3:
			q.Error, q.ErrorDetail, q.EndUS = "timeout", "no response within 2s", sched+2_000_000
		case spec.errors && i == 7:
			q.Error, q.ErrorDetail, q.EndUS = "http_500", "engine said: "+hostile+" see https://example.invalid/x", sched+30_000
		default:
			// A slow request every fifth one gives the CDFs a tail.
			slow := 1.0
			if i%5 == 4 {
				slow = 3
			}
			q.FirstUS = sched + int64(1000*spec.ttftMS*slow) + int64(i*700)
			t := q.FirstUS
			for g := range spec.gaps {
				gap := int64(1000*spec.gapMS) + int64((i*7+g*13)%9)*400
				q.ITLUS = append(q.ITLUS, gap)
				t += gap
			}
			q.LastUS, q.EndUS = t, t+300
			q.OutputTokens, q.Chunks = spec.gaps+1, spec.gaps+1
			q.Finish = "length"
		}
		result.Judge(&q, rec.SLO)
		end = max(end, q.EndUS)
		rec.Requests = append(rec.Requests, q)
	}
	rec.Window = result.Window{StartUS: startUS, EndUS: end}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{
		Window: rec.Window, SLO: rec.SLO, AttainmentTarget: rec.SLOAttainmentTarget, OpenLoop: true,
	})
	for t := int64(startUS); spec.inFlight && t <= end; t += 200_000 {
		n := 0
		for _, q := range rec.Requests {
			if q.SchedUS <= t && t < q.EndUS {
				n++
			}
		}
		rec.Series.InFlight = append(rec.Series.InFlight, result.Sample{TUS: t, V: float64(n)})
	}
	if spec.engine {
		rec.Series.Engine = map[string][]result.Sample{}
		for k, t := 0, int64(startUS); t <= end; k, t = k+1, t+500_000 {
			rec.Series.Engine[SeriesQueueDepth] = append(rec.Series.Engine[SeriesQueueDepth], result.Sample{TUS: t, V: float64(k % 4)})
			rec.Series.Engine[SeriesRunning] = append(rec.Series.Engine[SeriesRunning], result.Sample{TUS: t, V: float64(2 + k%3)})
			rec.Series.Engine[SeriesKVUsage] = append(rec.Series.Engine[SeriesKVUsage], result.Sample{TUS: t, V: 0.1 + 0.05*float64(k%6)})
		}
	}
	return rec
}

func baseEnv() map[string]string {
	return map[string]string{
		"engine.name": "vllm", "engine.version": "0.8.4", "model.id": "meta-llama/Llama-3.1-8B-Instruct",
		"gpu.name": "NVIDIA H100 80GB HBM3", "gpu.driver": "550.54.15", "gpu.cuda": "12.4", "tool.version": "v0.3.0",
	}
}

func candidateSpec() recordSpec {
	env := baseEnv()
	env["engine.version"] = "0.9.0 " + hostile
	env["notify"] = hostile
	return recordSpec{n: 16, ttftMS: 90, gapMS: 22, gaps: 12, errors: true, engine: true, inFlight: true, env: env,
		notes: []string{"the server said " + hostile}}
}

func baselineSpec() recordSpec {
	return recordSpec{n: 16, ttftMS: 80, gapMS: 20, gaps: 12, inFlight: true, env: baseEnv()}
}

var fixedClock = time.Date(2025, 3, 4, 12, 30, 0, 0, time.UTC)

func writePage(t testing.TB, r HTMLReport) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return b.Bytes()
}

var svgElement = regexp.MustCompile(`(?s)<svg.*?</svg>`)

// elideSVG replaces the charts by a placeholder: their bytes hang on gonum's float
// formatting (which fused multiply-add may change by an ulp on some CPUs), and they are
// tested apart, as XML.
func elideSVG(b []byte) []byte {
	return svgElement.ReplaceAll(b, []byte("<svg><!-- chart: see charts_test.go --></svg>"))
}

func TestWriteHTMLGolden(t *testing.T) {
	verdictSection := HTMLSection{Heading: "Gate", HTML: template.HTML("<p>goodput <b>−3.1 %</b> (tolerance 5 %): pass</p>")}
	cases := []struct {
		name string
		r    HTMLReport
	}{
		// The usual page: a candidate against its baseline, with errors, drift, notes and
		// engine gauges for the candidate only.
		{"pair", HTMLReport{Title: "slogate: chat-steady on h100-80gb-hbm3-x1", Generated: fixedClock, Verdict: "PASS with warnings",
			Sections: []HTMLSection{verdictSection}, Candidate: buildRecord(candidateSpec()), Baseline: buildRecord(baselineSpec())}},
		// A first run has no baseline, and llama.cpp without --metrics has no gauges: the
		// page has one column and says the engine exposes no metrics.
		{"candidate-only", HTMLReport{Generated: fixedClock, Verdict: "no baseline: nothing to compare",
			Candidate: buildRecord(recordSpec{n: 8, ttftMS: 40, gapMS: 15, gaps: 5, inFlight: true})}},
		// An engine that failed every request: no latency at all, yet the page is written
		// and says why each chart is missing.
		{"all-failed", HTMLReport{Generated: fixedClock, Verdict: "FAIL: error rate 100 %", Candidate: func() *result.Record {
			r := buildRecord(recordSpec{n: 4})
			for i := range r.Requests {
				r.Requests[i].Error, r.Requests[i].ErrorDetail = "connect", "dial tcp 127.0.0.1:8000: connection refused"
			}
			r.Summary = result.Summarize(r.Requests, result.SummaryInput{Window: r.Window, SLO: r.SLO, OpenLoop: true})
			r.Incomplete, r.IncompleteReason = true, "engine unreachable: every request failed to connect"
			return r
		}()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := elideSVG(writePage(t, c.r))
			path := filepath.Join("testdata", "html", c.name+".golden.html")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the page written (run with -update and review the diff):\n%s", path, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\nwant: %s\ngot:  %s", i+1, a, b)
		}
	}
	return "(trailing difference)"
}

// node is a parsed element of the page.
type node struct {
	name  string
	attrs []xml.Attr
	text  string // character data directly inside it
}

// parsePage walks the page as XML (it is written well-formed for this): every element
// with its attributes and direct text, and all text of the page outside <style>.
func parsePage(t *testing.T, page []byte) (nodes []node, text string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	var stack []int
	var all strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			nodes = append(nodes, node{name: tok.Name.Local, attrs: tok.Attr})
			stack = append(stack, len(nodes)-1)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				n := &nodes[stack[len(stack)-1]]
				n.text += string(tok)
				if n.name != "style" {
					all.Write(tok)
				}
			}
		}
	}
	return nodes, all.String()
}

func TestWriteHTMLEscapesEngineText(t *testing.T) {
	cand := buildRecord(candidateSpec())
	cand.Workload = "wl " + hostile
	page := writePage(t, HTMLReport{Title: "t " + hostile, Generated: fixedClock, Verdict: "FAIL " + hostile, Candidate: cand, Baseline: buildRecord(baselineSpec())})
	if bytes.Contains(page, []byte("<script")) {
		t.Fatal("the page holds a <script> tag: engine text was not escaped")
	}
	nodes, text := parsePage(t, page)
	for _, n := range nodes {
		if n.name == "script" {
			t.Fatal("the page has a script element")
		}
		for _, a := range n.attrs {
			if strings.Contains(a.Value, "alert") || strings.Contains(a.Value, "@everyone") {
				t.Errorf("engine text reached an attribute: <%s %s=%q>", n.name, a.Name.Local, a.Value)
			}
		}
	}
	// Each place engine text shows must show it as text, whole: the environment (twice:
	// a key's value and the version), the error detail, the note, the title, verdict and
	// workload name.
	for _, want := range []string{
		"0.9.0 " + hostile, "engine said: " + hostile, "the server said " + hostile,
		"t " + hostile, "FAIL " + hostile, "wl " + hostile,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page's text lacks %q", want)
		}
	}
	// HTML has no mentions: @everyone stays as written, and only as text.
	if got := strings.Count(text, "@everyone"); got < 6 {
		t.Errorf("@everyone appears %d times in the page's text, want at least 6", got)
	}
}

func TestWriteHTMLNeedsNoNetwork(t *testing.T) {
	page := writePage(t, HTMLReport{Generated: fixedClock, Candidate: buildRecord(candidateSpec()), Baseline: buildRecord(baselineSpec())})
	nodes, _ := parsePage(t, page)
	fetching := map[string]bool{"script": true, "link": true, "img": true, "image": true, "iframe": true, "object": true,
		"embed": true, "use": true, "base": true, "audio": true, "video": true, "source": true, "form": true, "foreignObject": true}
	svgs := 0
	for _, n := range nodes {
		if fetching[n.name] {
			t.Errorf("the page has a <%s> element", n.name)
		}
		if n.name == "svg" {
			svgs++
		}
		for _, a := range n.attrs {
			v := strings.ToLower(a.Value)
			if a.Name.Local == "href" || a.Name.Local == "src" || a.Name.Local == "action" ||
				strings.Contains(v, "http:") || strings.Contains(v, "https:") || strings.Contains(v, "url(") {
				t.Errorf("<%s %s=%q> may reach the network", n.name, a.Name.Local, a.Value)
			}
		}
		if n.name == "style" {
			for _, bad := range []string{"url(", "@import", "http", "@font-face"} {
				if strings.Contains(n.text, bad) {
					t.Errorf("the style sheet contains %q", bad)
				}
			}
		}
	}
	// The candidate has every series, the baseline all but the engine's: 7 charts.
	if svgs != 7 {
		t.Errorf("%d inline charts, want 7", svgs)
	}
	// Addresses may appear only as escaped data (the record's target, an error detail):
	// never inside a tag.
	tags := regexp.MustCompile(`<[^>]*>`).FindAll(page, -1)
	for _, tag := range tags {
		if bytes.Contains(tag, []byte("http://")) || bytes.Contains(tag, []byte("https://")) {
			t.Errorf("tag %.80q holds an address", tag)
		}
	}
}

func TestWriteHTMLDegrades(t *testing.T) {
	withEngine := buildRecord(recordSpec{n: 8, ttftMS: 40, gapMS: 15, gaps: 5, inFlight: true, engine: true})
	without := buildRecord(recordSpec{n: 8, ttftMS: 40, gapMS: 15, gaps: 5, inFlight: true})
	cases := []struct {
		name       string
		cand, base *result.Record
		want       []string // in the page's text
		notWant    []string
		charts     int
	}{
		// No baseline: one column, no baseline scatter, engine charts for the candidate.
		{"no baseline", withEngine, nil,
			[]string{"Latency of each request: candidate", "Engine queue", "KV cache occupancy"},
			[]string{"Latency of each request: baseline", "exposes no metrics"}, 7 - 1},
		// Neither run has gauges: both engine charts give way to one sentence.
		{"no engine metrics", without, without,
			[]string{"The engine exposes no metrics"},
			[]string{"Engine queue:"}, 7 - 2},
		// The candidate lost its gauges (a new engine version renamed them): the charts
		// show the baseline and say so.
		{"candidate without engine metrics", without, withEngine,
			[]string{"For the candidate, the engine exposes no metrics"}, nil, 7},
		// The baseline predates gauge scraping.
		{"baseline without engine metrics", withEngine, without,
			[]string{"For the baseline, the engine exposes no metrics"}, nil, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := writePage(t, HTMLReport{Generated: fixedClock, Candidate: c.cand, Baseline: c.base})
			nodes, text := parsePage(t, page)
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(text, w) {
					t.Errorf("page has %q", w)
				}
			}
			svgs, heads := 0, 0
			for _, n := range nodes {
				if n.name == "svg" {
					svgs++
				}
				if n.name == "th" && n.text == LabelBaseline {
					heads++
				}
			}
			if svgs != c.charts {
				t.Errorf("%d charts, want %d", svgs, c.charts)
			}
			if (heads > 0) != (c.base != nil) {
				t.Errorf("%d baseline column heads with baseline given = %v", heads, c.base != nil)
			}
		})
	}
}

func TestWriteHTMLWithoutCandidate(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, HTMLReport{Baseline: buildRecord(baselineSpec())}); err == nil {
		t.Fatal("no error without a candidate")
	}
	if b.Len() != 0 {
		t.Errorf("%d bytes written on error", b.Len())
	}
}

// Re-rendering the same records must give the same bytes, so that a re-run of the report
// does not churn its artifact.
func TestWriteHTMLIsDeterministic(t *testing.T) {
	r := HTMLReport{Generated: fixedClock, Candidate: buildRecord(candidateSpec()), Baseline: buildRecord(baselineSpec())}
	a, b := writePage(t, r), writePage(t, r)
	if !bytes.Equal(a, b) {
		t.Errorf("two renders differ:\n%s", firstDiff(string(a), string(b)))
	}
}

func TestVerdictClass(t *testing.T) {
	cases := []struct{ verdict, want string }{
		{"FAIL: goodput −12 %", "fail"},            // the gate's failure, upper case
		{"  warn: p99 ITL +6 %", "warn"},           // leading space, lower case
		{"incomparable: workload changed", "warn"}, // neither pass nor fail, and must stand out
		{"PASS", "pass"},
		{"improved: refresh the baseline", "pass"},
		{"no baseline", "warn"}, // nothing was compared, and by default the gate fails
		{"", "neutral"},
	}
	for _, c := range cases {
		if got := verdictClass(c.verdict); got != c.want {
			t.Errorf("verdictClass(%q) = %q, want %q", c.verdict, got, c.want)
		}
	}
}

// bigRecord is a run of n requests with gaps gaps each, with every series, seeded.
func bigRecord(n, gaps int, seed uint64, scale float64) *result.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	const startUS = 1_000_000
	rec := &result.Record{Schema: result.Schema, Workload: "bench", Mode: "open", SLO: testSLO,
		Environment: baseEnv(), Requests: make([]result.Request, 0, n)}
	var end int64
	for i := range n {
		sched := int64(startUS + i*50_000) // 20 req/s
		q := result.Request{I: i, SchedUS: sched, SendUS: sched + 40, PromptTarget: 800, PromptTokens: 800, OutputTarget: gaps + 1}
		if i%97 == 13 {
			q.Error, q.ErrorDetail, q.EndUS = "timeout", "no response within 120s", sched+120_000_000
		} else {
			q.FirstUS = sched + int64(scale*(20_000+rng.ExpFloat64()*60_000))
			t := q.FirstUS
			q.ITLUS = make([]int64, gaps)
			for g := range q.ITLUS {
				q.ITLUS[g] = int64(scale * (15_000 + rng.ExpFloat64()*4_000))
				if rng.IntN(500) == 0 {
					q.ITLUS[g] += 400_000 // a preemption stall
				}
				t += q.ITLUS[g]
			}
			q.LastUS, q.EndUS = t, t+200
			q.OutputTokens, q.Chunks = gaps+1, gaps+1
		}
		end = max(end, q.EndUS)
		rec.Requests = append(rec.Requests, q)
	}
	rec.Window = result.Window{StartUS: startUS, EndUS: end}
	rec.Summary = result.Summarize(rec.Requests, result.SummaryInput{Window: rec.Window, SLO: rec.SLO, OpenLoop: true})
	rec.Series.Engine = map[string][]result.Sample{}
	for t := int64(startUS); t <= end; t += 100_000 {
		x := float64(t-startUS) / 1e6
		rec.Series.InFlight = append(rec.Series.InFlight, result.Sample{TUS: t, V: float64(60 + rng.IntN(20))})
		rec.Series.Engine[SeriesQueueDepth] = append(rec.Series.Engine[SeriesQueueDepth], result.Sample{TUS: t, V: float64(rng.IntN(8))})
		rec.Series.Engine[SeriesRunning] = append(rec.Series.Engine[SeriesRunning], result.Sample{TUS: t, V: float64(56 + rng.IntN(8))})
		rec.Series.Engine[SeriesKVUsage] = append(rec.Series.Engine[SeriesKVUsage], result.Sample{TUS: t, V: 0.5 + 0.3*float64(int(x)%10)/10})
	}
	return rec
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkHTML renders the page of a 10,000-request × 200-gap pair: time per page and
// its size (bytes/page), and the size of its ITL chart alone (itl-svg-bytes).
func BenchmarkHTML(b *testing.B) {
	cand, base := bigRecord(10_000, 200, 1, 1.05), bigRecord(10_000, 200, 2, 1)
	itl, err := ITLChart(cand, base)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	b.ResetTimer()
	for b.Loop() {
		w := &countingWriter{}
		if err := WriteHTML(w, HTMLReport{Generated: fixedClock, Verdict: "PASS", Candidate: cand, Baseline: base}); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size), "bytes/page")
	b.ReportMetric(float64(len(itl)), "itl-svg-bytes")
}
