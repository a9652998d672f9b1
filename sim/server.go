// Package sim is a simulated continuous-batching LLM serving engine behind vLLM's
// OpenAI-compatible HTTP API: a KV cache in blocks, an FCFS waiting queue, chunked
// prefill, a step time that grows with the batch, preemption by recompute, vLLM-style
// /metrics, and seeded faults. Its capacity is known analytically (docs/sim.md), which
// makes it a test oracle for the load generator and the KV-concurrency figure.
//
// It owns the simulation and its HTTP surface and knows nothing of the rest of slogate.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a simulated engine; it implements http.Handler.
type Server struct {
	o       Options
	p       Profile // effective: overrides applied
	model   string
	version string
	now     func() time.Time
	readyAt time.Time
	eng     *scheduler
	mux     *http.ServeMux
	reqs    atomic.Uint64 // requests that passed validation, in arrival order
	swap    *swapState    // sleep and memory release (swap.go)
	once    sync.Once
}

// New builds a simulated engine and starts its step loop. Close stops it.
func New(o Options) (*Server, error) {
	p, model, err := o.effective()
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, p: p, model: model, version: o.Version, now: o.Now}
	if s.version == "" {
		s.version = DefaultVersion
	}
	if s.now == nil {
		s.now = time.Now
	}
	slow := o.Faults.Slowdown
	if slow == 0 {
		slow = 1
	}
	s.readyAt = time.Now().Add(o.Faults.SlowStart)
	s.eng = newScheduler(p, slow, o.Seed)
	s.eng.pc.on = !o.NoPrefixCaching
	s.eng.noise = drawNoise(o.Noise, s.now)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) })
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) })
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /version", s.versionHandler)
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("POST /reset_prefix_cache", s.resetPrefixCache)
	s.registerSwap()
	s.eng.start()
	return s, nil
}

// Close stops the step loop; open streams end without [DONE].
func (s *Server) Close() { s.once.Do(s.eng.close) }

// Stats returns the engine's counters as of the end of the last step.
func (s *Server) Stats() Stats { return s.eng.stats() }

// Profile returns the effective profile: overrides applied, max_model_len clamped to the
// KV capacity, Model set to the served name.
func (s *Server) Profile() Profile { return s.p }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// vLLM's server is not listening while it loads; the simulator answers 503 instead
	// (except /metrics, so that a scraper can watch the start).
	if r.URL.Path != "/metrics" && time.Now().Before(s.readyAt) {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the engine is starting")
		return
	}
	if s.swap.refuse(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func (s *Server) versionHandler(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": s.version})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		Parent      any    `json:"parent"`
		MaxModelLen int    `json:"max_model_len"`
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []model{{
			ID: s.model, Object: "model", Created: s.now().Unix(), OwnedBy: "slogate-sim",
			Root: s.model, MaxModelLen: s.p.MaxModelLen,
		}},
	})
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string      `json:"model"`
		Prompt   *string     `json:"prompt"`
		Messages []messageIn `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON: "+err.Error())
		return
	}
	if req.Model != "" && req.Model != s.model {
		writeModelNotFound(w, req.Model)
		return
	}
	var ids []int
	switch {
	case req.Prompt != nil:
		ids = tokenIDs(*req.Prompt)
	case req.Messages != nil:
		msgs, err := chatMessages(req.Messages)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		ids = s.chatPromptIDs(msgs)
	default:
		writeError(w, http.StatusBadRequest, "BadRequestError", `one of "prompt" or "messages" is required`)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.p.MaxModelLen, "tokens": ids})
}

const maxBody = 32 << 20

// chatTokenIDs are the token ids of a chat prompt, rendered as chat templates render
// them: each message is a header (its role), its content and an end marker, and the
// prompt ends with the header of the assistant's reply. The template tokens have no text
// of their own: a header is chatHeaderTokens tokens of id 1, an end marker token id 2.
// So the prompt of a turn followed by its answer's tokens is exactly the start of the
// next turn's prompt (which adds the answer's end marker and the new message): a
// session's history hits the prefix cache as it does on a real engine.
func chatTokenIDs(msgs []ChatMessage) []int {
	ids := make([]int, 0, ChatTokens(msgs))
	header := func() {
		for range chatHeaderTokens {
			ids = append(ids, 1)
		}
	}
	for _, m := range msgs {
		header()
		ids = append(ids, tokenIDs(m.Content)...)
		ids = append(ids, 2)
	}
	header()
	return ids
}

// chatPromptIDs are the token ids of a chat prompt as this server's template renders it:
// the default system header (Options.ChatSystemHeader) where a template has one, then
// chatTokenIDs.
func (s *Server) chatPromptIDs(msgs []ChatMessage) []int {
	n := s.o.ChatSystemHeader
	if n == 0 {
		return chatTokenIDs(msgs)
	}
	ids := make([]int, n, n+ChatTokens(msgs))
	for i := range ids {
		ids[i] = chatSystemHeaderID
	}
	return append(ids, chatTokenIDs(msgs)...)
}

// chatSystemHeaderID is the token id of the default system header's tokens.
const chatSystemHeaderID = 3

// chatHeaderTokens is the length of a message header; with the end marker it makes
// ChatOverheadPerMessage, and the reply's header is ChatOverheadFixed.
const chatHeaderTokens = ChatOverheadFixed

// resetPrefixCache is vLLM's POST /reset_prefix_cache: it empties the prefix cache and
// answers 200 with no body.
func (s *Server) resetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	if !s.eng.resetPrefixCache() {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the engine stopped")
		return
	}
	w.WriteHeader(http.StatusOK)
}

type messageIn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// chatMessages flattens message contents given as a string or as an array of text parts.
func chatMessages(in []messageIn) ([]ChatMessage, error) {
	out := make([]ChatMessage, len(in))
	for i, m := range in {
		out[i].Role = m.Role
		if len(m.Content) == 0 || string(m.Content) == "null" {
			continue
		}
		var text string
		if err := json.Unmarshal(m.Content, &text); err == nil {
			out[i].Content = text
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return nil, fmt.Errorf("messages[%d].content: expected a string or an array of text parts", i)
		}
		for _, p := range parts {
			if p.Type != "text" {
				return nil, fmt.Errorf("messages[%d].content: part type %q is not supported: expected \"text\"", i, p.Type)
			}
			out[i].Content += p.Text
		}
	}
	return out, nil
}

type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []messageIn     `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
}

