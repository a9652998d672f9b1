package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/slogate/slogate/internal/waittest"
)

// fakeEngine answers the given paths ("GET /version") with the given bodies; anything else
// is 404, as real engines answer endpoints they do not have.
func fakeEngine(t *testing.T, routes map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(body, "@") {
			data, err := os.ReadFile(body[1:])
			if err != nil {
				t.Errorf("fixture: %v", err)
			}
			body = string(data)
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const llama8b = "meta-llama/Llama-3.1-8B-Instruct"

func TestIdentifyEngines(t *testing.T) {
	t.Parallel()
	models := func(owned string, maxLen int) string {
		s := `{"object":"list","data":[{"id":"` + llama8b + `","object":"model","owned_by":"` + owned + `","root":"` + llama8b + `"`
		if maxLen > 0 {
			s += `,"max_model_len":` + itoa(maxLen)
		}
		return s + `}]}`
	}
	cases := []struct {
		name   string
		routes map[string]string
		forced string
		want   idFacts
		snap   Snapshot // expected scrape of the engine's metrics page
	}{
		{
			// vLLM after the kv_cache_usage_perc rename; capacity from cache_config_info.
			name: "vllm-new-names",
			routes: map[string]string{
				"GET /v1/models": models("vllm", 131072), "GET /version": `{"version":"0.11.0"}`,
				"GET /metrics": "@../testdata/engines/vllm_metrics_new.txt",
			},
			want: idFacts{Engine: "vllm", Version: "0.11.0", ModelID: llama8b, MaxContext: 131072, KVCapacityTokens: 27153 * 16, KVBlockSize: 16},
			snap: Snapshot{QueueDepth: Value{3, true}, Running: Value{12, true}, KVUsage: Value{0.42, true}, Preemptions: Value{7, true}, PrefixHits: Value{250, true}, PrefixQueries: Value{1000, true}},
		},
		{
			// vLLM before the rename: gpu_cache_usage_perc is read as KV usage.
			name: "vllm-old-names",
			routes: map[string]string{
				"GET /v1/models": models("vllm", 8192), "GET /version": `{"version":"0.6.3"}`,
				"GET /metrics": "@../testdata/engines/vllm_metrics_old.txt",
			},
			want: idFacts{Engine: "vllm", Version: "0.6.3", ModelID: llama8b, MaxContext: 8192, KVCapacityTokens: 27153 * 16, KVBlockSize: 16},
			snap: Snapshot{QueueDepth: Value{0, true}, Running: Value{5, true}, KVUsage: Value{0.17, true}, Preemptions: Value{0, true}},
		},
		{
			// SGLang: capacity from server_info's max_total_num_tokens, hit rate as a gauge.
			name: "sglang",
			routes: map[string]string{
				"GET /v1/models":       models("sglang", 0),
				"GET /get_server_info": `{"version":"0.4.6","max_total_num_tokens":412000,"context_length":131072,"page_size":1}`,
				"GET /metrics":         "@../testdata/engines/sglang_metrics.txt",
			},
			want: idFacts{Engine: "sglang", Version: "0.4.6", ModelID: llama8b, MaxContext: 131072, KVCapacityTokens: 412000, KVBlockSize: 1},
			snap: Snapshot{QueueDepth: Value{2, true}, Running: Value{9, true}, KVUsage: Value{0.31, true}, PrefixHitRate: Value{0.12, true}},
		},
		{
			// TGI is found by /info, which also carries the model sha.
			name: "tgi",
			routes: map[string]string{
				"GET /v1/models": `{"object":"list","data":[{"id":"tgi","object":"model","owned_by":""}]}`,
				"GET /info":      `{"model_id":"` + llama8b + `","model_sha":"0e9e39f249a16976918f6564b8830bc894c89659","version":"3.0.1","max_total_tokens":8192,"max_batch_total_tokens":150000}`,
				"GET /metrics":   "@../testdata/engines/tgi_metrics.txt",
			},
			want: idFacts{Engine: "tgi", Version: "3.0.1", ModelID: llama8b, ModelRevision: "0e9e39f249a16976918f6564b8830bc894c89659", MaxContext: 8192, KVCapacityTokens: 150000, KVBlockSize: 1},
			snap: Snapshot{QueueDepth: Value{6, true}, Running: Value{24, true}},
		},
		{
			// TensorRT-LLM: metrics under /prometheus/metrics; capacity = blocks × tokens per block.
			name: "trtllm",
			routes: map[string]string{
				"GET /v1/models": models("tensorrt_llm", 0), "GET /version": `{"version":"0.21.0"}`,
				"GET /prometheus/metrics": "@../testdata/engines/trtllm_metrics.txt",
			},
			want: idFacts{Engine: "trtllm", Version: "0.21.0", ModelID: llama8b, KVCapacityTokens: 8000 * 32, KVBlockSize: 32},
			snap: Snapshot{QueueDepth: Value{4, true}, Running: Value{30, true}, KVUsage: Value{0.55, true}},
		},
		{
			// llama.cpp: the real captured metrics page; n_ctx is per slot, the context of
			// one request. The server does not say whether its slots share one cache: the
			// shared one (the smaller) is taken. No KV-usage gauge; prefix-cache figures
			// from the prompt-token counters (51 computed, 0 cached).
			name: "llamacpp",
			routes: map[string]string{
				"GET /v1/models": models("llamacpp", 0),
				"GET /props":     `{"build_info":"b1-de3ff81","total_slots":4,"model_path":"stories260K.gguf","default_generation_settings":{"n_ctx":512}}`,
				"GET /metrics":   "@../testdata/engines/llamacpp_metrics.txt",
			},
			want: idFacts{Engine: "llamacpp", Version: "b1-de3ff81", ModelID: llama8b, MaxContext: 512, KVCapacityTokens: 512, KVBlockSize: 1, Slots: 4},
			snap: Snapshot{QueueDepth: Value{0, true}, Running: Value{0, true}, PrefixHits: Value{0, true}, PrefixQueries: Value{51, true},
				PromptTokens: Value{51, true}, PromptTokensCached: Value{0, true}, OutputTokens: Value{40, true}},
		},
		{
			// Ollama: no metrics; KV capacity derived from /api/show and the parallelism.
			name: "ollama",
			routes: map[string]string{
				"GET /v1/models":   `{"object":"list","data":[{"id":"stories260k:latest","object":"model","owned_by":"library"}]}`,
				"GET /api/version": `{"version":"0.6.5"}`,
				"POST /api/show":   `{"parameters":"num_ctx                        2048","model_info":{"general.architecture":"llama","llama.block_count":5,"llama.attention.head_count":8,"llama.attention.head_count_kv":4,"llama.embedding_length":64,"llama.context_length":2048}}`,
			},
			want: idFacts{Engine: "ollama", Version: "0.6.5", ModelID: "stories260k:latest", MaxContext: 2048, KVCapacityTokens: 2048 * 2, KVBlockSize: 1, KVBytesPerToken: 2 * 5 * 4 * 8 * 2, Slots: 2},
		},
		{
			// A plain OpenAI-compatible server: nothing but the model list.
			name:   "generic",
			routes: map[string]string{"GET /v1/models": models("someone", 0)},
			want:   idFacts{Engine: "openai", Version: "unknown", ModelID: llama8b},
		},
		{
			// A forced engine skips detection even when owned_by says otherwise.
			name:   "forced",
			forced: "vllm",
			routes: map[string]string{"GET /v1/models": models("someone", 0), "GET /version": `{"version":"0.8.0"}`},
			want:   idFacts{Engine: "vllm", Version: "0.8.0", ModelID: llama8b},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := fakeEngine(t, tc.routes)
			model := llama8b
			if tc.name == "ollama" {
				model = "stories260k"
			}
			id, err := Identify(context.Background(), IdentifyOptions{BaseURL: url + "/v1/", Engine: tc.forced, Model: model, Parallel: 2})
			if err != nil {
				t.Fatal(err)
			}
			got := idFacts{Engine: id.Engine, Version: id.Version, ModelID: id.ModelID, ModelRevision: id.ModelRevision, MaxContext: id.MaxContext,
				KVCapacityTokens: id.KVCapacityTokens, KVBlockSize: id.KVBlockSize, KVBytesPerToken: id.KVBytesPerToken, Slots: id.Slots}
			if got != tc.want {
				t.Errorf("identity\n got %+v\nwant %+v", got, tc.want)
			}
			if tc.want.KVCapacityTokens > 0 && id.KVSource == "" {
				t.Error("KV capacity without a source")
			}
			if id.Metrics.Empty() {
				if !reflect.DeepEqual(tc.snap, Snapshot{}) {
					t.Fatal("no metric set")
				}
				if !hasNote(id.Notes, "no server-side metrics") {
					t.Errorf("notes %q: want the no-metrics note", id.Notes)
				}
				return
			}
			s := &Scraper{URL: url + id.Metrics.Path, Set: id.Metrics}
			snap, err := s.Scrape(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(snap, tc.snap) {
				t.Errorf("snapshot\n got %+v\nwant %+v", snap, tc.snap)
			}
		})
	}
}

func TestIdentifyUnreachable(t *testing.T) {
	t.Parallel()
	addr := waittest.HoldPort(t)
	_, err := Identify(context.Background(), IdentifyOptions{BaseURL: "http://" + addr})
	if err == nil || !strings.Contains(err.Error(), "engine unreachable") {
		t.Fatalf("err = %v, want engine unreachable", err)
	}
}

func TestVersionTextIsUntrusted(t *testing.T) {
	t.Parallel()
	// A hostile or broken engine: control characters, a bidi override, and 10 kB of text.
	long := strings.Repeat("A", 10000)
	url := fakeEngine(t, map[string]string{
		"GET /v1/models": `{"data":[{"id":"m\u0007odel\n[x](http://e)","owned_by":"vllm"}]}`,
		"GET /version":   `{"version":"1.0\u001b[31m\r\n\u202e@everyone ` + long + `"}`,
	})
	id, err := Identify(context.Background(), IdentifyOptions{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(id.Version, "\x1b\r\n\u202e") || strings.ContainsAny(id.ModelID, "\x07\n") {
		t.Errorf("control characters kept: %q %q", id.Version, id.ModelID)
	}
	if n := len([]rune(id.Version)); n > maxVersionText+1 {
		t.Errorf("version is %d runes, want at most %d", n, maxVersionText+1)
	}
	if !strings.HasPrefix(id.Version, "1.0[31m @everyone AAA") || !strings.HasSuffix(id.Version, "…") {
		t.Errorf("version %q", id.Version[:40])
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"0.6.5", "0.6.5"},         // ordinary text untouched
		{"  a \t\n b  ", "a b"},    // whitespace collapsed and trimmed
		{"a\x00b\x7fc", "abc"},     // C0 and DEL dropped
		{"x\u200by\u2066z", "xyz"}, // zero-width and bidi isolates dropped
		{"abcdef", "abc…"},         // capped
		{"héllo wörld", "hél…"},    // capped in runes, not bytes
	}
	for _, c := range cases {
		max := 100
		if strings.HasSuffix(c.want, "…") {
			max = 3
		}
		if got := CleanText(c.in, max); got != c.want {
			t.Errorf("CleanText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func hasNote(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

// idFacts are the comparable facts of an Identity.
type idFacts struct {
	Engine, Version, ModelID, ModelRevision string
	MaxContext                              int
	KVCapacityTokens                        int64
	KVBlockSize                             int
	KVBytesPerToken                         int64
	Slots                                   int
}

// TestLlamaCppKVSharing: llama.cpp's KV capacity follows what its slots really share. With
// -np 4 -c 2048 each of the 4 slots owns 512 tokens (2,048 in all); without -np the server
// runs 4 slots over one unified 2,048-token cache, and /props then says n_ctx 2048 per
// slot, which n_ctx × slots turned into 8,192.
func TestLlamaCppKVSharing(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		name         string
		nCtx         int
		unified      *bool
		wantCap      int64
		wantNote     bool
		sourceSubstr string
	}{
		{"np4-per-slot", 512, &no, 2048, false, "512 per slot × total_slots 4"},
		{"no-np-unified", 2048, &yes, 2048, false, "shared by total_slots 4"},
		{"no-np-undeclared", 2048, nil, 2048, true, "shared by total_slots 4"},
		{"np4-undeclared", 512, nil, 512, true, "shared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := fakeEngine(t, map[string]string{
				"GET /v1/models": `{"object":"list","data":[{"id":"stories260K.gguf","object":"model","owned_by":"llamacpp"}]}`,
				"GET /props":     `{"build_info":"b1-de3ff81","total_slots":4,"default_generation_settings":{"n_ctx":` + itoa(tc.nCtx) + `}}`,
				"GET /metrics":   "@../testdata/engines/llamacpp_metrics.txt",
			})
			id, err := Identify(context.Background(), IdentifyOptions{BaseURL: url, KVUnified: tc.unified})
			if err != nil {
				t.Fatal(err)
			}
			if id.KVCapacityTokens != tc.wantCap || id.Slots != 4 || id.MaxContext != tc.nCtx {
				t.Errorf("capacity %d, slots %d, context %d; want %d, 4, %d", id.KVCapacityTokens, id.Slots, id.MaxContext, tc.wantCap, tc.nCtx)
			}
			if !strings.Contains(id.KVSource, tc.sourceSubstr) {
				t.Errorf("KV source %q lacks %q", id.KVSource, tc.sourceSubstr)
			}
			if got := hasNote(id.Notes, "does not say whether its 4 slots share one KV cache"); got != tc.wantNote {
				t.Errorf("undeclared-sharing note %v, want %v (notes %q)", got, tc.wantNote, id.Notes)
			}
			if !strings.Contains(id.ContextSource, "n_ctx") {
				t.Errorf("context source %q", id.ContextSource)
			}
			// The real build has no KV-usage gauge: the identity says so.
			if !hasNote(id.Notes, "exports no KV usage (llamacpp:kv_cache_usage_ratio)") {
				t.Errorf("notes %q: want the absent KV-usage gauge named", id.Notes)
			}
		})
	}
}
