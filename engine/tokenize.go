package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// tokenizeTimeout bounds one tokenize call, answer included: an engine that accepts the
// request and never answers stalls calibration, not the run forever.
var tokenizeTimeout = DefaultProbeTimeout

// ErrNoTokenizer means the engine answers neither vLLM's nor llama.cpp's tokenize
// request (Ollama, TGI, most hosted APIs): the caller estimates lengths instead.
var ErrNoTokenizer = errors.New("engine has no tokenize endpoint")

// Request shapes of POST /tokenize, remembered once one works.
const (
	shapeUnknown  int32 = iota
	shapeVLLM           // {"model": M, "prompt": text} -> {"count": n, "tokens": [...]}
	shapeLlamaCpp       // {"content": text} -> {"tokens": [...]}
)

// CountTokens counts the tokens of text with the engine's own tokenizer (POST
// /tokenize). It tries vLLM's request shape (also SGLang's), then llama.cpp's, and
// remembers the one the engine answered. An engine that answers neither gives an
// error wrapping ErrNoTokenizer; a connection or decoding failure is a plain error.
func (c *Client) CountTokens(ctx context.Context, text string) (int, error) {
	switch c.tokShape.Load() {
	case shapeVLLM:
		n, _, err := c.tokenize(ctx, shapeVLLM, text)
		return n, err
	case shapeLlamaCpp:
		n, _, err := c.tokenize(ctx, shapeLlamaCpp, text)
		return n, err
	}
	n, miss1, err := c.tokenize(ctx, shapeVLLM, text)
	if err == nil {
		c.tokShape.Store(shapeVLLM)
		return n, nil
	}
	if miss1 == "" {
		return 0, err
	}
	n, miss2, err := c.tokenize(ctx, shapeLlamaCpp, text)
	if err == nil {
		c.tokShape.Store(shapeLlamaCpp)
		return n, nil
	}
	if miss2 == "" {
		return 0, err
	}
	// Not remembered: an engine still loading answers 503 to both.
	return 0, fmt.Errorf("POST %s: vLLM shape: %s; llama.cpp shape: %s: %w", c.tokenizeURL, miss1, miss2, ErrNoTokenizer)
}

// tokenize sends one request of the given shape. miss is non-empty (and err non-nil)
// when the engine did not understand that shape, so another may be tried.
func (c *Client) tokenize(ctx context.Context, shape int32, text string) (n int, miss string, err error) {
	body := make([]byte, 0, len(text)+len(c.model)+32)
	if shape == shapeVLLM {
		body = append(body, `{"model":`...)
		body = appendJSONString(body, c.model)
		body = append(body, `,"prompt":`...)
	} else {
		body = append(body, `{"content":`...)
	}
	body = appendJSONString(body, text)
	body = append(body, '}')
	b, miss, err := c.post(ctx, c.tokenizeURL, body)
	if err != nil {
		return 0, miss, err
	}
	n, miss, err = parseTokenizeAnswer(b, shape, text)
	if err != nil {
		return 0, miss, fmt.Errorf("POST %s: %w", c.tokenizeURL, err)
	}
	return n, "", nil
}

