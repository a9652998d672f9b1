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

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, tokenizeTimeout)
	defer cancel()
	stalled := func(what string, err error) error {
		if parent.Err() == nil && ctx.Err() != nil {
			return fmt.Errorf("%w: POST %s gave no complete answer within %s", ErrStalled, c.tokenizeURL, tokenizeTimeout)
		}
		return fmt.Errorf("POST %s: %s%s", c.tokenizeURL, what, c.detail(err.Error()))
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.tokenizeURL, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	hr.Header["Content-Type"] = jsonContentType
	if c.auth != nil {
		hr.Header["Authorization"] = c.auth
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return 0, "", stalled("", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return 0, "", stalled("reading the answer: ", err)
	}
	if int64(len(b)) > c.maxBody {
		return 0, "", fmt.Errorf("POST %s: answer over %d bytes", c.tokenizeURL, c.maxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := "HTTP " + strconv.Itoa(resp.StatusCode)
		if d := c.detail(string(b[:min(len(b), 200+len(c.apiKey))])); d != "" {
			msg += " " + stripDetail(d, 200)
		}
		err = fmt.Errorf("POST %s: %s", c.tokenizeURL, msg)
		if resp.StatusCode >= 400 {
			return 0, msg, err
		}
		return 0, "", err
	}
	n, miss, err = parseTokenizeAnswer(b, shape, text)
	if err != nil {
		return 0, miss, fmt.Errorf("POST %s: %w", c.tokenizeURL, err)
	}
	return n, "", nil
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
