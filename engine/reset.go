package engine

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// cacheResetEndpoint is the method and path that empties an engine's prefix cache, or ""
// when the engine offers none: vLLM POST /reset_prefix_cache (the simulator has it too;
// vLLM serves it only with VLLM_SERVER_DEV_MODE=1), SGLang POST /flush_cache.
func cacheResetEndpoint(engineName string) string {
	switch engineName {
	case EngineVLLM, EngineSim:
		return "/reset_prefix_cache"
	case EngineSGLang:
		return "/flush_cache"
	}
	return ""
}

// CacheResetEndpoint is "POST /path" where engineName offers a prefix-cache reset, else "".
func CacheResetEndpoint(engineName string) string {
	if p := cacheResetEndpoint(engineName); p != "" {
		return "POST " + p
	}
	return ""
}

// ResetPrefixCache empties the prefix cache of the engine at url. It returns the
// endpoint used, and an error saying why the cache was not reset: the engine offers no
// reset (endpoint ""), the endpoint is not served, or the engine refused (SGLang refuses
// while requests run). hc nil means http.DefaultClient.
func ResetPrefixCache(ctx context.Context, url, apiKey, engineName string, hc *http.Client) (string, error) {
	path := cacheResetEndpoint(engineName)
	if path == "" {
		return "", fmt.Errorf("%s offers no prefix-cache reset endpoint", engineName)
	}
	endpoint := "POST " + path
	if hc == nil {
		hc = http.DefaultClient
	}
	p := &prober{base: baseURL(url), apiKey: apiKey, http: hc, timeout: DefaultProbeTimeout}
	st, body, err := p.do(ctx, http.MethodPost, path, nil)
	switch {
	case err != nil:
		return endpoint, fmt.Errorf("%s: %v", endpoint, err)
	case st == http.StatusNotFound && engineName == EngineVLLM:
		return endpoint, fmt.Errorf("%s: 404 (vLLM serves it only with VLLM_SERVER_DEV_MODE=1)", endpoint)
	case st/100 != 2:
		return endpoint, fmt.Errorf("%s: HTTP %d: %s", endpoint, st, CleanText(strings.TrimSpace(string(body)), 200))
	}
	return endpoint, nil
}
