package workload

import (
	"context"
	"hash/fnv"
	"time"
)

// Tokenizer counts tokens with the engine's own tokenizer (vLLM and llama.cpp POST
// /tokenize). The engine package implements it; nil means "estimate".
type Tokenizer interface {
	CountTokens(ctx context.Context, text string) (int, error)
}

// Item is one request to send: which class, how long, and the prompt text.
type Item struct {
	Index        int  // 0-based within its phase (warm-up and measured are separate phases)
	Warmup       bool // a warm-up request, excluded from metrics
	Class        string
	PromptTokens int // target prompt length in tokens
	OutputTokens int // target output length (max_tokens)
	Prompt       string
	// Task is the task id of the trace or dataset entry the request replays ("" for
	// none); a replay that wraps around the entries gives the second pass its own ids.
	Task string
}

// Calibration records how prompt lengths were hit.
type Calibration struct {
	Method        string  // "tokenize" (engine endpoint) or "estimate" (documented ratio)
	CharsPerToken float64 // characters of corpus text per token
}

// Generator produces, deterministically from the workload and its seed, the arrival
// schedule and every request. The same workload yields the same schedule, lengths and
// prompts, byte for byte (for a given calibration).
type Generator struct {
	w   *Workload
	cal Calibration
	run uint64 // run key of the salts (SetRunID); 0: none
	// dsPrompt and dsReply are the dataset's lengths as the engine's tokenizer counted
	// them (Calibrate); entries past their end use the calibrated ratio.
	dsPrompt, dsReply []int
	// unexported state owned by the implementation
	impl generatorImpl
}

// NewGenerator prepares a generator for one workload of a loaded file.
func NewGenerator(w *Workload) (*Generator, error) { return newGenerator(w) }

// SetRunID makes every salt (the opening of every prompt) depend on the run id too, so
// that a rerun of a cold workload against the same server finds nothing of the previous
// run in its prefix cache. Lengths, the schedule and the rest of every prompt do not
// change, and neither does the workload hash: the run id is recorded beside it. Call it
// before the first Request.
func (g *Generator) SetRunID(id string) {
	if id == "" {
		g.run = 0
		return
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	g.run = h.Sum64() | 1 // never 0, which means none
}

// Calibrate measures chars per token with the engine's tokenizer. Without it (or when it
// fails) prompts are cut with the documented estimate, and Calibration says so.
func (g *Generator) Calibrate(ctx context.Context, tok Tokenizer) error { return g.calibrate(ctx, tok) }

// Calibration reports how prompt lengths are hit.
func (g *Generator) Calibration() Calibration { return g.cal }

// Arrivals returns the scheduled offsets of the measured requests from the start of the
// measured window, ascending: Requests entries, or as many as fall inside Duration. It
// returns nil for a closed-loop workload.
func (g *Generator) Arrivals() []time.Duration { return g.arrivals() }

// Request returns measured request i. Any i >= 0 is valid (closed loops over a duration
// ask for as many as they send).
func (g *Generator) Request(i int) Item { return g.request(i, false) }

// WarmupRequest returns warm-up request i.
func (g *Generator) WarmupRequest(i int) Item { return g.request(i, true) }

// ThinkTime returns the think time of closed-loop user u before its n-th request.
func (g *Generator) ThinkTime(u, n int) time.Duration { return g.think(u, n) }
