package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The endpoints that put an engine aside and bring it back without a restart, as read
// from the engines' source (docs/swap.md; fixtures under testdata/engines/):
//
//   - vLLM: POST /sleep?level=N and POST /wake_up (200, empty body, once done),
//     GET /is_sleeping → {"is_sleeping": bool}. The routes exist only when the server
//     runs with VLLM_SERVER_DEV_MODE=1 (404 otherwise), and the sleep frees memory only
//     with --enable-sleep-mode.
//   - SGLang: POST /release_memory_occupation and /resume_memory_occupation (body {}:
//     every tag), 200 and a JSON null. Without --enable-memory-saver both are accepted and
//     do nothing, so the memory saver is checked in GET /server_info (older
//     /get_server_info), whose enable_memory_saver is the server argument.

// SwapUnsupportedError says that the server refuses a way of putting it aside that the
// config declares: Endpoint is what was called, Need what the server must be started
// with. It is the config's or the deployment's to fix, before anything is measured.
type SwapUnsupportedError struct {
	URL      string
	Endpoint string // e.g. "GET /is_sleeping"
	Need     string // e.g. "--enable-sleep-mode and VLLM_SERVER_DEV_MODE=1"
	Detail   string // what the server answered
}

func (e *SwapUnsupportedError) Error() string {
	return fmt.Sprintf("%s (%s): %s: the server must run with %s", e.URL, e.Endpoint, e.Detail, e.Need)
}

// Needs of each mode, as the error says them.
const (
	needSleep       = "--enable-sleep-mode and VLLM_SERVER_DEV_MODE=1 (the sleep endpoints are development endpoints)"
	needMemorySaver = "--enable-memory-saver (without it SGLang accepts a release and frees nothing)"
)

// SwapClient calls an engine's sleep and memory-release endpoints.
type SwapClient struct {
	BaseURL string
	APIKey  string
	HTTP    *http.Client // nil: http.DefaultClient
}

func (c *SwapClient) prober(timeout time.Duration) *prober {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	return &prober{base: baseURL(c.BaseURL), apiKey: c.APIKey, http: hc, timeout: timeout}
}

// call sends method path and returns the body of a 2xx answer. A 4xx (the route is not
// served, the flag is missing) is a SwapUnsupportedError naming need; anything else, an
// engine failure.
func (c *SwapClient) call(ctx context.Context, timeout time.Duration, method, path string, body any, need string) ([]byte, error) {
	endpoint := method + " " + path
	st, data, err := c.prober(timeout).do(ctx, method, path, body)
	switch {
	case err != nil && errors.Is(err, ErrStalled):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: %s%s: %v", ErrUnreachable, baseURL(c.BaseURL), endpoint, err)
	case st/100 == 4:
		detail := fmt.Sprintf("HTTP %d", st)
		if text := CleanText(strings.TrimSpace(string(data)), 200); text != "" {
			detail += " " + strconv.Quote(text)
		}
		return nil, &SwapUnsupportedError{URL: baseURL(c.BaseURL), Endpoint: endpoint, Need: need, Detail: detail}
	case st/100 != 2:
		return nil, fmt.Errorf("%s%s: HTTP %d: %s", baseURL(c.BaseURL), endpoint, st, CleanText(strings.TrimSpace(string(data)), 200))
	}
	return data, nil
}

// IsSleeping asks vLLM's GET /is_sleeping.
func (c *SwapClient) IsSleeping(ctx context.Context) (bool, error) {
	data, err := c.call(ctx, 0, http.MethodGet, "/is_sleeping", nil, needSleep)
	if err != nil {
		return false, err
	}
	var v struct {
		IsSleeping *bool `json:"is_sleeping"`
	}
	if json.Unmarshal(data, &v) != nil || v.IsSleeping == nil {
		return false, fmt.Errorf("%s (GET /is_sleeping): expected {\"is_sleeping\": true|false}, got %q", baseURL(c.BaseURL), CleanText(string(data), 200))
	}
	return *v.IsSleeping, nil
}

// Sleep is vLLM's POST /sleep?level=N; it returns once the server answers, within timeout.
func (c *SwapClient) Sleep(ctx context.Context, level int, timeout time.Duration) error {
	_, err := c.call(ctx, timeout, http.MethodPost, "/sleep?level="+strconv.Itoa(level), nil, needSleep)
	return err
}

// WakeUp is vLLM's POST /wake_up (every tag: weights and KV cache), within timeout.
func (c *SwapClient) WakeUp(ctx context.Context, timeout time.Duration) error {
	_, err := c.call(ctx, timeout, http.MethodPost, "/wake_up", nil, needSleep)
	return err
}

// MemorySaver checks that SGLang runs with --enable-memory-saver, from its server
// arguments (GET /server_info, else the older GET /get_server_info).
func (c *SwapClient) MemorySaver(ctx context.Context) error {
	p := c.prober(0)
	for _, path := range []string{"/server_info", "/get_server_info"} {
		var v map[string]any
		if !p.getJSON(ctx, path, &v) {
			if p.stall != nil {
				return p.stall
			}
			continue
		}
		if on, _ := v["enable_memory_saver"].(bool); !on {
			return &SwapUnsupportedError{URL: baseURL(c.BaseURL), Endpoint: "GET " + path, Need: needMemorySaver, Detail: fmt.Sprintf("enable_memory_saver is %v", v["enable_memory_saver"])}
		}
		return nil
	}
	return &SwapUnsupportedError{URL: baseURL(c.BaseURL), Endpoint: "GET /server_info, GET /get_server_info", Need: needMemorySaver, Detail: "neither answers with the server's arguments, so the memory saver cannot be confirmed"}
}

// ReleaseMemory is SGLang's POST /release_memory_occupation of every tag, within timeout.
func (c *SwapClient) ReleaseMemory(ctx context.Context, timeout time.Duration) error {
	_, err := c.call(ctx, timeout, http.MethodPost, "/release_memory_occupation", map[string]any{}, needMemorySaver)
	return err
}

// ResumeMemory is SGLang's POST /resume_memory_occupation of every tag, within timeout.
func (c *SwapClient) ResumeMemory(ctx context.Context, timeout time.Duration) error {
	_, err := c.call(ctx, timeout, http.MethodPost, "/resume_memory_occupation", map[string]any{}, needMemorySaver)
	return err
}
