package gate

import (
	"strings"
	"testing"

	"github.com/slogate/slogate/gate/gatetest"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

func imported(r *result.Record, tool, from string, lacks ...string) *result.Record {
	r.Source = &result.Source{Tool: tool, Format: "test shape", File: tool + ".json", SHA256: strings.Repeat("ab", 32), TTFTFrom: from, Unavailable: lacks}
	return r
}

// TestProvenanceNativeAgainstImported: a baseline measured by slogate and a candidate
// imported from vLLM (TTFT from the send) are compared, but the gate shows who measured
// each side and says, beside the TTFT verdict, that the definitions differ.
func TestProvenanceNativeAgainstImported(t *testing.T) {
	f := testConfig([]workload.Rule{
		{Metric: "ttft_p99", Direction: "lower", Tolerance: 0.5},
		{Metric: "itl_p99", Direction: "lower", Tolerance: 0.5},
	})
	base := rec(f, 1, gatetest.Spec{})
	cand := imported(rec(f, 2, gatetest.Spec{}), "vllm", "send", "dispatch_lag: no scheduled times")
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
	w := res.Workloads[0]
	if len(w.Provenance) != 2 || !strings.HasPrefix(w.Provenance[0], "candidate: imported from vllm") || !strings.HasPrefix(w.Provenance[1], "baseline: measured by slogate") {
		t.Errorf("provenance %q", w.Provenance)
	}
	want := "different definitions: the baseline's TTFT and E2E are measured from the sched, the candidate's from the send"
	if m := metric(t, w, "ttft_p99"); !strings.Contains(strings.Join(m.Warnings, "\n"), want) {
		t.Errorf("ttft_p99 warnings %q; want %q", m.Warnings, want)
	}
	if !strings.Contains(strings.Join(w.Warnings, "\n"), want) {
		t.Errorf("workload warnings %q", w.Warnings)
	}
}

// TestProvenanceNativeRunsUnchanged: two native runs get no provenance lines.
func TestProvenanceNativeRunsUnchanged(t *testing.T) {
	f := testConfig(nil)
	res := evaluate(t, f, storeOf(t, []*result.Record{rec(f, 1, gatetest.Spec{KVConcurrency: 80})}), rec(f, 2, gatetest.Spec{KVConcurrency: 80}))
	if p := res.Workloads[0].Provenance; len(p) != 0 {
		t.Errorf("provenance %q on native runs", p)
	}
}

// TestProvenanceUnavailableMetric: an ITL rule on records whose source keeps no chunk
// gaps (guidellm) is incomparable, never a pass over empty data.
func TestProvenanceUnavailableMetric(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "itl_p99", Direction: "lower", Tolerance: 0.1}, {Metric: "goodput", Direction: "higher", Tolerance: 0.1}})
	lack := "itl: guidellm keeps the first and last token times of a request, not its chunks"
	base := imported(rec(f, 1, gatetest.Spec{Hash: "sha256:imp"}), "guidellm", "sched", lack)
	cand := imported(rec(f, 2, gatetest.Spec{Hash: "sha256:imp"}), "guidellm", "sched", lack)
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
	w := res.Workloads[0]
	m := metric(t, w, "itl_p99")
	if m.Verdict != Incomparable || m.Ratio != nil || !strings.Contains(strings.Join(m.Warnings, "\n"), "not measured by the candidate's source: guidellm keeps") {
		t.Errorf("itl_p99 %s ratio %v warnings %q", m.Verdict, m.Ratio, m.Warnings)
	}
	if g := metric(t, w, "goodput"); g.Verdict != Pass {
		t.Errorf("goodput %s", g.Verdict)
	}
	if w.Verdict != Incomparable {
		t.Errorf("workload verdict %s, want incomparable", w.Verdict)
	}
	// An imported record's hash is the source's, not the workload file's: no warning
	// that the records were made from another definition.
	for _, s := range w.Warnings {
		if strings.Contains(s, "another definition") {
			t.Errorf("warning %q on an import", s)
		}
	}
}

// TestProvenanceIncomparableSources: a native baseline and an import have different
// identities by construction; the reason says so, rather than "workload changed".
func TestProvenanceIncomparableSources(t *testing.T) {
	f := testConfig([]workload.Rule{{Metric: "ttft_p99", Direction: "lower", Tolerance: 0.5}})
	base := rec(f, 1, gatetest.Spec{})
	cand := imported(rec(f, 2, gatetest.Spec{Hash: "sha256:fromvllm"}), "vllm", "send")
	res := evaluate(t, f, storeOf(t, []*result.Record{base}), cand)
	w := res.Workloads[0]
	if w.Verdict != Incomparable || !strings.Contains(w.Reason, "incomparable sources: the baseline was measured by slogate and the run imported from vllm") {
		t.Errorf("verdict %s reason %q", w.Verdict, w.Reason)
	}
	if len(w.Provenance) != 2 {
		t.Errorf("provenance %q", w.Provenance)
	}
}

// TestAuditImportedBaseline: an imported baseline's hash is its source's; the audit
// does not call it stale for differing from the config's hash. A native one with a
// foreign hash still is.
func TestAuditImportedBaseline(t *testing.T) {
	f := testConfig(nil)
	for _, c := range []struct {
		src   bool
		stale bool
	}{{true, false}, {false, true}} {
		r := rec(f, 1, gatetest.Spec{Hash: "sha256:other", Requests: 50})
		if c.src {
			r = imported(r, "aiperf", "send")
		}
		a, err := AuditBaselines(AuditInput{Config: f, Store: storeOf(t, []*result.Record{r}), Env: gatetest.Env(), Hardware: HardwareOf(r), Now: created})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Entries) != 1 || a.Entries[0].Stale != c.stale {
			t.Errorf("imported %v: entries %+v, want stale %v", c.src, a.Entries, c.stale)
		}
	}
}