// promptIDs tokenizes a completions prompt: a string, a one-string array or token ids.
func promptIDs(raw json.RawMessage) ([]int, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return tokenIDs(text), nil
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil {
		if len(texts) != 1 {
			return nil, fmt.Errorf("prompt: %d prompts in one request are not supported: send one", len(texts))
		}
		return tokenIDs(texts[0]), nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		return ids, nil
	}
	return nil, errors.New("prompt: expected a string, an array of one string, or an array of token ids")
}

// plan is what one request will do, drawn from its own seeded source in a fixed order
// so that enabling one fault never shifts the draws of another.
type plan struct {
	fail500   bool
	stopAt    int
	stopFin   int32
	cutAt     int // disconnect after this many tokens (0: none)
	errAt     int // error event after this many tokens (0: none)
	stallAt   int // stall after this many tokens (0: none)
	stallTime time.Duration
}

func (s *Server) draw(idx uint64, maxTokens, minTokens int, ignoreEOS bool) plan {
	r := rand.New(rand.NewPCG(uint64(s.o.Seed), idx))
	f := s.o.Faults
	var p plan
	p.fail500 = r.Float64() < f.ErrorRate
	uCut, cutAt := r.Float64(), 1+r.IntN(maxTokens)
	uErr, errAt := r.Float64(), 1+r.IntN(maxTokens)
	uStall, stallAt := r.Float64(), 1+r.IntN(max(maxTokens-1, 1))
	lo := max(minTokens, 1)
	stop := lo + r.IntN(maxTokens-lo+1)
	if ignoreEOS {
		stop = maxTokens
	}
	p.stopAt = stop
	p.stopFin = finStop
	if stop == maxTokens {
		p.stopFin = finLength
	}
	// Fault positions are drawn over max_tokens and folded into the sequence's own
	// length, so that every drawn fault fires before the stream ends.
	if uCut < f.DisconnectRate {
		p.cutAt = 1 + (cutAt-1)%stop
	}
	if uErr < f.ErrorEventRate {
		p.errAt = 1 + (errAt-1)%stop
	}
	if uStall < f.StallProb && stop > 1 {
		p.stallAt, p.stallTime = 1+(stallAt-1)%(stop-1), f.Stall
	}
	return p
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	var req genRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON: "+err.Error())
		return
	}
	if req.Model != s.model {
		writeModelNotFound(w, req.Model)
		return
	}
	var ids []int
	if chat {
		if len(req.Messages) == 0 {
			writeError(w, http.StatusBadRequest, "BadRequestError", `"messages" must not be empty`)
			return
		}
		msgs, err := chatMessages(req.Messages)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		ids = s.chatPromptIDs(msgs)
	} else {
		if len(req.Prompt) == 0 {
			writeError(w, http.StatusBadRequest, "BadRequestError", `"prompt" is required`)
			return
		}
		var err error
		ids, err = promptIDs(req.Prompt)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		if len(ids) == 0 {
			writeError(w, http.StatusBadRequest, "BadRequestError", "prompt must not be empty")
			return
		}
	}
	prompt := len(ids)
	limit := s.p.MaxModelLen
	if prompt >= limit {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input.", limit, prompt))
		return
	}
	// vLLM's defaults: 16 for completions, the rest of the context for chat.
	maxTokens := limit - prompt
	switch {
	case req.MaxTokens != nil:
		maxTokens = *req.MaxTokens
	case req.MaxCompletionTokens != nil:
		maxTokens = *req.MaxCompletionTokens
	case !chat:
		maxTokens = 16
	}
	switch {
	case maxTokens < 1:
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTokens))
		return
	case prompt+maxTokens > limit:
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the input, %d in the completion). Please reduce the length of the input or completion.",
			limit, prompt+maxTokens, prompt, maxTokens))
		return
	case req.MinTokens < 0 || req.MinTokens > maxTokens:
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("min_tokens must be between 0 and max_tokens=%d, got %d.", maxTokens, req.MinTokens))
		return
	case req.N != nil && *req.N != 1:
		writeError(w, http.StatusBadRequest, "BadRequestError", "the simulator supports n=1 only")
		return
	}

	idx := s.reqs.Add(1) - 1
	pl := s.draw(idx, maxTokens, req.MinTokens, req.IgnoreEOS)
	if pl.fail500 {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "injected fault: internal server error")
		return
	}
	q := newSeq(prompt, pl.stopAt, pl.stopFin)
	if s.eng.pc.on {
		q.hashes = blockHashes(ids, s.p.BlockSize)
	}
	s.eng.submit(q)
	defer func() {
		if q.finish.Load() == finNone {
			s.eng.abort(q)
		}
	}()
	c := call{
		s: s, w: w, r: r, q: q, pl: pl, chat: chat, prompt: prompt, idx: idx,
		usage:           req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		continuousUsage: req.StreamOptions != nil && req.StreamOptions.ContinuousUsageStats,
	}
	if req.Stream {
		c.stream()
	} else {
		c.unary()
	}
}

