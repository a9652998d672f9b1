package sim

import (
	"bytes"
	"net/http"
	"strconv"
)

// metrics writes vLLM's Prometheus page (text format 0.0.4): the same names, HELP
// texts, types and model_name label as vLLM, plus the simulator's own step lag.
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	st := s.Stats()
	var b bytes.Buffer
	lbl := `{model_name="` + escapeLabel(s.model) + `"}`
	metric := func(name, typ, help string, v float64) {
		b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
		b.WriteString(name + lbl + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
	}
	metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", float64(st.Running))
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", float64(st.Waiting))
	usage := 0.0
	if st.NumBlocks > 0 {
		usage = float64(st.UsedBlocks) / float64(st.NumBlocks)
	}
	metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage)
	metric("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", float64(st.Preemptions))
	metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", float64(st.PrefixQueries))
	metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", float64(st.PrefixHits))
	metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(st.PromptTokens))
	metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(st.GenerationTokens))

	p := s.p
	prefixCaching := "True"
	if s.o.NoPrefixCaching {
		prefixCaching = "False"
	}
	b.WriteString("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n")
	b.WriteString(`vllm:cache_config_info{block_size="` + strconv.Itoa(p.BlockSize) +
		`",cache_dtype="auto",enable_prefix_caching="` + prefixCaching + `",gpu_memory_utilization="0.9",model_name="` + escapeLabel(s.model) +
		`",num_cpu_blocks="0",num_gpu_blocks="` + strconv.Itoa(p.NumBlocks) +
		`",num_gpu_blocks_override="None",swap_space_bytes="0"} 1` + "\n")

	const lag = "slogate_sim:step_lag_seconds"
	b.WriteString("# HELP " + lag + " Lateness of each simulated step's end behind its modelled deadline (the simulator's own timing error).\n# TYPE " + lag + " histogram\n")
	var cum int64
	for i, ub := range lagBounds {
		cum += st.lagHist[i]
		b.WriteString(lag + `_bucket{le="` + strconv.FormatFloat(ub, 'g', -1, 64) + `",model_name="` + escapeLabel(s.model) + `"} ` + strconv.FormatInt(cum, 10) + "\n")
	}
	cum += st.lagHist[len(lagBounds)]
	b.WriteString(lag + `_bucket{le="+Inf",model_name="` + escapeLabel(s.model) + `"} ` + strconv.FormatInt(cum, 10) + "\n")
	b.WriteString(lag + "_sum" + lbl + " " + strconv.FormatFloat(st.LagSum.Seconds(), 'g', -1, 64) + "\n")
	b.WriteString(lag + "_count" + lbl + " " + strconv.FormatInt(cum, 10) + "\n")

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// escapeLabel escapes a Prometheus label value.
func escapeLabel(v string) string {
	var b []byte
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
