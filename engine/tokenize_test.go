package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slogate/slogate/internal/waittest"
)

// vllmTokenize answers like vLLM: {"model","prompt"} -> {"count", "max_model_len", "tokens"};
// a request without a prompt is a 400 (pydantic validation).
func vllmTokenize(rw http.ResponseWriter, r *http.Request) {
	var in struct {
		Model  string  `json:"model"`
		Prompt *string `json:"prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Prompt == nil || in.Model != "m" {
		http.Error(rw, `{"object":"error","message":"Field required","type":"BadRequestError","code":400}`, http.StatusBadRequest)
		return
	}
	words := strings.Fields(*in.Prompt)
	toks := make([]int, len(words))
	json.NewEncoder(rw).Encode(map[string]any{"count": len(words), "max_model_len": 8192, "tokens": toks})
}

// llamaTokenize answers like llama.cpp's server: {"content"} -> {"tokens"}; a request
// without content gets 200 and no tokens, which is what the real server does.
func llamaTokenize(rw http.ResponseWriter, r *http.Request) {
	var in struct {
		Content *string `json:"content"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(rw, "bad json", http.StatusInternalServerError)
		return
	}
	toks := []int{}
	if in.Content != nil {
		for range strings.Fields(*in.Content) {
			toks = append(toks, 42)
		}
	}
	json.NewEncoder(rw).Encode(map[string]any{"tokens": toks})
}

func TestCountTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		want     int
		noTok    bool  // the error wraps ErrNoTokenizer
		requests int32 // requests for two calls: the shape is remembered
	}{
		// vLLM and SGLang: the first shape works.
		{name: "vllm", handler: vllmTokenize, want: 4, requests: 2},
		// llama.cpp: the first shape gets 200 without tokens, the second works; the
		// second call goes straight to it.
		{name: "llama.cpp", handler: llamaTokenize, want: 4, requests: 3},
		// A llama.cpp build that rejects the first shape outright.
		{name: "llama.cpp rejecting", handler: func(rw http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(b), `"content"`) {
				http.Error(rw, "missing content", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			llamaTokenize(rw, r)
		}, want: 4, requests: 3},
		// Ollama, TGI: no /tokenize at all. Not remembered (a loading engine answers
		// 503 to both), so each call tries both shapes.
		{name: "none", handler: http.NotFound, noTok: true, requests: 4},
		// An endpoint that answers 200 with something else is a plain error.
		{name: "wrong answer", handler: func(rw http.ResponseWriter, r *http.Request) {
			io.WriteString(rw, `{"ids":[1,2]}`)
		}, requests: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if r.URL.Path != "/tokenize" || r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer k" {
					http.Error(rw, "wrong request "+r.Method+" "+r.URL.Path, http.StatusTeapot)
					return
				}
				tc.handler(rw, r)
			})
			c := NewClient(ClientOptions{BaseURL: srv.URL + "/v1", Model: "m", APIKey: "k"})
			for call := 0; call < 2; call++ {
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				got, err := c.CountTokens(ctx, "Once upon a time")
				cancel()
				wantErr := tc.noTok || tc.want == 0
				if (err != nil) != wantErr || got != tc.want {
					t.Fatalf("call %d: %d, %v; want %d (error %v)", call, got, err, tc.want, wantErr)
				}
				if errors.Is(err, ErrNoTokenizer) != tc.noTok {
					t.Errorf("call %d: %v: wraps ErrNoTokenizer %v, want %v", call, err, !tc.noTok, tc.noTok)
				}
			}
			if got := n.Load(); got != tc.requests {
				t.Errorf("%d requests for two calls, want %d", got, tc.requests)
			}
		})
	}
}

// A connection failure is not "no tokenizer": the caller must not silently estimate.
func TestCountTokensUnreachable(t *testing.T) {
	t.Parallel()
	addr := waittest.HoldPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err := NewClient(ClientOptions{BaseURL: "http://" + addr, APIKey: "sk-secret"}).CountTokens(ctx, "x")
	if err == nil || errors.Is(err, ErrNoTokenizer) || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("error %v", err)
	}
}

// A tokenize endpoint that takes the request and never answers fails within the call's
// own deadline, naming the endpoint, even when the caller's context has none.
func TestCountTokensStalled(t *testing.T) {
	// It shortens tokenizeTimeout: not parallel, so it runs and puts it back before any
	// parallel test starts.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	old := tokenizeTimeout
	tokenizeTimeout = 200 * time.Millisecond
	defer func() { tokenizeTimeout = old }()
	start := time.Now()
	_, err := NewClient(ClientOptions{BaseURL: srv.URL, Model: "m"}).CountTokens(context.Background(), "hello")
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), srv.URL+"/tokenize") {
		t.Fatalf("err %v, want ErrStalled naming the endpoint", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s", el)
	}
}