// cachedTokens is usage.prompt_tokens_details.cached_tokens, as vLLM with
// --enable-prompt-tokens-details reports it: the prompt tokens the prefix cache served at
// the request's first scheduling.
func (c *call) cachedTokens() (int, bool) {
	k := c.q.firstHits.Load()
	if c.s.o.NoPromptTokensDetails || k < 0 {
		return 0, false
	}
	return int(k), true
}

// call is one generation request in flight on its connection.
type call struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	q     *seq
	pl    plan
	chat  bool
	usage bool
	// continuousUsage: usage in every chunk; pending: tokens held for the next chunk
	// (chunking.go).
	continuousUsage bool
	pending         int
	prompt          int
	idx             uint64

	written  int  // tokens written to the client
	roleSent bool // the chat role chunk went out
	head     []byte
	buf      []byte
}

func (c *call) id() string {
	if c.chat {
		return "chatcmpl-sim" + strconv.FormatUint(c.idx, 10)
	}
	return "cmpl-sim" + strconv.FormatUint(c.idx, 10)
}

// wait blocks until the engine has something for this stream; false when the client
// left or the engine closed.
func (c *call) wait() bool {
	select {
	case <-c.q.notify:
		return true
	case <-c.r.Context().Done():
		return false
	case <-c.s.eng.quit:
		return false
	}
}

func (c *call) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.r.Context().Done():
		return false
	case <-c.s.eng.quit:
		return false
	}
}

