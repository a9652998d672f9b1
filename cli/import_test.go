package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/interop"
	"github.com/slogate/slogate/result"
)

const importDir = "../testdata/import"

func runApp(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	a, out, errb := testApp(t)
	code := a.run(cmdCtx(t), args)
	return code, out.String(), errb.String()
}

// TestImportGateEndToEnd: a vLLM result file, a guidellm report and an AIPerf export
// each import, become a baseline (baseline update), and a second import of the same
// tool gates against it, with the provenance of both sides beside the verdict. Their
// runs of about 120 requests leave a p99 rule about one value above it: inconclusive
// (exit 4), saying so, unless the rule fails.
func TestImportGateEndToEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, tool, config, workload string
		base, cand                   string
		extra                        []string
		code                         int
		rows                         []string
	}{
		{"vllm", interop.ToolVLLM, "slogate.yaml", "vllm-chat", "vllm/baseline.json", "vllm/candidate.json", nil, ExitInconclusive,
			[]string{"goodput", "ttft_p99", "itl_p99", "error_rate", "ttft_p99 inconclusive: the p99 rests on 1.2 values beyond it"}},
		{"vllm-regressed", interop.ToolVLLM, "slogate.yaml", "vllm-chat", "vllm/baseline.json", "vllm/regressed.json", nil, ExitGateFailed,
			[]string{"ttft_p99", "FAIL"}},
		{"guidellm", interop.ToolGuideLLM, "guidellm.yaml", "guidellm-chat", "guidellm/baseline.json", "guidellm/candidate.json", []string{"--benchmark", "1"}, ExitInconclusive,
			[]string{"goodput", "ttft_p99", "tpot_p99", "e2e_p99", "error_rate", "INCONCLUSIVE"}},
		// Under an itl_p99 rule a guidellm import is incomparable: no chunk gaps.
		{"guidellm-itl", interop.ToolGuideLLM, "slogate.yaml", "guidellm-chat", "guidellm/baseline.json", "guidellm/candidate.json", []string{"--benchmark", "1"}, ExitGateFailed,
			[]string{"INCOMPARABLE", "not measured by the candidate's source: guidellm keeps"}},
		{"aiperf", interop.ToolAIPerf, "slogate.yaml", "aiperf-chat", "aiperf/baseline/profile_export.jsonl", "aiperf/candidate/profile_export.jsonl", nil, ExitInconclusive,
			[]string{"goodput", "ttft_p99", "itl_p99", "error_rate", "INCONCLUSIVE"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(importDir, c.config)
			bl := filepath.Join(dir, "baselines")
			imp := func(file, out string) {
				t.Helper()
				args := append([]string{"import", "--from", c.tool, filepath.Join(importDir, file), "-c", cfg, "-w", c.workload, "-o", out}, c.extra...)
				if code, stdout, stderr := runApp(t, args...); code != ExitOK {
					t.Fatalf("import %s: exit %d\n%s%s", file, code, stdout, stderr)
				}
			}
			imp(c.base, filepath.Join(dir, "base"))
			if code, stdout, stderr := runApp(t, "baseline", "update", "-c", cfg, "-r", filepath.Join(dir, "base"), "--baselines", bl); code != ExitOK {
				t.Fatalf("baseline update: exit %d\n%s%s", code, stdout, stderr)
			}
			imp(c.cand, filepath.Join(dir, "cand"))
			jsonOut := filepath.Join(dir, "gate.json")
			code, stdout, stderr := runApp(t, "gate", "-c", cfg, "-r", filepath.Join(dir, "cand"), "--baselines", bl, "-w", c.workload, "--json", jsonOut)
			t.Logf("slogate gate (%s):\n%s%s", c.name, stdout, stderr)
			if code != c.code {
				t.Fatalf("gate exit %d, want %d", code, c.code)
			}
			for _, want := range append([]string{
				"provenance: candidate: imported from " + c.tool + " (",
				"provenance: baseline: imported from " + c.tool + " (",
				filepath.Base(c.cand), filepath.Base(c.base),
			}, c.rows...) {
				if !strings.Contains(stdout, want) {
					t.Errorf("gate output lacks %q", want)
				}
			}
			data, err := os.ReadFile(jsonOut)
			if err != nil {
				t.Fatal(err)
			}
			var res gate.Result
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Workloads) != 1 || len(res.Workloads[0].Provenance) != 2 {
				t.Fatalf("gate.json workloads %+v", res.Workloads)
			}
			// The baseline file keeps the provenance of the import it was made from.
			b, err := os.ReadFile(filepath.Join(bl, c.workload, "imported.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"tool": "`+c.tool+`"`) && !strings.Contains(string(b), `"tool":"`+c.tool+`"`) {
				t.Errorf("baseline file has no source of tool %s", c.tool)
			}
		})
	}
}

