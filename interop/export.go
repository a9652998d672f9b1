package interop

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/slogate/slogate/result"
)

// CSVHeader is the header of the per-request CSV: one row per measured request, times
// in microseconds from the record's epoch (first and last empty when no content
// arrived), tokens from the server's usage, error the reason ("" on success).
var CSVHeader = []string{"i", "class", "sched_us", "send_us", "first_us", "last_us", "end_us", "prompt_tokens", "output_tokens", "chunks", "error", "slo_met"}

// GapsHeader is the header of the per-gap CSV: one row per gap between consecutive
// content chunks of a request (k is the gap's 0-based index within it).
var GapsHeader = []string{"i", "k", "gap_us"}

// WriteCSV writes rec's requests as CSV, one row per request, or with gaps one row per
// ITL gap.
func WriteCSV(w io.Writer, rec *result.Record, gaps bool) error {
	cw := csv.NewWriter(w)
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	opt := func(v int64) string {
		if v == 0 {
			return ""
		}
		return itoa(v)
	}
	if gaps {
		if err := cw.Write(GapsHeader); err != nil {
			return err
		}
		for _, q := range rec.Requests {
			for k, g := range q.ITLUS {
				if err := cw.Write([]string{strconv.Itoa(q.I), strconv.Itoa(k), itoa(g)}); err != nil {
					return err
				}
			}
		}
	} else {
		if err := cw.Write(CSVHeader); err != nil {
			return err
		}
		for _, q := range rec.Requests {
			row := []string{strconv.Itoa(q.I), q.Class, itoa(q.SchedUS), itoa(q.SendUS), opt(q.FirstUS), opt(q.LastUS), itoa(q.EndUS),
				strconv.Itoa(q.PromptTokens), strconv.Itoa(q.OutputTokens), strconv.Itoa(q.Chunks), q.Error, strconv.FormatBool(q.SLOMet)}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// ownError recognises an error text slogate's vLLM export wrote ("reason: detail").
var ownError = regexp.MustCompile(`^(http_[0-9]{3}|timeout|connect|stream_error|disconnect|canceled|response_too_large|bad_response|empty_response|output_overrun|no_content|error)(: |$)`)

// ExportVLLM encodes rec in the shape `vllm bench serve --save-result --save-detailed`
// writes (VLLMFormat), so that tools reading vLLM results read slogate runs. vLLM's
// definitions apply: ttfts are first − send in seconds (a native record's scheduled
// times are not in vLLM's shape), itls the chunk gaps, latencies to the last chunk,
// statistics over successful requests with numpy's linear-interpolated percentiles.
// requestRate is the configured rate (0 or +Inf for "inf"). Generated texts are not
// kept by slogate and are written empty. The record's workload hash, hardware and
// provenance go in as --metadata strings.
func ExportVLLM(rec *result.Record, requestRate float64) ([]byte, error) {
	out := map[string]any{}
	backend := "openai"
	if rec.API == "chat" {
		backend = "openai-chat"
	}
	out["date"] = rec.Start.UTC().Format("20060102-150405")
	out["endpoint_type"], out["backend"], out["label"] = backend, backend, nil
	out["model_id"], out["tokenizer_id"] = rec.Model, rec.Model
	out["num_prompts"] = len(rec.Requests)
	if requestRate == 0 {
		requestRate = identityRate(rec)
	}
	if requestRate > 0 && !math.IsInf(requestRate, 1) {
		out["request_rate"] = requestRate
	} else {
		out["request_rate"] = "inf"
	}
	out["burstiness"], out["max_concurrency"] = 1.0, nil
	out["slogate_workload"], out["slogate_workload_hash"], out["slogate_hardware"] = rec.Workload, rec.WorkloadHash, rec.Hardware
	if rec.Source != nil {
		out["slogate_source"] = rec.Source.Line()
	}

	dur := rec.Summary.DurationS
	n := len(rec.Requests)
	inputLens, outputLens := make([]int, n), make([]int, n)
	ttfts, errs, starts := make([]float64, n), make([]string, n), make([]float64, n)
	itls := make([][]float64, n)
	texts := make([]string, n)
	var ttftV, tpotV, itlV, e2eV []float64
	completed, totalIn, totalOut := 0, 0, 0
	var tokenTimes []tokenAt
	var spans [][2]float64
	spanned := 0
	for i, q := range rec.Requests {
		inputLens[i] = q.PromptTokens
		starts[i] = float64(q.SendUS) / 1e6
		itls[i] = []float64{}
		if !q.OK() || !q.HasContent() {
			e := q.Error
			if e == "" {
				e = "no_content"
			}
			if q.ErrorDetail != "" {
				e += ": " + q.ErrorDetail
			}
			errs[i] = e
			continue
		}
		completed++
		totalIn += q.PromptTokens
		totalOut += q.OutputTokens
		outputLens[i] = q.OutputTokens
		ttft := float64(q.FirstUS-q.SendUS) / 1e6
		lat := float64(q.LastUS-q.SendUS) / 1e6
		ttfts[i] = ttft
		ttftV, e2eV = append(ttftV, ttft), append(e2eV, lat)
		if q.OutputTokens > 1 {
			tpotV = append(tpotV, (lat-ttft)/float64(q.OutputTokens-1))
		}
		gaps := q.ITLUS
		if len(gaps) == 0 && q.LastUS > q.FirstUS {
			// A source without chunk gaps (guidellm keeps the first and last token):
			// one gap from the first token to the last, so that the latency and TPOT
			// come back on import; the file says so (slogate_itls), and the import
			// takes no ITL from it.
			gaps = []int64{q.LastUS - q.FirstUS}
			spanned++
		} else {
			for _, g := range gaps {
				itlV = append(itlV, float64(g)/1e6)
			}
		}
		// Each chunk's share of the request's tokens (a chunk may carry several).
		per := float64(max(q.OutputTokens, 1)) / float64(len(gaps)+1)
		t := float64(q.FirstUS) / 1e6
		tokenTimes = append(tokenTimes, tokenAt{t, per})
		for _, g := range gaps {
			gs := float64(g) / 1e6
			itls[i] = append(itls[i], gs)
			t += gs
			tokenTimes = append(tokenTimes, tokenAt{t, per})
		}
		spans = append(spans, [2]float64{float64(q.SendUS) / 1e6, float64(q.SendUS)/1e6 + lat})
	}
	if spanned > 0 {
		out[exportSpanKey] = fmt.Sprintf("%s: %d requests had no chunk gaps in the record (its source kept none); each has one gap from its first token to its last, so that latencies and TPOT come back; their ITL was not measured", exportSpanValue, spanned)
	}
	out["duration"], out["completed"], out["failed"] = dur, completed, n-completed
	out["total_input_tokens"], out["total_output_tokens"] = totalIn, totalOut
	per := func(v float64) float64 {
		if dur <= 0 {
			return 0
		}
		return v / dur
	}
	out["request_throughput"] = per(float64(completed))
	out["request_goodput"] = nil
	if len(rec.SLO) > 0 {
		// vllm bench serve divides by the benchmark duration: the window figure.
		out["request_goodput"] = rec.Summary.GoodputWindowRPS
	}
	out["output_throughput"], out["total_token_throughput"] = per(float64(totalOut)), per(float64(totalIn+totalOut))
	out["input_lens"], out["output_lens"], out["ttfts"], out["itls"] = inputLens, outputLens, ttfts, itls
	out["generated_texts"], out["errors"] = texts, errs
	if _, unknown := rec.Source.Lacks("in_flight"); !unknown {
		// Later vLLM's send times; a record whose source had none gets none.
		out["start_times"] = starts
	}
	out["max_output_tokens_per_s"], out["max_concurrent_requests"] = peaks(tokenTimes, spans)
	for _, m := range []struct {
		name string
		v    []float64
	}{{"ttft", ttftV}, {"tpot", tpotV}, {"itl", itlV}, {"e2el", e2eV}} {
		out["mean_"+m.name+"_ms"] = 1000 * mean(m.v)
		out["median_"+m.name+"_ms"] = 1000 * npPercentile(m.v, 50)
		out["std_"+m.name+"_ms"] = 1000 * std(m.v)
		out["p99_"+m.name+"_ms"] = 1000 * npPercentile(m.v, 99)
	}
	return json.Marshal(out)
}

// exportSpanKey is the --metadata string ExportVLLM writes when requests without chunk
// gaps carry one gap from first to last token; its value starts with exportSpanValue.
const (
	exportSpanKey   = "slogate_itls"
	exportSpanValue = "first_to_last"
)

// tokenAt is a chunk's time and the tokens it carried.
type tokenAt struct{ t, tokens float64 }

// identityRate is the request rate the record's source pinned (an import's identity
// holds it as request_rate, at its top (vLLM) or under the benchmark's configuration
// (AIPerf), or as the rate of a constant or Poisson strategy (guidellm)), 0 when none is
// known.
func identityRate(rec *result.Record) float64 {
	if rec.Source == nil || rec.Source.Identity == "" {
		return 0
	}
	var v any
	if json.Unmarshal([]byte(rec.Source.Identity), &v) != nil {
		return 0
	}
	var find func(any) float64
	find = func(v any) float64 {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["request_rate"].(float64); ok && r > 0 {
				return r
			}
			if s, ok := x["request_rate"].(string); ok {
				if r, err := strconv.ParseFloat(s, 64); err == nil && r > 0 && !math.IsInf(r, 0) {
					return r
				}
			}
			if typ, _ := x["type_"].(string); typ == "constant" || typ == "poisson" {
				if r, ok := x["rate"].(float64); ok && r > 0 {
					return r
				}
			}
			for _, e := range x {
				if r := find(e); r > 0 {
					return r
				}
			}
		case []any:
			for _, e := range x {
				if r := find(e); r > 0 {
					return r
				}
			}
		}
		return 0
	}
	return find(v)
}

// peaks is serve.py's max_output_tokens_per_s and max_concurrent_requests: tokens and
// active requests counted in one-second buckets from the earliest send.
func peaks(tokenTimes []tokenAt, spans [][2]float64) (float64, int) {
	if len(spans) == 0 {
		return 0, 0
	}
	lo, hi := spans[0][0], spans[0][1]
	for _, s := range spans {
		lo, hi = min(lo, s[0]), max(hi, s[1])
	}
	nb := int(math.Ceil(hi-lo)) + 1
	tok, conc := make([]float64, nb), make([]int, nb)
	for _, t := range tokenTimes {
		if b := int(t.t - lo); b >= 0 && b < nb {
			tok[b] += t.tokens
		}
	}
	for _, s := range spans {
		for b := int(s[0] - lo); b <= int(s[1]-lo) && b < nb; b++ {
			conc[b]++
		}
	}
	return slices.Max(tok), slices.Max(conc)
}

// mean, std and npPercentile follow numpy (np.mean, np.std with ddof 0, np.percentile
// with linear interpolation); vLLM writes 0 for an empty list ("ttfts or 0").
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func std(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	m, s := mean(v), 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)))
}

func npPercentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	r := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(r))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(r-float64(lo))
}
