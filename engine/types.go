// Package engine talks to OpenAI-compatible serving engines: the streaming client for
// /v1/completions and /v1/chat/completions, the tokenize endpoint, and (per engine)
// identity, version, Prometheus metrics and KV capacity.
//
// It knows nothing of scheduling or gating.
package engine

import (
	"context"
	"time"
)

// APIs.
const (
	APIChat        = "chat"
	APICompletions = "completions"
)

// Request is one generation request.
type Request struct {
	API       string // APIChat or APICompletions
	Model     string
	Prompt    string
	MaxTokens int
	MinTokens int  // 0: not sent
	IgnoreEOS bool // sends ignore_eos: true
	// Messages, when set, are the chat messages sent (APIChat only), in place of one user
	// message holding Prompt: a multi-turn conversation's history and its new message.
	Messages []Message
	// CaptureText asks for the generated text in Result.Text (the answer a multi-turn
	// session sends back as history).
	CaptureText bool
}

// Message is one chat message.
type Message struct {
	Role    string // system, user or assistant
	Content string
}

// Error reasons, the keys of a run's errors-by-reason table. HTTP errors use
// "http_<status>" (for example "http_500").
const (
	ErrTimeout     = "timeout"            // the per-request deadline passed
	ErrConnect     = "connect"            // could not connect or send
	ErrStream      = "stream_error"       // an error object inside the stream
	ErrDisconnect  = "disconnect"         // the stream ended before a finish_reason
	ErrCanceled    = "canceled"           // the run was interrupted
	ErrTooLarge    = "response_too_large" // a line or the body exceeded its cap
	ErrBadResponse = "bad_response"       // unparseable data
	// ErrEmpty: the stream ended (with [DONE] or a finish_reason) without one chunk of
	// generated text, or no chunk carried choices at all. An empty answer is not a
	// success, whatever the status code said.
	ErrEmpty = "empty_response"
	// ErrOverrun: the server sent far more content chunks than max_tokens allows
	// (MaxChunks); the stream is cut there, so that one answer cannot fill the memory
	// and the record.
	ErrOverrun = "output_overrun"
)

// MaxChunks is the most content chunks a request for maxTokens tokens may bring: every
// token in its own chunk, four times over (servers split a token's bytes or send
// whitespace apart), plus a margin for short answers. 0 for no max_tokens: no bound.
func MaxChunks(maxTokens int) int {
	if maxTokens <= 0 {
		return 0
	}
	return 4*maxTokens + 64
}

// Result is what one request did. Times are monotonic offsets from the client's epoch.
type Result struct {
	Send  time.Duration // request issued
	First time.Duration // first chunk carrying generated text (0 if none)
	Last  time.Duration // last chunk carrying generated text (0 if none)
	End   time.Duration // response finished, failed or timed out
	// Gaps are the times between consecutive content chunks; len(Gaps) == Chunks-1.
	Gaps []time.Duration
	// ChunkTokens are the tokens each content chunk carried, where the server said so
	// (a cumulative completion count in every content chunk, as vLLM sends with
	// stream_options.continuous_usage_stats); empty when it did not say so for every
	// content chunk. len(ChunkTokens) == Chunks otherwise.
	ChunkTokens []int
	Chunks      int // content chunks (chunks carrying non-empty text)
	// ChunkLimit is the bound Stream put on Chunks (MaxChunks of max_tokens); 0: none.
	// A stream that passes it is cut with ErrOverrun.
	ChunkLimit   int
	PromptTokens int // from usage; 0 when not reported
	// CachedTokens is usage.prompt_tokens_details.cached_tokens where the server sent it
	// (CachedReported): the prompt tokens its prefix cache served when it first scheduled
	// the request. vLLM sets it once, at the first scheduling, so a re-admission after
	// preemption does not change it.
	CachedTokens   int
	CachedReported bool
	OutputTokens   int // from usage; else the chunk count (UsageReported false)
	UsageReported  bool
	// UsageFlag says why the server's usage could not be right, "" when it could (see
	// checkUsage): an output count above max_tokens + UsageSlack or below the number of
	// content chunks (OutputTokens is then the chunk count), or an impossible prompt
	// count (PromptTokens is then 0: unknown).
	UsageFlag    string
	FinishReason string
	// Dial is the time spent dialing the fresh connection this request got, when it was
	// dialed inside the request rather than ahead (0: reused or dialed ahead): set-up
	// that is part of this request's latency.
	Dial time.Duration
	// Retries counts the times the request was resent on another connection because the
	// server had closed the first before any byte of the request was written (never
	// read, so not an error and not sent twice).
	Retries int

	// Text is the generated text (choices[0].text or delta.content, decoded), when the
	// request asked for it (Request.CaptureText); reasoning and tool-call deltas are not
	// part of it.
	Text []byte
	// CaptureText is Request.CaptureText, copied by Stream for the stream being read.
	CaptureText bool

	Status    int    // HTTP status, 0 if none
	ErrReason string // "" on success; one of the Err* reasons or http_<status>
	ErrDetail string // capped and stripped of control characters
}

// Reset clears r for reuse, keeping the Gaps and ChunkTokens buffers.
func (r *Result) Reset() {
	gaps, toks, text := r.Gaps[:0], r.ChunkTokens[:0], r.Text[:0]
	*r = Result{Gaps: gaps, ChunkTokens: toks, Text: text}
}

// OK reports whether the request succeeded.
func (r *Result) OK() bool { return r.ErrReason == "" }

// Streamer sends one streaming request and fills res. It never returns an error: every
// failure is recorded in res.ErrReason, so that nothing measured is lost.
type Streamer interface {
	Stream(ctx context.Context, req *Request, res *Result)
}
