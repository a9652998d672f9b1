package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	BaseURL string // e.g. http://127.0.0.1:8000 (with or without trailing /, with or without /v1)
	APIKey  string // sent as "Authorization: Bearer ..."; never logged, never in errors
	Model   string // for tokenize, and for requests whose Model is empty
	// HTTPClient nil: a client tuned for load generation (see NewClient).
	HTTPClient *http.Client
	// Epoch is the base of Result times; zero: time.Now() at NewClient. A time without
	// a monotonic reading is rebased onto one, so that results never follow wall-clock
	// steps.
	Epoch        time.Time
	MaxLineBytes int   // default 1 MiB: one SSE line longer than this is ErrTooLarge
	MaxBodyBytes int64 // default 64 MiB: a response body longer than this is ErrTooLarge
	// ExtraBody holds JSON members merged into every request body. A key that names a
	// member slogate writes (max_tokens, stream_options, ...) replaces it.
	ExtraBody map[string]any
}

// Defaults.
const (
	DefaultMaxLineBytes       = 1 << 20
	DefaultMaxBodyBytes int64 = 64 << 20
	maxDetail                 = 512 // bytes of ErrDetail
)

// Client is a streaming client for one OpenAI-compatible server. It is safe for
// concurrent use.
type Client struct {
	hc             *http.Client
	dialer         *dialer // nil with a caller's HTTPClient
	h1             *h1Pool // the streaming path of its own (h1.go); nil: the transport's
	completionsURL string
	chatURL        string
	tokenizeURL    string
	// applyTemplateURL is llama.cpp's chat-template rendering (PromptTokenIDs).
	applyTemplateURL string
	model            string
	apiKey           string
	auth             []string // Authorization header value, shared read-only
	epoch            time.Time
	maxLine          int
	maxBody          int64

	extra     []byte // ExtraBody members without braces, "" when none
	overrides uint16 // standard members (body* bits) that extra replaces
	extraErr  error  // ExtraBody could not be encoded: every request fails with it
	tokShape  atomic.Int32
	readers   sync.Pool // *lineReader
}

var _ Streamer = (*Client)(nil)

// Header values shared by every request; the transport only reads them.
var (
	jsonContentType = []string{"application/json"}
	acceptSSE       = []string{"text/event-stream"}
)

// NewClient returns a client for o.BaseURL. The default HTTP client keeps connections
// alive without a per-host limit (a limit would queue requests inside the load
// generator, where no one measures the wait), has no overall timeout (each request's
// context carries its deadline), does not follow redirects (a redirected POST turns
// into a GET), asks for no compression (decompression delays chunks) and uses no proxy
// (a proxy changes what is measured; pass HTTPClient to use one).
func NewClient(o ClientOptions) *Client {
	c := &Client{
		hc:      o.HTTPClient,
		model:   o.Model,
		apiKey:  o.APIKey,
		maxLine: o.MaxLineBytes,
		maxBody: o.MaxBodyBytes,
	}
	base := strings.TrimRight(strings.TrimSpace(o.BaseURL), "/")
	base = strings.TrimRight(strings.TrimSuffix(base, "/v1"), "/")
	if c.hc == nil {
		c.dialer = newDialer(hostPort(base))
		c.hc = defaultHTTPClient(c.dialer)
		c.h1 = newH1Pool(base, c.dialer)
	}
	if c.maxLine <= 0 {
		c.maxLine = DefaultMaxLineBytes
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBodyBytes
	}
	c.completionsURL = base + "/v1/completions"
	c.chatURL = base + "/v1/chat/completions"
	c.tokenizeURL = base + "/tokenize"
	c.applyTemplateURL = base + "/apply-template"
	if o.APIKey != "" {
		c.auth = []string{"Bearer " + o.APIKey}
	}
	now := time.Now()
	switch {
	case o.Epoch.IsZero():
		c.epoch = now
	case o.Epoch == o.Epoch.Round(0):
		// No monotonic reading: the same instant, expressed on the monotonic clock.
		c.epoch = now.Add(o.Epoch.Sub(now))
	default:
		c.epoch = o.Epoch
	}
	c.extra, c.overrides, c.extraErr = encodeExtra(o.ExtraBody)
	return c
}

