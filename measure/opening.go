package measure

import (
	"context"
	"fmt"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// OpeningPrompts is how many of a run's prompts MeasureOpening renders. Each opens with
// its own salt, whose first hex digit two prompts share one time in 16: the common
// prefix of three is one token too long one time in 256.
const OpeningPrompts = 3

// PromptRenderer renders a prompt as the engine serves it (engine.Client).
type PromptRenderer interface {
	PromptTokenIDs(ctx context.Context, api, prompt string) ([]int, error)
}

// MeasureOpening measures the opening every prompt of a cold run shares on this engine:
// it renders the run's first OpeningPrompts measured prompts through the engine's own
// tokenizer and chat template, takes their common token prefix, and rounds it down to
// whole KV blocks (a prefix cache serves only full blocks). Nothing is sent to the
// serving path, so the cache is as the run will find it. An engine that cannot render
// prompts gives an opening of method "none" that says why.
func MeasureOpening(ctx context.Context, rr PromptRenderer, gen *workload.Generator, w *workload.Workload, api string, id *engine.Identity) *result.Opening {
	block := max(id.KVBlockSize, 1)
	none := func(why string) *result.Opening {
		return &result.Opening{Method: result.OpeningNone, BlockSize: block, Detail: why}
	}
	switch {
	case w.Sessions != nil:
		return none("a session workload's prompts are built turn by turn; the opening is not measured")
	case !hasTokenizer(id.Engine):
		return none(fmt.Sprintf("%s cannot render a prompt as it serves it (no tokenize endpoint)", id.Engine))
	}
	var common []int
	for i := range OpeningPrompts {
		ids, err := rr.PromptTokenIDs(ctx, api, gen.Request(i).Prompt)
		if err != nil {
			return none("rendering the run's prompts: " + err.Error())
		}
		if i == 0 {
			common = ids
			continue
		}
		n := 0
		for n < len(common) && n < len(ids) && common[n] == ids[n] {
			n++
		}
		common = common[:n]
	}
	return &result.Opening{Method: result.OpeningTokenize, Common: len(common), BlockSize: block, Tokens: len(common) / block * block}
}

// hasTokenizer says whether an engine answers POST /tokenize (engine.Client.CountTokens
// and PromptTokenIDs): vLLM (and SGLang, detected as it), llama.cpp and the simulator.
func hasTokenizer(name string) bool {
	return name == engine.EngineVLLM || name == engine.EngineLlamaCpp || name == engine.EngineSim
}
