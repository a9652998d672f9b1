package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestResetPrefixCache(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/reset_prefix_cache":
			w.WriteHeader(http.StatusOK)
		case "/flush_cache":
			http.Error(w, "Cache not flushed because there are pending requests.", http.StatusBadRequest)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, c := range []struct {
		engine, url, endpoint, err string
	}{
		{EngineVLLM, srv.URL + "/v1", "POST /reset_prefix_cache", ""},
		{EngineSim, srv.URL, "POST /reset_prefix_cache", ""},
		// SGLang refuses while requests run: the reason is kept.
		{EngineSGLang, srv.URL, "POST /flush_cache", "HTTP 400: Cache not flushed because there are pending requests."},
		{EngineOllama, srv.URL, "", "offers no prefix-cache reset"},
	} {
		ep, err := ResetPrefixCache(ctx, c.url, "k", c.engine, srv.Client())
		if ep != c.endpoint || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: endpoint %q, error %v; want %q and %q", c.engine, ep, err, c.endpoint, c.err)
		}
	}
	if got[0] != "POST /reset_prefix_cache Bearer k" {
		t.Errorf("first call %q: want the POST with the API key, under the base URL without /v1", got[0])
	}
	// vLLM without VLLM_SERVER_DEV_MODE has no such route: the error says why.
	srv404 := httptest.NewServer(http.NotFoundHandler())
	defer srv404.Close()
	if _, err := ResetPrefixCache(ctx, srv404.URL, "", EngineVLLM, nil); err == nil || !strings.Contains(err.Error(), "VLLM_SERVER_DEV_MODE=1") {
		t.Errorf("vLLM 404: %v", err)
	}
}
