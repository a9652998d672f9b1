package workload

import (
	"errors"
	"fmt"
	"math"
)

// generatorImpl is what a Generator precomputes from its workload: samplers and the rate
// curve. Nothing in it changes after construction, so Request may be called from many
// goroutines at once.
type generatorImpl struct {
	def     classGen   // the workload's own lengths
	classes []classGen // the mix, with cumulative weights; empty when there is none
	total   float64    // sum of class weights
	curve   rateCurve  // open loop, not trace: the rate over time
	shape   float64    // gamma shape k
	groups  int        // shared prefix: number of groups
	docCum  []float64  // rag: cumulative document popularity, summing to 1
	// sessions: the number of turns, and each turn's new message and answer lengths
	turns, user, output sampler
}

// classGen is one class ready to sample.
type classGen struct {
	name           string
	cum            float64 // cumulative weight up to and including this class
	prompt, output sampler
}

func newGenerator(w *Workload) (*Generator, error) {
	if w == nil {
		return nil, errors.New("workload: nil workload")
	}
	g := &Generator{w: w, cal: Calibration{Method: "estimate", CharsPerToken: DefaultCharsPerToken}}
	fail := func(err error) (*Generator, error) {
		return nil, fmt.Errorf("workload %q: %w", w.Name, err)
	}
	var err error
	im := &g.impl
	if w.Sessions != nil {
		if len(w.Classes) > 0 || w.Arrival.HasLengths() || w.Arrival.Process == ArrivalClosed {
			return fail(fmt.Errorf("sessions need an open-loop arrival of session starts, and no classes"))
		}
		if err := g.newSessionSamplers(); err != nil {
			return fail(err)
		}
	} else if w.Arrival.HasLengths() {
		// The trace gives every request's lengths; no distribution is sampled.
		if len(w.Arrival.Records) == 0 || len(w.Classes) > 0 {
			return fail(fmt.Errorf("a %s trace needs its loaded records and no classes", w.Arrival.Format))
		}
		if w.Arrival.Format == TraceMooncake && w.Arrival.BlockTokens < 1 {
			return fail(fmt.Errorf("mooncake trace: block_tokens %d must be >= 1", w.Arrival.BlockTokens))
		}
	} else if w.Dataset != nil {
		// The dataset gives the prompts; output_tokens covers entries without a length.
		if len(w.Dataset.Entries) == 0 || len(w.Classes) > 0 {
			return fail(fmt.Errorf("a dataset needs its loaded entries and no classes"))
		}
		if w.Dataset.needsOutputTokens() {
			if im.def.output, err = newSampler(w.OutputTokens); err != nil {
				return fail(fmt.Errorf("output_tokens: %w", err))
			}
		}
	} else {
		if im.def.prompt, err = newSampler(w.PromptTokens); err != nil {
			return fail(fmt.Errorf("prompt_tokens: %w", err))
		}
		if im.def.output, err = newSampler(w.OutputTokens); err != nil {
			return fail(fmt.Errorf("output_tokens: %w", err))
		}
	}
	for _, c := range w.Classes {
		if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
			return fail(fmt.Errorf("class %q: weight %v must be > 0", c.Name, c.Weight))
		}
		cg := classGen{name: c.Name, prompt: im.def.prompt, output: im.def.output}
		// The loader fills inherited lengths; a class built in code with no length of
		// its own falls back to the workload's.
		if c.PromptTokens.Dist != "" || c.PromptTokens.Value != 0 {
			if cg.prompt, err = newSampler(c.PromptTokens); err != nil {
				return fail(fmt.Errorf("class %q prompt_tokens: %w", c.Name, err))
			}
		}
		if c.OutputTokens.Dist != "" || c.OutputTokens.Value != 0 {
			if cg.output, err = newSampler(c.OutputTokens); err != nil {
				return fail(fmt.Errorf("class %q output_tokens: %w", c.Name, err))
			}
		}
		im.total += c.Weight
		cg.cum = im.total
		im.classes = append(im.classes, cg)
	}

	switch w.Arrival.Process {
	case ArrivalConstant, ArrivalPoisson, ArrivalGamma:
		if im.curve, err = newRateCurve(w.Arrival); err != nil {
			return fail(err)
		}
		im.shape = w.Arrival.Burstiness
		if im.shape == 0 {
			im.shape = 1
		}
		if !(im.shape > 0) || math.IsInf(im.shape, 0) {
			return fail(fmt.Errorf("arrival burstiness %v: must be > 0", w.Arrival.Burstiness))
		}
	case ArrivalTrace, ArrivalClosed:
	default:
		return fail(fmt.Errorf("arrival process %q: expected one of %q, %q, %q, %q, %q", w.Arrival.Process,
			ArrivalConstant, ArrivalPoisson, ArrivalGamma, ArrivalTrace, ArrivalClosed))
	}

	switch w.PrefixCache.Mode {
	case "", PrefixCold, PrefixWarm:
	case PrefixRAG:
		pc := w.PrefixCache
		if pc.Documents < 1 || pc.DocsPerRequest < 1 || pc.DocsPerRequest > pc.Documents || pc.DocTokens < 1 || !(pc.Zipf >= 0) {
			return fail(fmt.Errorf("prefix_cache rag: documents %d, docs_per_request %d, doc_tokens %d, zipf %v: need 1 <= docs_per_request <= documents, doc_tokens >= 1, zipf >= 0",
				pc.Documents, pc.DocsPerRequest, pc.DocTokens, pc.Zipf))
		}
		im.docCum = zipfWeights(pc.Documents, pc.Zipf)
		for k := 1; k < len(im.docCum); k++ {
			im.docCum[k] += im.docCum[k-1]
		}
	case PrefixShared:
		if w.PrefixCache.Tokens < 1 {
			return fail(fmt.Errorf("prefix_cache shared: tokens %d must be >= 1", w.PrefixCache.Tokens))
		}
		if w.PrefixCache.Groups < 0 {
			return fail(fmt.Errorf("prefix_cache shared: groups %d must be >= 1", w.PrefixCache.Groups))
		}
	default:
		return fail(fmt.Errorf("prefix_cache mode %q: expected %q, %q, %q or %q", w.PrefixCache.Mode, PrefixCold, PrefixShared, PrefixRAG, PrefixWarm))
	}
	im.groups = max(w.PrefixCache.Groups, 1)
	return g, nil
}

