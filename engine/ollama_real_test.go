package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The real-engine checks run against a real Ollama server serving stories260K.gguf, started
// by scripts/ollama.sh (docs/real-engine.md). They check the adapter and the streaming
// client against what a real engine answers, which fakes can only copy.

// realOllamaModel is the name scripts/ollama.sh creates the model under.
const realOllamaModel = "stories260k"

// realOllama returns the server's URL and its OLLAMA_NUM_PARALLEL, or skips the test.
func realOllama(t *testing.T) (string, int) {
	t.Helper()
	url := os.Getenv("SLOGATE_OLLAMA_URL")
	if url == "" {
		t.Skip("SLOGATE_OLLAMA_URL is not set: no real Ollama server to test against (see docs/real-engine.md)")
	}
	parallel := 2
	if s := os.Getenv("SLOGATE_OLLAMA_PARALLEL"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SLOGATE_OLLAMA_PARALLEL=%q: want a positive integer", s)
		}
		parallel = n
	}
	return strings.TrimRight(url, "/"), parallel
}

// rawCall sends one request outside the code under test, so that the test compares the
// adapter with what the server really said.
func rawCall(t *testing.T, ctx context.Context, method, url string, body any) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d: %.300s", method, url, resp.StatusCode, data)
	}
	return data
}

