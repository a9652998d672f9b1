package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
)

// singleSlotServer serves one completion at a time (a 5 ms prefill and 4 tokens 2 ms
// apart, so about 200 req/s of capacity), and makes the 10th, 11th and 12th request of
// every hundred it receives wait 700 ms before they take the slot: 3% of requests miss a
// 600 ms TTFT limit at any rate, all three in one run of 50.
func singleSlotServer(t *testing.T) string {
	slot := make(chan struct{}, 1)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":4096}]}`)
			return
		}
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		ctx := r.Context()
		if k := n.Add(1) % 100; k >= 10 && k <= 12 {
			select {
			case <-time.After(700 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
		select {
		case slot <- struct{}{}:
			defer func() { <-slot }()
		case <-ctx.Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		time.Sleep(5 * time.Millisecond)
		for k := range 4 {
			if k > 0 {
				time.Sleep(2 * time.Millisecond)
			}
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" tok%d\",\"finish_reason\":null}]}\n\n", k)
			fl.Flush()
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}\n\ndata: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A sweep judges each step by the SLO as the workload declares it. With
// `ttft: {p95: 600ms}` and no attainment, 97% of requests within 600 ms meets it. Before,
// every step was held to the default 99% attainment: this sweep's first step failed and
// it reported no capacity ("max sustainable rate: none"). The 50 requests of a run that
// holds the three slow ones meet it 94% of the time, a fail that 50 requests cannot
// confirm (Wilson interval [83.8%, 97.9%]): the step is run again and pooled, 97 of 100,
// a pass; the record shows the target, both runs and that 100 requests still could not
// tell 97% from 95% for certain.
func TestSweepJudgesTheDeclaredSLO(t *testing.T) {
	quiet(t)
	long(t)
	url := singleSlotServer(t)
	cfg := writeConfig(t, `version: 1
target: {api: completions, engine: openai}
model: {name: m}
workloads:
  - name: slot
    seed: 5
    requests: 50
    warmup: {requests: 2}
    arrival: {process: constant, rate: 10}
    prompt_tokens: {dist: fixed, value: 5}
    output_tokens: {dist: fixed, value: 4}
    timeout: 30s
    max_dispatch_lag: 200ms
    slo: {ttft: {p95: 600ms}}
`)
	var (
		out, errb *bytes.Buffer
		code      int
		sw        *result.Sweep
	)
	retryQuiet(t, func(try int) (busy string) {
		dir := t.TempDir()
		var a *app
		a, out, errb = testApp(t)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		code = a.run(ctx, []string{"sweep", "-c", cfg, "-w", "slot", "--target", url, "-o", dir,
			"--min-rate", "25", "--max-rate", "50", "--step-requests", "50"})
		t.Logf("sweep %d: exit %d\n%s%s", try, code, out, errb)
		var err error
		sw, err = result.ReadSweep(filepath.Join(dir, "slot.sweep.json"))
		if err != nil {
			t.Fatalf("exit %d: %v", code, err)
		}
		// A step of 50 requests at 50 req/s lasts 1 s; under the race suite its latency
		// once spread by 107 ms, and the sweep refused the step as too short to show its
		// pace (exit 2), as it must on so loaded a machine. Twice in a row fails.
		if code == ExitBadInput && strings.Contains(out.String(), "too short to show whether the engine kept up") {
			return "a step's latency spread too wide to show its pace (exit 2)"
		}
		return clientLimited(t, code, sw)
	})
	if code != ExitOK || sw.MaxSustainableRPS == nil || *sw.MaxSustainableRPS != 50 || sw.Bound != result.BoundMaxRate {
		t.Fatalf("exit %d, max sustainable %v, bound %q: want every step to pass up to --max-rate 50", code, sw.MaxSustainableRPS, sw.Bound)
	}
	if sw.SLOAttainmentDeclared || !strings.Contains(out.String(), "each target judged at its percentile") {
		t.Errorf("attainment declared %v; the table should say how steps were judged:\n%s", sw.SLOAttainmentDeclared, out)
	}
	for _, st := range sw.Steps {
		if len(st.Targets) != 1 || st.Targets[0].Metric != "ttft" || st.Targets[0].Need != 0.95 {
			t.Fatalf("step %d judged by %+v, want the ttft p95 target at 95%%", st.Step, st.Targets)
		}
		tg := st.Targets[0]
		if tg.Met != 97 || tg.Requests != 100 || len(st.MoreRecords) != 1 || !st.Undecided || st.Verdict != result.StepPass {
			t.Errorf("step %d: %s over %d runs, undecided %v, verdict %s; want 97 of 100 over 2 runs, a pass the interval leaves open",
				st.Step, tg, 1+len(st.MoreRecords), st.Undecided, st.Verdict)
		}
		// The slow requests waited in the server, not in the client: the step says so.
		if q := st.Slowest; q == nil || q.SendToFirstms < 600 || q.DispatchLagms > q.SendToFirstms/2 {
			t.Errorf("step %d: slowest %+v; want a TTFT over 600 ms spent mostly between send and first token", st.Step, q)
		}
	}
}
