package loadgen

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
)

// Half the answers are empty (a role chunk, then [DONE]) and some of the others report
// 10^12 output tokens: the run must read 50% errors, never "completed 40/40, SLO
// attainment 100%", and no TPOT of 0 (tokens come 2 ms apart: TPOT ≈ 2 ms, not 2 ps).
func TestEmptyAnswersAreErrors(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		k := n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		if k%2 == 0 {
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n")
			return
		}
		for i := range 4 {
			if i > 0 {
				time.Sleep(2 * time.Millisecond)
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\" t%d\",\"finish_reason\":null}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		completion := "4"
		if k%4 == 1 {
			completion = "1000000000000"
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":%s}}\n\ndata: [DONE]\n\n", completion)
	}))
	t.Cleanup(srv.Close)
	out := run(t, clientConfig(srv, &fakeSource{arrivals: constant(200, 40)}))
	slo := []result.SLOTarget{{Metric: result.MetricTTFT, Percentile: 99, LimitMS: 10_000}, {Metric: result.MetricTPOT, Percentile: 99, LimitMS: 10_000}}
	s := result.Summarize(out.Measured, result.SummaryInput{Window: out.Window, SLO: slo, OpenLoop: true})
	if s.Completed != 20 || s.Errors[engine.ErrEmpty] != 20 || s.ErrorRate != 0.5 || s.SLOAttainment != 0.5 {
		t.Errorf("completed %d errors %v error rate %v attainment %v: want 20 completed, 20 %s, 0.5, 0.5",
			s.Completed, s.Errors, s.ErrorRate, s.SLOAttainment, engine.ErrEmpty)
	}
	if s.UsageFlagged != 10 || s.Lengths.Output.Max != 4 || s.TPOTms.Count != 20 || s.TPOTms.P50 < 1 {
		t.Errorf("flagged %d, output max %v, TPOT %+v: the 10^12-token usage must be flagged and the chunk count used",
			s.UsageFlagged, s.Lengths.Output.Max, s.TPOTms)
	}
	var note string
	for _, nt := range out.Notes {
		if strings.HasPrefix(nt, "usage:") {
			note = nt
		}
	}
	if !strings.Contains(note, "of 10 requests") || !strings.Contains(note, "completion_tokens 1000000000000 > max_tokens 7") {
		t.Errorf("notes %q: want the flagged usage counted and explained", out.Notes)
	}
}
