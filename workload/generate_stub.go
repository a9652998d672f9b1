package workload

// TEMPORARY stub so that other packages compile; replaced by the real implementation.

import (
	"context"
	"strings"
	"time"
)

type generatorImpl struct{}

func newGenerator(w *Workload) (*Generator, error) {
	return &Generator{w: w, cal: Calibration{Method: "estimate", CharsPerToken: 4}}, nil
}

func (g *Generator) calibrate(ctx context.Context, tok Tokenizer) error { return nil }

func (g *Generator) arrivals() []time.Duration {
	if g.w.Arrival.Process == ArrivalClosed {
		return nil
	}
	out := make([]time.Duration, g.w.Requests)
	for i := range out {
		out[i] = time.Duration(float64(i) / g.w.Arrival.Rate * float64(time.Second))
	}
	return out
}

func (g *Generator) request(i int, warm bool) Item {
	p := g.w.PromptTokens.Value
	o := g.w.OutputTokens.Value
	return Item{Index: i, Warmup: warm, PromptTokens: p, OutputTokens: o, Prompt: strings.Repeat("word ", p)}
}

func (g *Generator) think(u, n int) time.Duration { return g.w.Arrival.Think }
