package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/result"
)

// The pipeline against a real llama.cpp llama-server serving stories260K.gguf, started by
// scripts/llamacpp-test.sh (docs/real-engine.md) once with -np 4 and once without -np.
// llama.cpp behaves unlike Ollama and vLLM: it closes the connection after each streamed
// response, shares one KV cache across its slots without -np, reports its context per slot,
// and keeps a cache of earlier prompts. Skipped unless SLOGATE_LLAMACPP_URL names the server.
//
// SLOGATE_LLAMACPP_PENDING lists checks whose fix is not in yet ("cold": every run's cold
// salt is its own; "closed-connection": a connection the server closed is retried, not an
// error). A pending check that fails is logged as PENDING with its figures instead of
// failing the test; one that passes says so, so that it can be taken off the list.

const llamaPinned = "../testdata/llamacpp/slogate.yaml"

type llamaServer struct {
	url      string
	parallel int // -np; 0 when the server chose (no -np)
	ctx      int // -c
	pending  []string
}

func realLlamaServer(t *testing.T) llamaServer {
	t.Helper()
	url := os.Getenv("SLOGATE_LLAMACPP_URL")
	if url == "" {
		t.Skip("SLOGATE_LLAMACPP_URL is not set: no llama-server to test against (scripts/llamacpp-test.sh starts one)")
	}
	s := llamaServer{url: strings.TrimRight(url, "/"), ctx: 2048, pending: strings.Fields(os.Getenv("SLOGATE_LLAMACPP_PENDING"))}
	if v := os.Getenv("SLOGATE_LLAMACPP_PARALLEL"); v != "" && v != "auto" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLOGATE_LLAMACPP_PARALLEL=%q: want a positive integer or auto", v)
		}
		s.parallel = n
	}
	if v := os.Getenv("SLOGATE_LLAMACPP_CTX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLOGATE_LLAMACPP_CTX=%q: want a positive integer", v)
		}
		s.ctx = n
	}
	return s
}

// slotCtx is one slot's context: -c split over -np slots, or the whole -c for slots that
// share one cache.
func (s llamaServer) slotCtx() int {
	if s.parallel > 0 {
		return s.ctx / s.parallel
	}
	return s.ctx
}

// check reports a failed check: an error, or a PENDING line when the check waits on a fix
// listed in SLOGATE_LLAMACPP_PENDING.
func (s llamaServer) check(t *testing.T, name string, ok bool, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	pending := slices.Contains(s.pending, name)
	switch {
	case ok && pending:
		t.Logf("PENDING check %q passes now (%s): take it off SLOGATE_LLAMACPP_PENDING", name, msg)
	case ok:
	case pending:
		// Not an error until the fix lands, but never silent: the script prints these.
		t.Logf("PENDING check %q fails, as expected until its fix lands: %s", name, msg)
	default:
		t.Errorf("%s", msg)
	}
}