// hostPort is the address the transport dials for base: host:port, the port defaulting
// to the scheme's.
func hostPort(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	if p := u.Port(); p != "" {
		return net.JoinHostPort(u.Hostname(), p)
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// defaultHTTPClient dials through d, which tracks connections (see conn.go).
func defaultHTTPClient(d *dialer) *http.Client {
	t := &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConns:        0, // no limit
		MaxIdleConnsPerHost: 1 << 16,
		MaxConnsPerHost:     0, // no limit
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
		// Sized for SSE, not bulk transfer: a connection holds its buffers for as
		// long as it streams, and thousands stream at once. A response's headers and an
		// event fit in 2 KiB; a longer read goes straight into the line reader's buffer,
		// and a longer body is written through in pieces.
		ReadBufferSize:  2 << 10,
		WriteBufferSize: 2 << 10,
	}
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// PrepareConns dials n connections ahead of the requests that will use them, so that no
// measured request pays for a dial (see conn.go), and keeps some spare from then on (up
// to 32, redialed in the background as requests take them).
// It returns a note for the record ("" when there is nothing to say). A client built on a
// caller's HTTPClient dials nothing here.
func (c *Client) PrepareConns(ctx context.Context, n int) string {
	if c.dialer == nil {
		return ""
	}
	return c.dialer.prepare(ctx, n)
}

// ConnNote says how the server treats connections when that matters to a reader of the
// record; "" when it keeps them alive as HTTP/1.1 says.
func (c *Client) ConnNote() string {
	if c.dialer == nil || !c.dialer.closesAfterResponses() {
		return ""
	}
	return "connections: the server closes the connection after its responses (while advertising keep-alive): each request went on a fresh connection, dialed ahead where possible"
}

// CloseIdleConnections closes the spare and idle connections; a later request dials anew.
func (c *Client) CloseIdleConnections() {
	if c.dialer != nil {
		c.dialer.closeSpares()
	}
	if c.h1 != nil {
		c.h1.closeIdle()
	}
	c.hc.CloseIdleConnections()
}

// Epoch is the base of every Result time this client records.
func (c *Client) Epoch() time.Time { return c.epoch }

func (c *Client) now() time.Duration { return time.Since(c.epoch) }

// Stream sends req and records what happened in res (reset first, keeping its Gaps
// buffer). See Streamer.
func (c *Client) Stream(ctx context.Context, req *Request, res *Result) {
	res.Reset()
	if c.extraErr != nil {
		c.fail(res, ErrConnect, "extra body: "+c.extraErr.Error())
		return
	}
	url := c.completionsURL
	if req.API == APIChat {
		url = c.chatURL
	}
	res.CaptureText = req.CaptureText
	if c.h1 != nil && strings.HasPrefix(url, c.h1.origin+"/") {
		c.streamH1(ctx, url[len(c.h1.origin):], req, res)
		return
	}
	size := len(req.Prompt) + len(req.Model) + len(c.extra) + 160
	for _, m := range req.Messages {
		size += len(m.Role) + len(m.Content) + 32
	}
	body := c.appendBody(make([]byte, 0, size), req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		c.fail(res, ErrConnect, err.Error())
		return
	}
	if c.dialer != nil {
		// A server that closes after each response gets a fresh connection per request
		// (Connection: close, so the transport never offers it a used one).
		hr.Close = c.dialer.closesAfterResponses()
		hr = hr.WithContext(httptrace.WithClientTrace(ctx, connTrace(res)))
	}
	hr.Header["Content-Type"] = jsonContentType
	hr.Header["Accept"] = acceptSSE
	if c.auth != nil {
		hr.Header["Authorization"] = c.auth
	}

	res.Send = c.now()
	resp, err := c.hc.Do(hr)
	if c.dialer != nil && !hr.Close && c.dialer.closesAfterResponses() {
		// Learned during this request: drop the idle connections now rather than
		// refuse them one by one.
		c.hc.CloseIdleConnections()
	}
	if err != nil {
		if r := ctxReason(ctx, err); r != "" {
			c.fail(res, r, "no response headers: "+err.Error())
		} else {
			c.fail(res, ErrConnect, err.Error())
		}
		return
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		c.failStatus(res, resp)
		return
	}
	defer checkUsage(req, res)
	res.ChunkLimit = MaxChunks(req.MaxTokens)
	if n := min(req.MaxTokens, maxGapsHint) - 1; cap(res.Gaps) < n {
		// One allocation for the gaps a full answer brings, rather than a doubling
		// series whose discarded halves are as large again while thousands stream.
		res.Gaps = make([]time.Duration, 0, n)
	}
	if c.readStream(ctx, resp.Body, resp.Header.Get("Content-Type"), res) {
		// Read on to the end of the body so that the transport can reuse the
		// connection, but not for long: what follows [DONE] is not part of the
		// response, and a server that holds the stream open must not hold the caller.
		t := time.AfterFunc(drainWait, func() { resp.Body.Close() })
		io.CopyN(io.Discard, resp.Body, maxDrain)
		t.Stop()
	}
}

// connTrace records in res how the request got its connection: the dial time of a fresh
// connection dialed inside the request (not ahead), and how often the transport resent
// the request elsewhere because the server had closed the connection before any byte
// was written (each attempt gets a connection).
func connTrace(res *Result) *httptrace.ClientTrace {
	attempts := 0
	return &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if attempts++; attempts > 1 {
			res.Retries++
		}
		nc := info.Conn
		if t, ok := nc.(interface{ NetConn() net.Conn }); ok {
			nc = t.NetConn()
		}
		if tc, ok := nc.(*conn); ok && !info.Reused && !tc.ahead {
			res.Dial += tc.dialTime
		}
	}}
}

