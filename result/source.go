package result

import "strings"

// Source says where an imported record came from: another benchmark tool's output, read
// by the interop package. A record slogate measured itself has none. Everything a
// reader needs to weigh an imported figure against a native one is here: the tool and
// the shape read, the file's SHA-256, and what the source could not give.
type Source struct {
	// Tool is the benchmark tool: "vllm", "guidellm" or "aiperf".
	Tool string `json:"tool"`
	// ToolVersion is the tool's version as the file states it; "" when the file states
	// none (vLLM's result file carries no version unless --metadata added one).
	ToolVersion string `json:"tool_version,omitempty"`
	// Format names the output shape read and the source revision it was read from.
	Format string `json:"format"`
	// File is the path given to the importer; SHA256 the hex digest of its bytes (of
	// each file, in order, when several files make one record).
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Benchmark identifies the part of the file imported when it holds several (a
	// guidellm report's benchmarks); "" otherwise.
	Benchmark string `json:"benchmark,omitempty"`
	// Identity is what the workload hash was derived from, as canonical JSON: the
	// dataset, lengths, rate, seed and model the source pins, and the SLO applied.
	Identity string `json:"identity"`
	// TTFTFrom is what the source measured TTFT from: "sched" (the scheduled arrival,
	// as slogate does) or "send" (the moment the request was sent).
	TTFTFrom string `json:"ttft_from"`
	// Unavailable lists what the source could not give, each "name: why". Names are
	// metric families (dispatch_lag, itl, in_flight, kv_concurrency, server_metrics).
	Unavailable []string `json:"unavailable,omitempty"`
}

// Lacks reports whether the source could not give the metric family name (the part of a
// rule's metric before the first '_': itl for itl_p99).
func (s *Source) Lacks(name string) (string, bool) {
	if s == nil {
		return "", false
	}
	for _, u := range s.Unavailable {
		n, why, _ := strings.Cut(u, ":")
		if n == name {
			return strings.TrimSpace(why), true
		}
	}
	return "", false
}

// Line is the provenance of an imported record on one line, as the gate and the
// report show it beside a verdict.
func (s *Source) Line() string {
	if s == nil {
		return "measured by slogate (TTFT from the scheduled arrival)"
	}
	v := s.ToolVersion
	if v == "" {
		v = "version not stated in the file"
	}
	b := ""
	if s.Benchmark != "" {
		b = " " + s.Benchmark
	}
	sha := s.SHA256
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return "imported from " + s.Tool + " (" + v + "; " + s.Format + ") " + s.File + b + " sha256:" + sha + "; TTFT from " + s.TTFTFrom
}