// TestImportRefusal: a file in a shape no importer reads is bad input (exit 2), named
// with its field.
func TestImportRefusal(t *testing.T) {
	t.Parallel()
	code, _, stderr := runApp(t, "import", "--from", "aiperf", filepath.Join(importDir, "aiperf/unsupported/profile_export.jsonl"),
		"-c", filepath.Join(importDir, "slogate.yaml"), "-w", "aiperf-chat", "-o", t.TempDir())
	if code != ExitBadInput || !strings.Contains(stderr, `schema_version: "2.0"`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	code, _, stderr = runApp(t, "import", "--from", "inference-perf", "x.json", "-c", filepath.Join(importDir, "slogate.yaml"), "-w", "vllm-chat", "-o", t.TempDir())
	if code != ExitBadInput || !strings.Contains(stderr, "does not read inference-perf's reports") || !strings.Contains(stderr, "slogate run") {
		t.Errorf("inference-perf: exit %d: %s", code, stderr)
	}
	code, _, stderr = runApp(t, "import", "--from", "lmeval", "x.json", "-c", filepath.Join(importDir, "slogate.yaml"), "-w", "vllm-chat", "-o", t.TempDir())
	if code != ExitBadInput || !strings.Contains(stderr, `"vllm", "guidellm", "aiperf"`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestExportCommands: export --vllm of an imported record imports back to the same
// metrics; export --csv writes a row per request.
func TestExportCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(importDir, "slogate.yaml")
	if code, stdout, stderr := runApp(t, "import", "--from", "vllm", filepath.Join(importDir, "vllm/candidate.json"), "-c", cfg, "-w", "vllm-chat", "-o", filepath.Join(dir, "a")); code != ExitOK {
		t.Fatalf("import: %d %s%s", code, stdout, stderr)
	}
	rec := filepath.Join(dir, "a", "vllm-chat.json")
	exported := filepath.Join(dir, "export.json")
	if code, _, stderr := runApp(t, "export", "--vllm", "--rate", "4", rec, "-o", exported); code != ExitOK {
		t.Fatalf("export --vllm: %d %s", code, stderr)
	}
	if code, stdout, stderr := runApp(t, "import", "--from", "vllm", exported, "-c", cfg, "-w", "vllm-chat", "-o", filepath.Join(dir, "b")); code != ExitOK {
		t.Fatalf("re-import: %d %s%s", code, stdout, stderr)
	}
	a, err := result.Read(rec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := result.Read(filepath.Join(dir, "b", "vllm-chat.json"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Summary.TTFTms != b.Summary.TTFTms || a.Summary.ITLms != b.Summary.ITLms || a.Summary.GoodputRPS != b.Summary.GoodputRPS || a.WorkloadHash != b.WorkloadHash {
		t.Errorf("round trip changed the metrics:\n%+v\n%+v", a.Summary.TTFTms, b.Summary.TTFTms)
	}
	code, stdout, stderr := runApp(t, "export", "--csv", rec)
	if code != ExitOK {
		t.Fatalf("export --csv: %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != len(a.Requests)+1 || lines[0] != strings.Join(interop.CSVHeader, ",") {
		t.Errorf("%d CSV lines; header %q", len(lines), lines[0])
	}
	if code, _, _ := runApp(t, "export", "--csv", "--vllm", rec); code != ExitBadInput {
		t.Errorf("--csv --vllm: exit %d, want 2", code)
	}
}