// failStatus records a response other than 200 OK: "http_<status>", with the start of
// its body (and where a redirect pointed) as the detail.
func (c *Client) failStatus(res *Result, resp *http.Response) {
	// Read a little past the cap so that a key the server echoes near the cut is still
	// whole when it is redacted.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(maxDetail+len(c.apiKey))))
	detail := string(b)
	if loc := resp.Header.Get("Location"); loc != "" {
		// Redirects are not followed; where it pointed is the useful part.
		detail = "redirected to " + loc + " " + detail
	}
	c.fail(res, "http_"+strconv.Itoa(resp.StatusCode), detail)
}

// fail ends res with a reason.
func (c *Client) fail(res *Result, reason, detail string) {
	res.End = c.now()
	res.ErrReason = reason
	res.ErrDetail = c.detail(detail)
	if !res.UsageReported {
		res.OutputTokens = res.Chunks
	}
}

// ctxReason names a failure caused by the request's context, or "".
func ctxReason(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return ErrCanceled
	}
	return ""
}

// maxGapsHint caps the gaps allocated ahead of a stream (8 KiB of them); a longer answer
// grows the buffer as it comes.
const maxGapsHint = 1024

// What is read after [DONE] to let the connection be reused, and for how long.
const (
	maxDrain  = 4 << 10
	drainWait = 100 * time.Millisecond
)

