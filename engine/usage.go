package engine

import (
	"fmt"
	"strings"
)

// Usage checks. A server's usage is what token counts (and so TPOT and tokens/s) come
// from, so a count that contradicts what the client saw is flagged rather than believed:
// a server that reports 10^12 output tokens would otherwise turn into a TPOT of 0.
const (
	// UsageSlack is how far completion_tokens may exceed max_tokens before it is
	// flagged: some servers count a stop token or a template's end marker beyond the
	// limit.
	UsageSlack = 16
	// PromptSlack is how far prompt_tokens may exceed the prompt's length in bytes (no
	// tokenizer makes more than one token of a byte) before it is flagged: room for a
	// chat template, a system prompt and special tokens.
	PromptSlack = 1024
)

// checkUsage compares the usage in res with what was sent and seen, and flags a count
// that cannot be right (Result.UsageFlag): an output count above max_tokens + UsageSlack
// or below the number of content chunks (every content chunk carries at least one
// token) is replaced by the chunk count; a prompt count above the prompt's bytes +
// PromptSlack, or zero for a non-empty prompt, is replaced by 0 (unknown).
func checkUsage(req *Request, res *Result) {
	if !res.UsageReported {
		return
	}
	var why []string
	switch {
	case req.MaxTokens > 0 && res.OutputTokens > req.MaxTokens+UsageSlack:
		why = append(why, fmt.Sprintf("completion_tokens %d > max_tokens %d + %d", res.OutputTokens, req.MaxTokens, UsageSlack))
	case res.OutputTokens < res.Chunks:
		why = append(why, fmt.Sprintf("completion_tokens %d < %d content chunks", res.OutputTokens, res.Chunks))
	}
	if len(why) > 0 {
		why[0] += fmt.Sprintf(": the chunk count %d is used", res.Chunks)
		res.OutputTokens = res.Chunks
		res.ChunkTokens = res.ChunkTokens[:0] // counted by the same server
	}
	if n := len(req.Prompt); n > 0 && (res.PromptTokens == 0 || res.PromptTokens > n+PromptSlack) {
		why = append(why, fmt.Sprintf("prompt_tokens %d for a prompt of %d bytes: recorded as 0 (unknown)", res.PromptTokens, n))
		res.PromptTokens = 0
	}
	if res.CachedReported && res.CachedTokens > res.PromptTokens {
		why = append(why, fmt.Sprintf("cached_tokens %d > prompt_tokens %d: not recorded", res.CachedTokens, res.PromptTokens))
		res.CachedTokens, res.CachedReported = 0, false
	}
	res.UsageFlag = strings.Join(why, "; ")
}
