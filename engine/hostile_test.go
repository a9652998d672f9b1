package engine

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A server that streams a million one-character chunks for max_tokens 8 is cut at the
// request's chunk bound: the result keeps a bounded number of chunks and gaps, and the
// overrun is an error of its own.
func TestStreamChunkOverrun(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		w := bufio.NewWriter(rw)
		for range 1_200_000 {
			if _, err := w.WriteString(tok + "\n\n"); err != nil {
				return // the client cut the stream
			}
		}
		w.WriteString(finish + "\n\ndata: [DONE]\n\n")
		w.Flush()
	})
	var res Result
	req := *plainReq
	req.MaxTokens = 8
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	NewClient(ClientOptions{BaseURL: srv.URL}).Stream(ctx, &req, &res)
	limit := MaxChunks(8)
	if res.ErrReason != ErrOverrun {
		t.Fatalf("reason %q (%s), want %q", res.ErrReason, res.ErrDetail, ErrOverrun)
	}
	if res.Chunks > limit+1 || len(res.Gaps) > limit || res.OutputTokens > limit+1 {
		t.Errorf("chunks %d gaps %d output tokens %d: over the bound %d", res.Chunks, len(res.Gaps), res.OutputTokens, limit)
	}
	if !strings.Contains(res.ErrDetail, fmt.Sprint(limit)) {
		t.Errorf("detail %q does not state the bound", res.ErrDetail)
	}
	// A request without max_tokens has no bound to apply.
	if MaxChunks(0) != 0 {
		t.Errorf("MaxChunks(0) = %d", MaxChunks(0))
	}
}

// An engine that sends its response headers and dies is a disconnect, not a malformed
// answer.
func TestStreamDiesAfterHeaders(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
		conn, buf, err := rw.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
		buf.Flush()
		conn.Close()
	})
	var res Result
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	NewClient(ClientOptions{BaseURL: srv.URL}).Stream(ctx, plainReq, &res)
	if res.ErrReason != ErrDisconnect {
		t.Fatalf("reason %q (%s), want %q", res.ErrReason, res.ErrDetail, ErrDisconnect)
	}
}

// KV capacity factors from a broken or hostile page never wrap around to a negative
// capacity: the product is checked, and the capacity left unknown with a note.
func TestKVCapacityOverflow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, engine string
		h            http.HandlerFunc
		unified      *bool
	}{
		{"vllm blocks near 2^63", EngineVLLM, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/v1/models":
				fmt.Fprint(w, `{"data":[{"id":"m","owned_by":"vllm"}]}`)
			case "/metrics":
				fmt.Fprint(w, "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"9223372036854775000\"} 1\n")
			default:
				http.NotFound(w, r)
			}
		}, nil},
		{"trtllm blocks as a huge float", EngineTRTLLM, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/v1/models":
				fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			case "/prometheus/metrics":
				fmt.Fprint(w, "trtllm_kv_cache_max_blocks 1e30\ntrtllm_kv_cache_tokens_per_block 64\n")
			default:
				http.NotFound(w, r)
			}
		}, nil},
		{"llama.cpp n_ctx × slots", EngineLlamaCpp, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/v1/models":
				fmt.Fprint(w, `{"data":[{"id":"m","owned_by":"llamacpp"}]}`)
			case "/props":
				fmt.Fprint(w, `{"total_slots":4611686018427387904,"default_generation_settings":{"n_ctx":4096}}`)
			default:
				http.NotFound(w, r)
			}
		}, new(bool)}, // slots with their own caches: n_ctx × slots
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, c.h)
			id, err := Identify(context.Background(), IdentifyOptions{BaseURL: srv.URL, Engine: c.engine, KVUnified: c.unified})
			if err != nil {
				t.Fatal(err)
			}
			if id.KVCapacityTokens != 0 || !strings.Contains(strings.Join(id.Notes, "\n"), "out of range") {
				t.Errorf("kv_capacity_tokens %d, notes %q: want 0 and an out-of-range note", id.KVCapacityTokens, id.Notes)
			}
		})
	}
}