// readStream reads an SSE body into res. Each data line is one event: every
// OpenAI-compatible server puts a chunk's JSON on one line, and handling lines as they
// come keeps the timestamps tight. It reports whether the stream ended with [DONE]
// before the body did, so that the rest of the body is worth draining.
func (c *Client) readStream(ctx context.Context, body io.Reader, contentType string, res *Result) (drain bool) {
	lr, _ := c.readers.Get().(*lineReader)
	if lr == nil {
		lr = new(lineReader)
	}
	lr.reset(body, c.maxLine, c.maxBody)
	defer func() {
		lr.r = nil
		if cap(lr.buf) <= 64<<10 { // never keep a buffer a huge line grew
			c.readers.Put(lr)
		}
	}()

	var ck chunkInfo
	var dataLines, withChoices int
	finished := false
	// Per-chunk token counts: from a cumulative completion count in every content
	// chunk; one content chunk without it and they are unknown (empty).
	perChunk, counted := true, 0
	defer func() {
		if !perChunk || len(res.ChunkTokens) != res.Chunks {
			res.ChunkTokens = res.ChunkTokens[:0]
		}
	}()
	for {
		line, err := lr.next()
		if err != nil {
			switch {
			case err == io.EOF && finished:
				// No [DONE] (Ollama's and TGI's older streams), but generation ended.
				res.End = c.now()
				c.checkEmpty(res, dataLines, withChoices, finished)
			case err == io.EOF && lr.total == 0:
				// Headers, then the connection closed: the engine died, the answer
				// was not malformed.
				c.fail(res, ErrDisconnect, "the connection closed after the response headers, before any body")
			case err == io.EOF && dataLines == 0:
				c.fail(res, ErrBadResponse, "no SSE data lines in the response (Content-Type: "+contentType+")")
			case err == io.EOF:
				c.fail(res, ErrDisconnect, fmt.Sprintf("stream ended without a finish_reason after %d content chunks", res.Chunks))
			case err == errTooLarge:
				c.fail(res, ErrTooLarge, fmt.Sprintf("line over %d bytes or body over %d bytes", c.maxLine, c.maxBody))
			default:
				if r := ctxReason(ctx, err); r != "" {
					c.fail(res, r, fmt.Sprintf("after %d content chunks: %v", res.Chunks, err))
				} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
					c.fail(res, ErrTimeout, err.Error())
				} else {
					c.fail(res, ErrDisconnect, err.Error())
				}
			}
			break
		}
		p, ok := dataPayload(line)
		if !ok {
			continue
		}
		dataLines++
		if string(p) == "[DONE]" {
			res.End = c.now()
			drain = lr.err == nil
			c.checkEmpty(res, dataLines-1, withChoices, finished)
			break
		}
		if err := parseChunk(p, &ck); err != nil {
			c.fail(res, ErrBadResponse, "unparseable chunk: "+string(p[:min(len(p), maxDetail)]))
			break
		}
		if ck.errVal != nil {
			c.fail(res, ErrStream, streamErrorMessage(ck.errVal))
			break
		}
		if ck.choices {
			withChoices++
		}
		if ck.content {
			// Each event is stamped as it is parsed, not once per read: events that one
			// read delivered together get the times the client saw each of them. Two
			// events are never stamped alike, so a gap is never zero; where the clock
			// reads the same twice, the later is a nanosecond on.
			at := c.now()
			if res.Chunks > 0 && at <= res.Last {
				at = res.Last + 1
			}
			if res.Chunks == 0 {
				res.First = at
			} else {
				res.Gaps = append(res.Gaps, at-res.Last)
			}
			res.Last = at
			res.Chunks++
			if res.CaptureText && len(ck.text) > 0 {
				res.Text = appendUnescaped(res.Text, ck.text)
			}
			if perChunk && ck.usage && ck.completion > counted {
				res.ChunkTokens = append(res.ChunkTokens, ck.completion-counted)
				counted = ck.completion
			} else {
				perChunk = false
			}
			if res.ChunkLimit > 0 && res.Chunks > res.ChunkLimit {
				c.fail(res, ErrOverrun, fmt.Sprintf("more than %d content chunks, the bound for this request's max_tokens (4 × max_tokens + 64); the stream was cut", res.ChunkLimit))
				break
			}
		}
		if ck.finish != nil {
			res.FinishReason = finishReason(ck.finish)
			finished = true
		}
		if ck.usage && (ck.prompt != 0 || ck.completion != 0) {
			res.PromptTokens, res.OutputTokens, res.UsageReported = ck.prompt, ck.completion, true
			res.CachedTokens, res.CachedReported = ck.cached, ck.cachedOK
		}
	}
	if !res.UsageReported {
		res.OutputTokens = res.Chunks
	}
	return drain
}

// checkEmpty fails a stream that ended properly but said nothing: a success needs
// generated text (DESIGN §10). chunks is the number of JSON chunks read.
func (c *Client) checkEmpty(res *Result, chunks, withChoices int, finished bool) {
	switch {
	case res.Chunks > 0:
	case chunks == 0:
		c.fail(res, ErrEmpty, "the stream ended with no chunk")
	case withChoices == 0:
		c.fail(res, ErrEmpty, fmt.Sprintf("none of the %d chunks carried choices", chunks))
	case !finished:
		c.fail(res, ErrEmpty, fmt.Sprintf("the stream ended after %d chunks with no generated text and no finish_reason", chunks))
	default:
		c.fail(res, ErrEmpty, fmt.Sprintf("finish_reason %q after no generated text (%d chunks)", res.FinishReason, chunks))
	}
}

// dataPayload returns the value of a "data:" line; comments (":"), "event:", "id:" and
// "retry:" lines are not data.
func dataPayload(line []byte) ([]byte, bool) {
	if len(line) < 5 || string(line[:5]) != "data:" {
		return nil, false
	}
	p := bytes.TrimSpace(line[5:])
	return p, len(p) > 0
}

// finishReason turns the raw finish_reason into a string, without allocating for the
// common values.
func finishReason(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "abort":
		return "abort"
	case "content_filter":
		return "content_filter"
	}
	s := string(b)
	if bytes.IndexByte(b, '\\') >= 0 {
		var u string
		if json.Unmarshal(append(append([]byte{'"'}, b...), '"'), &u) == nil {
			s = u
		}
	}
	return stripDetail(s, 64)
}

// streamErrorMessage decodes an in-stream error value: an object with a message
// (vLLM, SGLang, OpenAI), a bare string (TGI), or anything else verbatim. It runs once
// per failed request, so encoding/json is fine here.
func streamErrorMessage(v []byte) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(v, &o) == nil && o.Message != "" {
		switch {
		case o.Type != "" && o.Code != nil:
			return fmt.Sprintf("%s (%s, code %v)", o.Message, o.Type, o.Code)
		case o.Type != "":
			return o.Message + " (" + o.Type + ")"
		}
		return o.Message
	}
	return string(v)
}