// post sends one JSON request to one of the engine's helper endpoints (tokenize, apply
// template), bounded by tokenizeTimeout, and returns the 2xx answer. miss is non-empty
// (and err non-nil) when the engine answered 4xx or more: it has no such endpoint or did
// not understand the request's shape.
func (c *Client) post(ctx context.Context, url string, body []byte) (answer []byte, miss string, err error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, tokenizeTimeout)
	defer cancel()
	stalled := func(what string, err error) error {
		if parent.Err() == nil && ctx.Err() != nil {
			return fmt.Errorf("%w: POST %s gave no complete answer within %s", ErrStalled, url, tokenizeTimeout)
		}
		return fmt.Errorf("POST %s: %s%s", url, what, c.detail(err.Error()))
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	hr.Header["Content-Type"] = jsonContentType
	if c.auth != nil {
		hr.Header["Authorization"] = c.auth
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, "", stalled("", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, "", stalled("reading the answer: ", err)
	}
	if int64(len(b)) > c.maxBody {
		return nil, "", fmt.Errorf("POST %s: answer over %d bytes", url, c.maxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := "HTTP " + strconv.Itoa(resp.StatusCode)
		if d := c.detail(string(b[:min(len(b), 200+len(c.apiKey))])); d != "" {
			msg += " " + stripDetail(d, 200)
		}
		err = fmt.Errorf("POST %s: %s", url, msg)
		if resp.StatusCode >= 400 {
			return nil, msg, err
		}
		return nil, "", err
	}
	return b, "", nil
}

// PromptTokenIDs returns the token ids the engine makes of one request's prompt, as its
// serving path does: a completions prompt tokenized with the special tokens the engine
// adds (BOS), a chat prompt as one user message rendered through the engine's chat
// template with the assistant's header after it. vLLM (and SGLang) render a chat prompt
// in POST /tokenize itself; llama.cpp's server renders it with POST /apply-template and
// tokenizes the result. An engine with neither gives an error wrapping ErrNoTokenizer.
func (c *Client) PromptTokenIDs(ctx context.Context, api, prompt string) ([]int, error) {
	if c.tokShape.Load() == shapeUnknown {
		if _, err := c.CountTokens(ctx, "a"); err != nil {
			return nil, err
		}
	}
	shape := c.tokShape.Load()
	var body []byte
	switch {
	case shape == shapeVLLM && api == APIChat:
		body = append(body, `{"model":`...)
		body = appendJSONString(body, c.model)
		body = append(body, `,"messages":[{"role":"user","content":`...)
		body = appendJSONString(body, prompt)
		body = append(body, `}],"add_generation_prompt":true}`...)
	case shape == shapeVLLM:
		body = append(body, `{"model":`...)
		body = appendJSONString(body, c.model)
		body = append(body, `,"prompt":`...)
		body = appendJSONString(body, prompt)
		body = append(body, `,"add_special_tokens":true}`...)
	default:
		text := prompt
		if api == APIChat {
			tb := append([]byte(`{"messages":[{"role":"user","content":`), appendJSONString(nil, prompt)...)
			tb = append(tb, "}]}"...)
			b, err := c.postHelper(ctx, c.applyTemplateURL, tb)
			if err != nil {
				return nil, err
			}
			var out struct {
				Prompt *string `json:"prompt"`
			}
			if err := json.Unmarshal(b, &out); err != nil || out.Prompt == nil {
				return nil, fmt.Errorf("POST %s: the answer has no \"prompt\" string: %s", c.applyTemplateURL, stripDetail(string(b[:min(len(b), 200)]), 200))
			}
			text = *out.Prompt
		}
		body = append(body, `{"content":`...)
		body = appendJSONString(body, text)
		body = append(body, `,"add_special":true,"parse_special":true}`...)
	}
	b, err := c.postHelper(ctx, c.tokenizeURL, body)
	if err != nil {
		return nil, err
	}
	ids, err := parseTokenIDs(b)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", c.tokenizeURL, err)
	}
	return ids, nil
}

// postHelper is post for PromptTokenIDs: an endpoint the engine does not have (or a
// request shape it refuses) is ErrNoTokenizer.
func (c *Client) postHelper(ctx context.Context, url string, body []byte) ([]byte, error) {
	b, miss, err := c.post(ctx, url, body)
	if err != nil && miss != "" {
		err = fmt.Errorf("%w: %v", ErrNoTokenizer, err)
	}
	return b, err
}

// parseTokenIDs reads the ids of a tokenize answer: {"tokens": [ids]}, or llama.cpp's
// {"tokens": [{"id": n, "piece": ...}]} when pieces were asked for.
func parseTokenIDs(b []byte) ([]int, error) {
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding the answer: %v", err)
	}
	if out.Tokens == nil {
		return nil, errors.New("the answer has no token ids")
	}
	ids := make([]int, len(out.Tokens))
	for i, raw := range out.Tokens {
		if err := json.Unmarshal(raw, &ids[i]); err == nil {
			continue
		}
		var piece struct {
			ID *int `json:"id"`
		}
		if err := json.Unmarshal(raw, &piece); err != nil || piece.ID == nil {
			return nil, fmt.Errorf("token %d of the answer is %s, not an id", i, stripDetail(string(raw), 40))
		}
		ids[i] = *piece.ID
	}
	return ids, nil
}

// parseTokenizeAnswer reads a 2xx tokenize answer of the given request shape. miss is
// non-empty when the answer shows the engine did not understand that shape.
func parseTokenizeAnswer(b []byte, shape int32, text string) (n int, miss string, err error) {
	var out struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, "", fmt.Errorf("decoding the answer: %v", err)
	}
	switch {
	case out.Count != nil && *out.Count < 0:
		return 0, "", fmt.Errorf("the answer counts %d tokens", *out.Count)
	case out.Count != nil:
		return *out.Count, "", nil
	case shape == shapeVLLM && out.Tokens != nil && len(out.Tokens) == 0 && text != "":
		// llama.cpp answers a request without "content" with 200 and no tokens:
		// it did not read the prompt, so this shape is not the engine's.
		return 0, "200 without tokens", errors.New("no tokens for a non-empty prompt")
	case out.Tokens != nil:
		return len(out.Tokens), "", nil
	}
	return 0, "", errors.New("answer has neither count nor tokens")
}
