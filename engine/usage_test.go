package engine

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// An answer without generated text is an error with its own reason, however politely it
// ended.
func TestStreamEmptyAnswers(t *testing.T) {
	t.Parallel()
	role := `data: {"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`
	tests := []struct {
		name   string
		lines  []string
		detail string
	}{
		{"done after nothing", []string{"data: [DONE]"}, "ended with no chunk"},
		{"role chunk then done", []string{role, "data: [DONE]"}, "no generated text and no finish_reason"},
		{"empty texts then done", []string{`data: {"choices":[{"text":""}]}`, `data: {"choices":[{"text":""}]}`, "data: [DONE]"}, "after 2 chunks"},
		{"chunks without choices", []string{`data: {"id":"x","object":"chat.completion.chunk"}`, `data: {"id":"x","choices":[]}`, "data: [DONE]"}, "none of the 2 chunks carried choices"},
		{"finish with no text", []string{`data: {"choices":[{"text":"","finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":0}}`, "data: [DONE]"}, `finish_reason "stop" after no generated text`},
		{"finish with no text, no done", []string{`data: {"choices":[{"text":"","finish_reason":"length"}]}`}, `finish_reason "length"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) { sseBody(rw, tc.lines...) })
			res := stream(t, NewClient(ClientOptions{BaseURL: srv.URL}), plainReq)
			if res.ErrReason != ErrEmpty {
				t.Fatalf("reason %q (%s): an empty answer counted as %q", res.ErrReason, res.ErrDetail, res.ErrReason)
			}
			if !strings.Contains(res.ErrDetail, tc.detail) {
				t.Errorf("detail %q lacks %q", res.ErrDetail, tc.detail)
			}
			checkTimes(t, res)
		})
	}
}

// Usage that contradicts what was sent or seen is flagged and not used.
func TestStreamUsageChecks(t *testing.T) {
	t.Parallel()
	usage := func(prompt, completion string) string {
		return `data: {"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":` + prompt + `,"completion_tokens":` + completion + `}}`
	}
	tests := []struct {
		name           string
		usage          string
		prompt, output int
		flag           string // "" : not flagged
	}{
		{"believable", usage("4", "3"), 4, 3, ""},
		{"at max_tokens plus slack", usage("4", "36"), 4, 36, ""},
		{"10^12 output tokens", usage("4", "1000000000000"), 4, 3, "completion_tokens 1000000000000 > max_tokens 20 + 16: the chunk count 3 is used"},
		{"fewer tokens than chunks", usage("4", "2"), 4, 3, "completion_tokens 2 < 3 content chunks"},
		{"huge prompt count", usage("99999999", "3"), 0, 3, "prompt_tokens 99999999 for a prompt of 16 bytes"},
		{"zero prompt count", usage("0", "3"), 0, 3, "prompt_tokens 0 for a prompt of 16 bytes"},
		{"both wrong", usage("1e15", "1e15"), 0, 3, "the chunk count 3 is used; prompt_tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) { sseBody(rw, tok, tok, tok, tc.usage, "data: [DONE]") })
			var res Result
			NewClient(ClientOptions{BaseURL: srv.URL}).Stream(context.Background(), plainReq, &res)
			if !res.OK() {
				t.Fatalf("failed: %s %s", res.ErrReason, res.ErrDetail)
			}
			if res.PromptTokens != tc.prompt || res.OutputTokens != tc.output {
				t.Errorf("prompt %d output %d, want %d %d", res.PromptTokens, res.OutputTokens, tc.prompt, tc.output)
			}
			if (tc.flag == "") != (res.UsageFlag == "") || !strings.Contains(res.UsageFlag, tc.flag) {
				t.Errorf("flag %q, want %q", res.UsageFlag, tc.flag)
			}
		})
	}
}

// Per-chunk token counts come from a cumulative usage in every content chunk, and only
// then.
func TestStreamChunkTokens(t *testing.T) {
	t.Parallel()
	chunk := func(text string, completion int) string {
		return `data: {"choices":[{"text":"` + text + `","finish_reason":null}],"usage":{"prompt_tokens":4,"completion_tokens":` + strconv.Itoa(completion) + `}}`
	}
	end := `data: {"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":9}}`
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"continuous usage", []string{chunk("ab", 2), chunk("cde", 5), chunk("f", 6), chunk("ghi", 9), end, "data: [DONE]"}, "[2 3 1 3]"},
		{"one chunk without usage", []string{chunk("ab", 2), `data: {"choices":[{"text":"c","finish_reason":null}]}`, chunk("ghi", 9), end, "data: [DONE]"}, "[]"},
		{"all-zero usage objects (Ollama)", []string{chunk("ab", 0), chunk("c", 0), end, "data: [DONE]"}, "[]"},
		{"usage only at the end", []string{tok, tok, finish, "data: [DONE]"}, "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(rw http.ResponseWriter, r *http.Request) { sseBody(rw, tc.lines...) })
			res := stream(t, NewClient(ClientOptions{BaseURL: srv.URL}), plainReq)
			if !res.OK() {
				t.Fatalf("%s %s", res.ErrReason, res.ErrDetail)
			}
			if got := fmt.Sprint(res.ChunkTokens); got != tc.want {
				t.Errorf("chunk tokens %s, want %s", got, tc.want)
			}
		})
	}
}