// llamaConfig writes the pinned file, adapted to the server, into a fresh folder.
func (s llamaServer) config(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(llamaPinned)
	if err != nil {
		t.Fatal(err)
	}
	c := string(data)
	if s.parallel == 0 {
		// Slots that share one cache, and a context of the whole -c to overflow.
		for _, e := range [][2]string{
			{"  kv_unified: false\n", "  kv_unified: true\n"},
			{"prompt_tokens: 400\n", fmt.Sprintf("prompt_tokens: %d\n", s.ctx-100)},
			{"output_tokens: 300\n", "output_tokens: 200\n"},
		} {
			if !strings.Contains(c, e[0]) {
				t.Fatalf("%s has no %q to edit", llamaPinned, e[0])
			}
			c = strings.Replace(c, e[0], e[1], 1)
		}
	}
	p := filepath.Join(t.TempDir(), "slogate.yaml")
	if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// llamaRunRecord runs one workload and returns its record.
func (s llamaServer) run(t *testing.T, cfg, workload, dir string) (*result.Record, int, string) {
	t.Helper()
	a, out, errb := testApp(t)
	code := realRun(a, "run", "-c", cfg, "-w", workload, "--target", s.url, "-o", dir)
	t.Logf("slogate run -w %s: exit %d\n%s%s", workload, code, out, errb)
	rec, err := result.Read(filepath.Join(dir, workload+".json"))
	if err != nil {
		t.Fatalf("exit %d and no record: %v", code, err)
	}
	if rec.Summary.ClientSaturated {
		t.Fatalf("the load generator could not keep the schedule on this machine (dispatch lag p99 %.3f ms): the run measured the client", rec.Summary.DispatchLagms.P99)
	}
	return rec, code, errb.String()
}

// tokenSums adds up the prompt and output tokens of the requests that succeeded.
func tokenSums(rec *result.Record) (prompt, output int) {
	for _, r := range rec.Requests {
		if r.Error == "" {
			prompt += r.PromptTokens
			output += r.OutputTokens
		}
	}
	return prompt, output
}

// checkCounters: the engine's own counters over the window equal the record's tokens.
func checkCounters(t *testing.T, rec *result.Record) {
	t.Helper()
	et := rec.Summary.EngineTokens
	if et == nil || et.PromptProcessed == nil || et.PromptCached == nil || et.Output == nil {
		t.Fatalf("engine_tokens %+v: want llama.cpp's prompt, cached and predicted counters over the window", et)
	}
	prompt, output := tokenSums(rec)
	if *et.Output != float64(output) {
		t.Errorf("llamacpp:tokens_predicted_total rose by %.0f over the window; the record's requests have %d output tokens", *et.Output, output)
	}
	if got := *et.PromptProcessed + *et.PromptCached; got != float64(prompt) {
		t.Errorf("llamacpp:prompt_tokens_total %.0f + prompt_tokens_cached_total %.0f = %.0f over the window; the record's requests have %d prompt tokens",
			*et.PromptProcessed, *et.PromptCached, got, prompt)
	}
	if hr := rec.Summary.PrefixCacheHitRate; hr == nil || math.Abs(*hr-*et.PromptCached/float64(prompt)) > 1e-9 {
		t.Errorf("prefix_cache_hit_rate %v, want cached/prompt = %.0f/%d", realPtr(hr), *et.PromptCached, prompt)
	}
}

func TestLlamaCppReal(t *testing.T) {
	quiet(t)
	s := realLlamaServer(t)
	cfg := s.config(t)

	t.Run("over-context-refused", func(t *testing.T) {
		before := pageCounter(t, s.url, "llamacpp:prompt_tokens_total") + pageCounter(t, s.url, "llamacpp:tokens_predicted_total")
		dir := t.TempDir()
		a, out, errb := testApp(t)
		code := realRun(a, "run", "-c", cfg, "-w", "llamacpp-over-slot", "--target", s.url, "-o", dir)
		t.Logf("slogate run -w llamacpp-over-slot: exit %d\n%s%s", code, out, errb)
		if code != ExitBadInput {
			t.Errorf("exit %d, want %d", code, ExitBadInput)
		}
		want := fmt.Sprintf("context of %d tokens per request (llama.cpp /props", s.slotCtx())
		if !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "Nothing was sent") {
			t.Errorf("stderr %q lacks %q", errb, want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("files written: %v", ents)
		}
		if after := pageCounter(t, s.url, "llamacpp:prompt_tokens_total") + pageCounter(t, s.url, "llamacpp:tokens_predicted_total"); after != before {
			t.Errorf("the server's token counters moved from %.0f to %.0f: requests were sent", before, after)
		}
	})

	// Chat on the fresh server: llama-server renders each conversation through its chat
	// template, whose opening every prompt shares before its salt and the server's
	// prompt cache serves from the second request on (16 tokens a request of a
	// short-prompt run read 13.6% warm, and the run was refused). The opening is measured
	// and excluded: the first cold run is accepted. Four prompts sent again with the same
	// salts find them in the slots: refused.
	t.Run("cold-chat", func(t *testing.T) {
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		chat := filepath.Join(t.TempDir(), "chat.yaml")
		if err := os.WriteFile(chat, []byte(strings.Replace(string(data), "  api: completions\n", "  api: chat\n", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		run := func(workload, runID string) (*result.Record, int) {
			dir := t.TempDir()
			a, out, errb := testApp(t)
			a.newRunID = func() string { return runID }
			code := realRun(a, "run", "-c", chat, "-w", workload, "--target", s.url, "-o", dir)
			t.Logf("slogate run -w %s (api chat, run id %s): exit %d\n%s%s", workload, runID, code, out, errb)
			rec, err := result.Read(filepath.Join(dir, workload+".json"))
			if err != nil {
				t.Fatalf("exit %d and no record: %v", code, err)
			}
			if rec.API != "chat" || rec.Summary.PrefixCache == nil || rec.Summary.PrefixCache.Own == nil {
				t.Fatalf("api %q, prefix cache %+v: want chat, hits attributed", rec.API, rec.Summary.PrefixCache)
			}
			pc, o := rec.Summary.PrefixCache, rec.PrefixCache.Opening
			t.Logf("MEASURED cold chat %s (run id %s): opening %+v; %.0f of %.0f prompt tokens from the cache, %.0f of them the opening's; unfit %q",
				workload, runID, o, pc.Hits, pc.Queries, pc.Own.Opening, rec.Unfit())
			return rec, code
		}
		rec, code := run("llamacpp-smoke", "chat-first")
		o := rec.PrefixCache.Opening
		if o == nil || o.Method != result.OpeningTokenize || o.BlockSize != 1 || o.Tokens < 2 || o.Tokens != o.Common {
			t.Errorf("opening %+v: want BOS and the template's header, measured through the server's template and tokenizer, token by token", o)
		}
		if why := rec.Unfit(); why != "" || code != ExitOK {
			t.Errorf("the first cold chat run on a fresh server: exit %d, refused: %q", code, why)
		}
		if _, code := run("llamacpp-cold-few", "chat-few"); code != ExitOK {
			t.Errorf("four new cold prompts: exit %d, want %d", code, ExitOK)
		}
		if s.parallel == 4 {
			// Four slots hold the four prompts; the server that shares one cache across
			// its slots may have dropped them.
			warm, code := run("llamacpp-cold-few", "chat-few")
			if code != ExitFailure || !strings.Contains(warm.Unfit(), "a cold run found") {
				t.Errorf("the same four prompts again: exit %d, unfit %q; want refused as warm (exit %d)", code, warm.Unfit(), ExitFailure)
			}
		}
	})

	var run1 *result.Record
	var run1Dir string
	// The cold runs' directories outlive their subtest: the next one gates run 1.
	runDirs := [2]string{t.TempDir(), t.TempDir()}
	t.Run("cold-runs", func(t *testing.T) {
		var processed [2]float64
		for i := range 2 {
			dir := runDirs[i]
			rec, code, _ := s.run(t, cfg, "llamacpp-smoke", dir)
			sum := rec.Summary
			e := rec.Engine
			if e == nil || e.Name != engine.EngineLlamaCpp || !strings.Contains(e.Version, "de3ff81") || e.ModelID != "stories260k" {
				t.Errorf("engine %+v, want llamacpp build de3ff81 serving stories260k", e)
			}
			if e != nil && (e.MaxContext != s.slotCtx() || e.KVCapacityTokens != int64(s.ctx)) {
				t.Errorf("max_context %d, KV capacity %d (%s); want one slot's %d and the server's %d in all", e.MaxContext, e.KVCapacityTokens, e.KVSource, s.slotCtx(), s.ctx)
			}
			if k := sum.KVConcurrency; k == nil || k.CapacityTokens != int64(s.ctx) || k.Value != 4 {
				t.Errorf("kv_concurrency %+v: want capacity %d and 4 sequences (4 slots, every request fits one)", k, s.ctx)
			}
			if sum.KVUsage != nil || !slices.ContainsFunc(rec.Engine.Notes, func(n string) bool { return strings.Contains(n, "exports no KV usage") }) {
				t.Errorf("kv_usage %+v, engine notes %q: this build has no KV-usage gauge, and the record must say so", sum.KVUsage, rec.Engine.Notes)
			}
			connect := sum.Errors[engine.ErrConnect]
			if other := sum.Requests - sum.Completed - connect; other != 0 || sum.Requests != 100 {
				t.Fatalf("%d requests, %d completed, errors %v", sum.Requests, sum.Completed, sum.Errors)
			}
			s.check(t, "closed-connection", connect == 0 && code == ExitOK, "run %d: %d of %d requests counted as connect errors (exit %d)", i+1, connect, sum.Requests, code)
			checkCounters(t, rec)
			prompt, _ := tokenSums(rec)
			processed[i] = *sum.EngineTokens.PromptProcessed
			t.Logf("MEASURED cold run %d: %d prompt tokens sent, %.0f processed, %.0f from the cache (hit rate %.3f); %d connect errors; TTFT p50 %.1f ms",
				i+1, prompt, processed[i], *sum.EngineTokens.PromptCached, *sum.PrefixCacheHitRate, connect, sum.TTFTms.P50)
			if i == 0 {
				run1, run1Dir = rec, dir
			}
		}
		s.check(t, "cold", math.Abs(processed[1]-processed[0]) <= 0.02*processed[0],
			"two consecutive cold runs on one server processed %.0f and %.0f prompt tokens (%.1f%% apart, bound 2%%)",
			processed[0], processed[1], 100*math.Abs(processed[1]-processed[0])/processed[0])
	})

	t.Run("baseline-then-gate", func(t *testing.T) {
		if run1 == nil {
			t.Skip("no cold run")
		}
		baselines := filepath.Join(t.TempDir(), "baselines")
		a, out, errb := testApp(t)
		if code := realRun(a, "baseline", "update", "-c", cfg, "-w", "llamacpp-smoke", "-r", run1Dir, "--baselines", baselines); code != ExitOK {
			t.Fatalf("baseline update: exit %d\n%s%s", code, out, errb)
		}
		jsonOut := filepath.Join(t.TempDir(), "gate.json")
		a, out, errb = testApp(t)
		code := realRun(a, "gate", "-c", cfg, "-w", "llamacpp-smoke", "-r", run1Dir, "--baselines", baselines, "--json", jsonOut)
		t.Logf("slogate gate: exit %d\n%s%s", code, out, errb)
		res := realGateJSON(t, jsonOut)
		// A run gated against itself gives every ratio 1 and never fails. It passes unless
		// the run's own sampling noise is wider than a rule's tolerance: then that rule's
		// interval reaches past the tolerance and the verdict is inconclusive (exit 4), as
		// it must be. On a loaded machine this server's ITL tail is bimodal (gaps of 2 ms
		// and of 15 ms), and a p99 near the step spreads its interval that wide.
		wide := 0
		for _, m := range res.Workloads[0].Metrics {
			if m.Ratio != nil && math.Abs(*m.Ratio-1) > 1e-9 {
				t.Errorf("%s: ratio %v of a run against itself", m.Metric, *m.Ratio)
			}
			switch {
			case m.Verdict == gate.Pass:
			case m.Verdict == gate.Inconclusive && m.Hi != nil && m.Tolerance > 0 && (*m.Hi > 1+m.Tolerance || *m.Lo < 1-m.Tolerance):
				wide++
			default:
				t.Errorf("%s: verdict %s [%v, %v] of a run against itself", m.Metric, m.Verdict, realPtr(m.Lo), realPtr(m.Hi))
			}
		}
		want, wantCode := gate.Pass, ExitOK
		if wide > 0 {
			want, wantCode = gate.Inconclusive, ExitInconclusive
		}
		if code != wantCode || res.Verdict != want {
			t.Fatalf("gate of the baseline's own run: exit %d, verdict %q; want %d and %s", code, res.Verdict, wantCode, want)
		}
	})

	t.Run("back-to-back", func(t *testing.T) {
		rec, code, _ := s.run(t, cfg, "llamacpp-back-to-back", t.TempDir())
		sum := rec.Summary
		errs := sum.Requests - sum.Completed
		t.Logf("MEASURED back-to-back: %d errors in %d requests (%v), exit %d", errs, sum.Requests, sum.Errors, code)
		if sum.Requests != 200 {
			t.Fatalf("%d requests, want 200", sum.Requests)
		}
		if errs != sum.Errors[engine.ErrConnect] {
			t.Errorf("errors %v: only connection errors are expected of this server", sum.Errors)
		}
		checkCounters(t, rec)
		s.check(t, "closed-connection", errs == 0 && code == ExitOK, "%d errors in %d back-to-back requests (%v), exit %d", errs, sum.Requests, sum.Errors, code)
	})
}
