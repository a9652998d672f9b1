package report

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
)

var (
	verdictSection = regexp.MustCompile(`(?s)<section id="verdicts">.*?</section>\n<section id="drift">.*?</section>`)
	firstSection   = regexp.MustCompile(`(?s)<section[^>]*>\s*<h2>([^<]*)</h2>`)
)

// kvFailGate is the comment fixture's gate with kv_concurrency as the rule that fails
// (120 → 90), which the HTML report used never to mention.
func kvFailGate() *gate.Result {
	g := commentFixture().Gate
	w := &g.Workloads[0]
	for i := range w.Metrics {
		m := &w.Metrics[i]
		switch m.Metric {
		case "itl_p99":
			m.Verdict, m.Candidate, m.Ratio, m.Lo, m.Hi = gate.Pass, fp(41), fp(1.025), fp(0.98), fp(1.07)
		case "kv_concurrency":
			m.Baseline, m.Candidate, m.Ratio, m.Lo, m.Hi, m.Verdict = fp(120), fp(90), fp(0.75), fp(0.75), fp(0.75), gate.Fail
		}
	}
	w.Verdict = gate.Fail
	g.Workloads[1].Verdict = gate.NoBaseline
	g.Workloads[1].Reason = "no baseline at baselines/batch/h100-80gb-hbm3-x1.json (is gate.baselines right?): create it with `slogate baseline update`"
	return g
}

// TestHTMLVerdictTableGolden: the page opens with the verdict of every rule (the
// failing kv_concurrency among them), then the drift, then the charts.
func TestHTMLVerdictTableGolden(t *testing.T) {
	var b bytes.Buffer
	r := HTMLReport{Generated: fixedClock, Gate: kvFailGate(), Candidate: buildRecord(candidateSpec()), Baseline: buildRecord(baselineSpec())}
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	sec := verdictSection.FindString(page)
	if sec == "" {
		t.Fatalf("no verdict and drift sections in:\n%s", page)
	}
	checkGolden(t, filepath.Join("testdata", "html", "verdict-table.golden.html"), []byte(sec+"\n"))
	var order []string
	for _, m := range firstSection.FindAllStringSubmatch(page, -1) {
		order = append(order, m[1])
	}
	if len(order) < 3 || order[0] != "Verdict of every rule" || order[1] != "Environment drift" || order[2] != "Charts" {
		t.Errorf("sections in order %q; want the verdicts, the drift, then the charts first", order)
	}
	for _, want := range []string{"kv_concurrency", "120 requests", "90 requests", "-25.0%", `class="v fail">fail`, "a deterministic figure: beyond the tolerance", "no baseline"} {
		if !strings.Contains(sec, want) {
			t.Errorf("verdict table lacks %q", want)
		}
	}
	if !strings.Contains(page, `<p class="verdict fail">fail — 1 of 2 workloads regressed</p>`) {
		t.Errorf("the banner does not state the gate's headline")
	}
}