// request builds request i of a phase. Every value comes from streams keyed by (seed,
// phase, i) only, never from a shared sequence, so any order of calls (closed-loop users
// racing each other, shards) yields the same items.
func (g *Generator) request(i int, warm bool) Item {
	phase := phaseMeasured
	if warm {
		phase = phaseWarmup
	}
	seed := g.w.Seed
	if g.w.Sessions != nil {
		return g.sessionRequest(phase, i, warm)
	}
	if a := &g.w.Arrival; a.HasLengths() && len(a.Records) > 0 {
		// A trace with lengths: request i is entry i (warm-up requests replay the
		// entries from the first, in their own phase).
		rec := &a.Records[i%len(a.Records)]
		it := Item{Index: i, Warmup: warm, PromptTokens: rec.Input, OutputTokens: rec.Output, Task: passTask(rec.Task, i, len(a.Records))}
		if len(rec.Blocks) > 0 {
			it.Prompt = g.blockPrompt(phase, i, rec)
		} else {
			it.Prompt = g.prompt(phase, i, rec.Input)
		}
		return it
	}
	if g.w.Dataset != nil {
		return g.datasetRequest(phase, i, warm)
	}
	cls := &g.impl.def
	if len(g.impl.classes) > 0 {
		r := newRNG(seed, streamClass, phase, uint64(i))
		x := r.float64() * g.impl.total
		cls = &g.impl.classes[len(g.impl.classes)-1] // rounding at the top end
		for k := range g.impl.classes {
			if x < g.impl.classes[k].cum {
				cls = &g.impl.classes[k]
				break
			}
		}
	}
	pr := newRNG(seed, streamPromptLength, phase, uint64(i))
	or := newRNG(seed, streamOutputLength, phase, uint64(i))
	it := Item{
		Index:        i,
		Warmup:       warm,
		Class:        cls.name,
		PromptTokens: cls.prompt.sample(&pr),
		OutputTokens: cls.output.sample(&or),
	}
	it.Prompt = g.prompt(phase, i, it.PromptTokens)
	return it
}
