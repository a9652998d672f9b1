package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// streamResult is what a test client saw on one request.
type streamResult struct {
	Status     int
	Body       []byte // non-streaming or error body
	Start      time.Time
	Times      []time.Time // arrival of each chunk carrying text
	Tokens     []int       // tokens in each such chunk (4 bytes each)
	Text       string
	Finish     string
	Usage      *usageJSON
	Role       bool // a role-only chat chunk came first
	Done       bool // data: [DONE]
	ErrorEvent bool
	Err        error // transport error while reading the body
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chunkJSON struct {
	Object  string `json:"object"`
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageJSON     `json:"usage"`
	Error map[string]any `json:"error"`
}

func (r *streamResult) OutputTokens() int { return len(r.Text) / BytesPerToken }

func (r *streamResult) TTFT() time.Duration {
	if len(r.Times) == 0 {
		return 0
	}
	return r.Times[0].Sub(r.Start)
}

// TPOT is (last − first) / (tokens − 1), the DESIGN's definition.
func (r *streamResult) TPOT() time.Duration {
	n := r.OutputTokens()
	if n < 2 || len(r.Times) < 2 {
		return 0
	}
	return r.Times[len(r.Times)-1].Sub(r.Times[0]) / time.Duration(n-1)
}

func (r *streamResult) MaxGap() time.Duration {
	var g time.Duration
	for i := 1; i < len(r.Times); i++ {
		g = max(g, r.Times[i].Sub(r.Times[i-1]))
	}
	return g
}

func (r *streamResult) E2E() time.Duration {
	if len(r.Times) == 0 {
		return 0
	}
	return r.Times[len(r.Times)-1].Sub(r.Start)
}

// req is a generation request body.
type req struct {
	Model         string           `json:"model"`
	Prompt        string           `json:"prompt,omitempty"`
	Messages      []ChatMessage    `json:"messages,omitempty"`
	MaxTokens     int              `json:"max_tokens,omitempty"`
	MinTokens     int              `json:"min_tokens,omitempty"`
	IgnoreEOS     bool             `json:"ignore_eos,omitempty"`
	Stream        bool             `json:"stream"`
	StreamOptions *map[string]bool `json:"stream_options,omitempty"`
}

func withUsage() *map[string]bool { m := map[string]bool{"include_usage": true}; return &m }

// post sends a generation request and reads the whole response, stream or not.
func post(ctx context.Context, c *http.Client, url string, body any) streamResult {
	b, _ := json.Marshal(body)
	var res streamResult
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		res.Err = err
		return res
	}
	hr.Header.Set("Content-Type", "application/json")
	res.Start = time.Now()
	resp, err := c.Do(hr)
	if err != nil {
		res.Err = err
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		res.Body, res.Err = io.ReadAll(resp.Body)
		return res
	}
	br := bufio.NewReader(resp.Body)
	var text strings.Builder
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err != io.EOF || !res.Done {
				res.Err = err
			}
			break
		}
		now := time.Now()
		line = bytes.TrimSpace(line)
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			res.Done = true
			continue
		}
		var ch chunkJSON
		if err := json.Unmarshal(data, &ch); err != nil {
			res.Err = err
			break
		}
		if ch.Error != nil {
			res.ErrorEvent = true
		}
		if ch.Usage != nil {
			res.Usage = ch.Usage
		}
		for _, c := range ch.Choices {
			var t string
			switch {
			case c.Text != nil:
				t = *c.Text
			case c.Delta != nil && c.Delta.Content != nil:
				t = *c.Delta.Content
				if c.Delta.Role == "assistant" && t == "" && len(res.Times) == 0 {
					res.Role = true
				}
			}
			if t != "" {
				text.WriteString(t)
				res.Times = append(res.Times, now)
				res.Tokens = append(res.Tokens, len(t)/BytesPerToken)
			}
			if c.FinishReason != nil {
				res.Finish = *c.FinishReason
			}
		}
	}
	res.Text = text.String()
	return res
}

func getJSON(t *testing.T, c *http.Client, url string, v any) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

func postJSON(t *testing.T, c *http.Client, url string, body, v any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := c.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
	}
	return resp.StatusCode
}
