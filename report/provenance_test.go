package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
)

// TestProvenanceShown: the provenance of an imported side is printed beside the verdict,
// in the terminal table and in the PR comment.
func TestProvenanceShown(t *testing.T) {
	res := &gate.Result{Schema: gate.ResultSchema, Verdict: gate.Pass, Resamples: 2000, Confidence: 0.95, Workloads: []gate.WorkloadResult{{
		Name: "chat", Hardware: "imported", Verdict: gate.Pass, Metrics: []gate.MetricResult{},
		Provenance: []string{"candidate: imported from vllm (0.11.0; shape) a.json sha256:0123456789ab; TTFT from send", "baseline: measured by slogate (TTFT from the scheduled arrival)"},
	}}}
	var b bytes.Buffer
	GateTable(&b, res)
	md := Markdown(Comment{Gate: res, Limit: 1 << 20})
	for _, want := range res.Workloads[0].Provenance {
		if !strings.Contains(b.String(), "provenance: "+want) {
			t.Errorf("terminal table lacks %q:\n%s", want, b.String())
		}
		if !strings.Contains(md, "provenance: "+esc(want)) {
			t.Errorf("comment lacks %q:\n%s", want, md)
		}
	}
}