// faultAt returns the injected fault that fires once written reaches its position.
func (c *call) faultAt(written int) (cut, errEvent bool) {
	cut = c.pl.cutAt > 0 && written >= c.pl.cutAt
	errEvent = c.pl.errAt > 0 && written >= c.pl.errAt
	if cut && errEvent {
		// The one drawn earlier in the stream wins.
		if c.pl.cutAt <= c.pl.errAt {
			errEvent = false
		} else {
			cut = false
		}
	}
	return cut, errEvent
}

func (c *call) stream() {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.w)
	model, _ := json.Marshal(c.s.model)
	object := "text_completion"
	if c.chat {
		object = "chat.completion.chunk"
	}
	c.head = fmt.Appendf(nil, `data: {"id":%q,"object":%q,"created":%d,"model":%s,"choices":`, c.id(), object, c.s.now().Unix(), model)
	c.buf = make([]byte, 0, 512)
	// The headers go at once; the first event waits for the first token.
	if !c.flush(rc) {
		return
	}
	stalled := false
	for c.wait() {
		n, fin := c.q.take()
		if n = c.group(n, fin); n == 0 && fin == finNone {
			continue
		}
		if cut, errEvent := c.faultAt(c.written + n); cut || errEvent {
			if n > 0 {
				c.chunk(n, finNone)
			}
			if cut {
				c.flush(rc)
				// Abort the connection: no terminating chunk, no [DONE].
				panic(http.ErrAbortHandler)
			}
			c.buf = append(c.buf, `data: {"error":{"message":"injected fault: error event","type":"InternalServerError","param":null,"code":500}}`+"\n\n"...)
			c.buf = append(c.buf, "data: [DONE]\n\n"...)
			c.flush(rc)
			return
		}
		c.chunks(n, fin)
		if fin != finNone {
			if c.usage {
				c.buf = append(c.buf, c.head...)
				c.buf = fmt.Appendf(c.buf, `[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d`, c.prompt, c.prompt+c.written, c.written)
				if k, ok := c.cachedTokens(); ok {
					c.buf = fmt.Appendf(c.buf, `,"prompt_tokens_details":{"cached_tokens":%d}`, k)
				}
				c.buf = append(c.buf, "}}\n\n"...)
			}
			c.buf = append(c.buf, "data: [DONE]\n\n"...)
			c.flush(rc)
			return
		}
		if !c.flush(rc) {
			return
		}
		if !stalled && c.pl.stallAt > 0 && c.written >= c.pl.stallAt {
			// The engine keeps generating; what it produces meanwhile arrives in one
			// chunk after the stall.
			stalled = true
			if !c.sleep(c.pl.stallTime) {
				return
			}
		}
	}
}