// detail redacts the API key from s, then strips and caps it.
func (c *Client) detail(s string) string {
	if c.apiKey != "" {
		s = strings.ReplaceAll(s, c.apiKey, "[redacted]")
	}
	return stripDetail(s, maxDetail)
}

// sanitize replaces control characters (which could forge log lines or terminal
// escapes) with spaces, repairs invalid UTF-8 and cuts s to at most n bytes on a
// character boundary.
func stripDetail(s string, n int) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if !clean {
		var b strings.Builder
		b.Grow(min(len(s), n+4))
		for _, r := range s {
			if b.Len() >= n+4 {
				break
			}
			if unicode.IsControl(r) {
				r = ' '
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Standard body members that ExtraBody may replace.
const (
	bodyModel uint16 = 1 << iota
	bodyPrompt
	bodyMessages
	bodyMaxTokens
	bodyStream
	bodyStreamOptions
	bodyIgnoreEOS
	bodyMinTokens
)

var standardFields = map[string]uint16{
	"model": bodyModel, "prompt": bodyPrompt, "messages": bodyMessages, "max_tokens": bodyMaxTokens,
	"stream": bodyStream, "stream_options": bodyStreamOptions, "ignore_eos": bodyIgnoreEOS,
	"min_tokens": bodyMinTokens,
}

// encodeExtra encodes ExtraBody once, as members ready to append, in key order so that
// request bodies are reproducible.
func encodeExtra(m map[string]any) ([]byte, uint16, error) {
	if len(m) == 0 {
		return nil, 0, nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []byte
	var over uint16
	for _, k := range keys {
		v, err := json.Marshal(m[k])
		if err != nil {
			return nil, 0, fmt.Errorf("%q: %w", k, err)
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k)
		out = append(out, ':')
		out = append(out, v...)
		over |= standardFields[k]
	}
	return out, over, nil
}

// appendBody writes the request body. It is hand-written because it runs once per
// request on the dispatch path, where encoding/json's reflection and map building would
// cost several allocations and a copy of the prompt.
func (c *Client) appendBody(b []byte, req *Request) []byte {
	model := req.Model
	if model == "" {
		model = c.model
	}
	// Every member is written with a leading comma; the first comma becomes the brace.
	open := len(b)
	if c.overrides&bodyModel == 0 {
		b = append(b, `,"model":`...)
		b = appendJSONString(b, model)
	}
	if req.API == APIChat {
		if c.overrides&bodyMessages == 0 && len(req.Messages) > 0 {
			b = append(b, `,"messages":[`...)
			for i, m := range req.Messages {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"role":`...)
				b = appendJSONString(b, m.Role)
				b = append(b, `,"content":`...)
				b = appendJSONString(b, m.Content)
				b = append(b, '}')
			}
			b = append(b, ']')
		} else if c.overrides&bodyMessages == 0 {
			b = append(b, `,"messages":[{"role":"user","content":`...)
			b = appendJSONString(b, req.Prompt)
			b = append(b, "}]"...)
		}
	} else if c.overrides&bodyPrompt == 0 {
		b = append(b, `,"prompt":`...)
		b = appendJSONString(b, req.Prompt)
	}
	if req.MaxTokens > 0 && c.overrides&bodyMaxTokens == 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	if c.overrides&bodyStream == 0 {
		b = append(b, `,"stream":true`...)
	}
	if c.overrides&bodyStreamOptions == 0 {
		b = append(b, `,"stream_options":{"include_usage":true}`...)
	}
	if req.IgnoreEOS && c.overrides&bodyIgnoreEOS == 0 {
		b = append(b, `,"ignore_eos":true`...)
	}
	if req.MinTokens > 0 && c.overrides&bodyMinTokens == 0 {
		b = append(b, `,"min_tokens":`...)
		b = strconv.AppendInt(b, int64(req.MinTokens), 10)
	}
	if len(c.extra) > 0 {
		b = append(b, ',')
		b = append(b, c.extra...)
	}
	if len(b) == open {
		b = append(b, '{')
	} else {
		b[open] = '{'
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. It escapes what JSON requires and
// replaces invalid UTF-8 with U+FFFD, as encoding/json does, but leaves <, > and &
// alone (no HTML here) and copies runs of plain bytes at once.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