// trim keeps a logged body short.
func trim(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ollamaShow is the part of POST /api/show the adapter reads.
type ollamaShow struct {
	ModelInfo  map[string]any `json:"model_info"`
	Parameters string         `json:"parameters"`
}

func (s *ollamaShow) int(key string) int64 {
	arch, _ := s.ModelInfo["general.architecture"].(string)
	f, _ := s.ModelInfo[arch+"."+key].(float64)
	return int64(f)
}

func TestOllamaRealIdentify(t *testing.T) {
	t.Parallel()
	url, parallel := realOllama(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	version := rawCall(t, ctx, http.MethodGet, url+"/api/version", nil)
	t.Logf("GET /api/version: %s", trim(version, 300))
	models := rawCall(t, ctx, http.MethodGet, url+"/v1/models", nil)
	t.Logf("GET /v1/models: %s", trim(models, 600))
	showBody := rawCall(t, ctx, http.MethodPost, url+"/api/show", map[string]string{"model": realOllamaModel})
	var show ollamaShow
	if err := json.Unmarshal(showBody, &show); err != nil {
		t.Fatalf("POST /api/show: %v: %.300s", err, showBody)
	}
	keys := make([]string, 0, len(show.ModelInfo))
	for k := range show.ModelInfo {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if list, ok := show.ModelInfo[k].([]any); ok {
			t.Logf("/api/show model_info %s = [%d values]", k, len(list))
			continue
		}
		v, _ := json.Marshal(show.ModelInfo[k])
		t.Logf("/api/show model_info %s = %s", k, trim(v, 80))
	}
	t.Logf("/api/show parameters: %q", show.Parameters)

	// The keys the adapter reads must be there under the architecture's prefix: a renamed
	// key would silently turn KV bytes per token into 0.
	arch, _ := show.ModelInfo["general.architecture"].(string)
	if arch == "" {
		t.Fatal("/api/show model_info has no general.architecture")
	}
	for _, k := range []string{"block_count", "attention.head_count", "attention.head_count_kv", "embedding_length", "context_length"} {
		if show.int(k) <= 0 {
			t.Errorf("/api/show model_info %s.%s missing or not a positive number", arch, k)
		}
	}
	if got := paramInt(show.Parameters, "num_ctx"); got != 2048 {
		t.Errorf("/api/show parameters num_ctx = %d, want 2048 (the Modelfile's PARAMETER num_ctx)", got)
	}

	id, err := Identify(ctx, IdentifyOptions{BaseURL: url, Model: realOllamaModel, Parallel: parallel})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("identity: %+v", *id)
	if id.Engine != EngineOllama {
		t.Errorf("engine = %q, want %q (detected from /api/version)", id.Engine, EngineOllama)
	}
	if id.Version != "0.6.5" {
		t.Errorf("version = %q, want 0.6.5 (scripts/ollama.sh builds it with the version ldflag)", id.Version)
	}
	if id.ModelID != realOllamaModel+":latest" {
		t.Errorf("model id = %q, want %q (Ollama lists a created model with its tag)", id.ModelID, realOllamaModel+":latest")
	}
	if want := int64(2048 * parallel); id.KVCapacityTokens != want {
		t.Errorf("KV capacity = %d tokens, want num_ctx 2048 × parallel %d = %d", id.KVCapacityTokens, parallel, want)
	}
	if !strings.HasPrefix(id.KVSource, "derived") {
		t.Errorf("KV source = %q, want it to say the capacity is derived, not reported", id.KVSource)
	}
	// f16 K and V for every layer and KV head, computed here from the raw answer.
	headDim := show.int("attention.key_length")
	if headDim == 0 {
		headDim = show.int("embedding_length") / show.int("attention.head_count")
	}
	if want := 2 * show.int("block_count") * show.int("attention.head_count_kv") * headDim * 2; id.KVBytesPerToken <= 0 || id.KVBytesPerToken != want {
		t.Errorf("KV bytes per token = %d, want %d from /api/show", id.KVBytesPerToken, want)
	}
	if want := int(min(2048, show.int("context_length"))); id.MaxContext != want {
		t.Errorf("max context = %d, want min(num_ctx 2048, context_length %d) = %d", id.MaxContext, show.int("context_length"), want)
	}
	if !id.Metrics.Empty() {
		t.Errorf("metrics = %+v, want none (Ollama has no Prometheus page)", id.Metrics)
	}
}

func TestOllamaRealStream(t *testing.T) {
	t.Parallel()
	url, _ := realOllama(t)
	const maxTokens = 32
	// Greedy decoding with a fixed seed, so that a second, non-streaming request generates
	// the same tokens and its usage can be compared with the streamed one.
	sampling := map[string]any{"temperature": 0, "seed": 42}
	c := NewClient(ClientOptions{BaseURL: url + "/v1", Model: realOllamaModel, ExtraBody: sampling})
	for _, api := range []string{APIChat, APICompletions} {
		t.Run(api, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			req := &Request{API: api, Model: realOllamaModel, Prompt: "Once upon a time", MaxTokens: maxTokens}
			var res Result
			c.Stream(ctx, req, &res)
			t.Logf("%s: status %d, chunks %d, output tokens %d (usage %v), prompt tokens %d, finish %q, TTFT %v, E2E %v, err %q %q",
				api, res.Status, res.Chunks, res.OutputTokens, res.UsageReported, res.PromptTokens, res.FinishReason,
				res.First-res.Send, res.Last-res.Send, res.ErrReason, res.ErrDetail)
			if !res.OK() {
				t.Fatalf("stream failed: %s: %s", res.ErrReason, res.ErrDetail)
			}
			if res.Chunks == 0 {
				t.Fatal("no content chunks")
			}
			if !res.UsageReported {
				t.Errorf("usage not reported in the stream (stream_options.include_usage ignored?)")
			}
			if res.OutputTokens < 1 || res.OutputTokens > maxTokens {
				t.Errorf("output tokens = %d, want 1..%d", res.OutputTokens, maxTokens)
			}
			if res.Chunks > res.OutputTokens {
				t.Errorf("chunks %d > output tokens %d: a chunk carries at least one token", res.Chunks, res.OutputTokens)
			}
			if res.FinishReason == "" {
				t.Error("no finish_reason")
			}
			if res.First <= res.Send {
				t.Errorf("TTFT = %v, want > 0", res.First-res.Send)
			}
			if res.Last < res.First || res.End < res.Last {
				t.Errorf("times out of order: send %v first %v last %v end %v", res.Send, res.First, res.Last, res.End)
			}
			if len(res.Gaps) != res.Chunks-1 {
				t.Errorf("%d gaps for %d chunks", len(res.Gaps), res.Chunks)
			}
			// Chunks read in one go share a timestamp, so gaps may be 0: at a thousand
			// tokens a second, a test process descheduled for 30 ms on a busy machine
			// reads the whole stream at once. None may be negative, and together they
			// span First..Last.
			var sum time.Duration
			zero := 0
			for _, g := range res.Gaps {
				if g < 0 {
					t.Errorf("negative gap %v", g)
				}
				if g == 0 {
					zero++
				}
				sum += g
			}
			if sum != res.Last-res.First {
				t.Errorf("gaps sum to %v, want Last-First = %v", sum, res.Last-res.First)
			}
			t.Logf("%d gaps, %d of them 0 (chunks read together), spanning %v", len(res.Gaps), zero, sum)

			// The same request without streaming: its usage is the server's own count.
			path, body := "/v1/completions", map[string]any{"model": realOllamaModel, "prompt": req.Prompt}
			if api == APIChat {
				path, body = "/v1/chat/completions", map[string]any{"model": realOllamaModel, "messages": []map[string]string{{"role": "user", "content": req.Prompt}}}
			}
			body["max_tokens"] = maxTokens
			for k, v := range sampling {
				body[k] = v
			}
			var plain struct {
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			data := rawCall(t, ctx, http.MethodPost, url+path, body)
			if err := json.Unmarshal(data, &plain); err != nil {
				t.Fatalf("non-streaming %s: %v", path, err)
			}
			t.Logf("non-streaming %s usage: %+v", path, plain.Usage)
			if res.UsageReported && res.OutputTokens != plain.Usage.CompletionTokens {
				t.Errorf("streamed output tokens %d, non-streaming usage says %d for the same greedy request", res.OutputTokens, plain.Usage.CompletionTokens)
			}
		})
	}
}