// chunk appends one SSE chunk carrying n tokens (possibly none) and a finish reason.
// The first chunk of a chat stream is preceded by the role chunk (role and empty
// content), as vLLM sends it: with the first output, after prefill, not before.
func (c *call) chunk(n int, fin int32) {
	if c.chat && !c.roleSent {
		c.roleSent = true
		c.buf = append(c.buf, c.head...)
		c.buf = append(c.buf, `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	c.buf = append(c.buf, c.head...)
	if c.chat {
		c.buf = append(c.buf, `[{"index":0,"delta":{"content":"`...)
	} else {
		c.buf = append(c.buf, `[{"index":0,"text":"`...)
	}
	c.buf = appendTokens(c.buf, int(c.idx), c.written, n)
	c.written += n
	if c.chat {
		c.buf = append(c.buf, `"},"logprobs":null,"finish_reason":`...)
	} else {
		c.buf = append(c.buf, `","logprobs":null,"finish_reason":`...)
	}
	c.buf = appendFinish(c.buf, fin)
	c.buf = append(c.buf, ",\"stop_reason\":null}]"...)
	c.buf = c.appendChunkUsage(c.buf)
	c.buf = append(c.buf, "}\n\n"...)
}

func appendFinish(b []byte, fin int32) []byte {
	switch fin {
	case finStop:
		return append(b, `"stop"`...)
	case finLength:
		return append(b, `"length"`...)
	}
	return append(b, "null"...)
}

func (c *call) flush(rc *http.ResponseController) bool {
	_, err := c.w.Write(c.buf)
	c.buf = c.buf[:0]
	if err != nil {
		return false
	}
	return rc.Flush() == nil
}

func (c *call) unary() {
	stalled := false
	var fin int32
	for fin == finNone {
		if !c.wait() {
			if c.r.Context().Err() == nil {
				writeError(c.w, http.StatusServiceUnavailable, "ServiceUnavailable", "the engine stopped")
			}
			return
		}
		var n int
		n, fin = c.q.take()
		c.written += n
		if cut, errEvent := c.faultAt(c.written); cut {
			panic(http.ErrAbortHandler)
		} else if errEvent {
			writeError(c.w, http.StatusInternalServerError, "InternalServerError", "injected fault: error during generation")
			return
		}
		if fin == finNone && !stalled && c.pl.stallAt > 0 && c.written >= c.pl.stallAt {
			stalled = true
			if !c.sleep(c.pl.stallTime) {
				return
			}
		}
	}
	text := string(appendTokens(nil, int(c.idx), 0, c.written))
	finish := string(appendFinish(nil, fin))
	usage := map[string]any{"prompt_tokens": c.prompt, "completion_tokens": c.written, "total_tokens": c.prompt + c.written}
	if k, ok := c.cachedTokens(); ok {
		usage["prompt_tokens_details"] = map[string]int{"cached_tokens": k}
	}
	var choice map[string]any
	object := "text_completion"
	if c.chat {
		object = "chat.completion"
		choice = map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "logprobs": nil, "finish_reason": json.RawMessage(finish), "stop_reason": nil}
	} else {
		choice = map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": json.RawMessage(finish), "stop_reason": nil}
	}
	writeJSON(c.w, http.StatusOK, map[string]any{
		"id": c.id(), "object": object, "created": c.s.now().Unix(), "model": c.s.model,
		"choices": []any{choice}, "usage": usage,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the OpenAI error shape that current vLLM uses.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status}})
}

func writeModelNotFound(w http.ResponseWriter, model string) {
	writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", model))
}

// Running is a simulated engine serving on a loopback port.
type Running struct {
	URL    string // http://127.0.0.1:PORT
	Server *Server
	hs     *http.Server
	once   sync.Once
	done   chan struct{}
}

// Close stops serving (cutting open streams) and stops the engine.
func (r *Running) Close() {
	r.once.Do(func() {
		close(r.done)
		_ = r.hs.Close()
		r.Server.Close()
	})
}

// Start serves a simulated engine on a free 127.0.0.1 port until ctx ends or Close.
func Start(ctx context.Context, o Options) (*Running, error) {
	srv, err := New(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, err
	}
	r := &Running{
		URL:    "http://" + ln.Addr().String(),
		Server: srv,
		hs:     &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second},
		done:   make(chan struct{}),
	}
	go func() { _ = r.hs.Serve(ln) }()
	go func() {
		select {
		case <-ctx.Done():
			r.Close()
		case <-r.done:
		}
	}()
	return r, nil
}

// Serve serves a simulated engine on addr until ctx ends, logging its shape to log.
// It returns nil after a stop caused by ctx; open streams are cut.
func Serve(ctx context.Context, addr string, o Options, log io.Writer) error {
	srv, err := New(o)
	if err != nil {
		return err
	}
	defer srv.Close()
	if o.StartTime > 0 {
		if !startUp(ctx, o.StartTime, srv.version, addr, log, o.Now) {
			return nil
		}
	}
	listen := o.Listen
	if listen == nil {
		listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	p := srv.Profile()
	fmt.Fprintf(log, "slogate sim: profile %s, model %q, version %s, %d KV blocks × %d tokens, max_num_seqs %d, max_model_len %d, seed %d\n",
		p.Name, p.Model, srv.version, p.NumBlocks, p.BlockSize, p.MaxNumSeqs, p.MaxModelLen, o.Seed)
	if n := srv.Noise(); n != nil {
		fmt.Fprintf(log, "slogate sim: noise seed %d: speed ×%.4f, drift %+.2f%% per %s\n", n.Seed, n.Speed, 100*n.Drift, n.DriftOver)
	}
	if sw := o.Swap.summary(); sw != "" {
		fmt.Fprintf(log, "slogate sim: %s\n", sw)
	}
	fmt.Fprintf(log, "slogate sim: serving on http://%s\n", ln.Addr())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// The engine stops first, so every open stream ends (without [DONE]); then the
	// connections close at once. A graceful Shutdown would wait up to 5 s for a
	// connection a client opened but never sent a request on.
	srv.Close()
	_ = hs.Close()
	return nil
}
