package workload

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultCharsPerToken is the estimate used when the engine offers no tokenizer: 4.0
// characters (bytes) of English prose per token, the usual figure for the BPE tokenizers
// of current LLMs (GPT, Llama, Qwen, Mistral families). The achieved prompt lengths always
// come from the server's usage and are reported beside the targets, so an engine whose
// tokenizer differs shows it instead of hiding it.
const DefaultCharsPerToken = 4.0

// corpus is the text that prompts are cut from: Isaac Newton's Opticks (4th edition,
// 1730; public domain), the Project Gutenberg transcription with its apparatus removed and
// whitespace collapsed to single spaces (see corpus/mkcorpus.go). Real prose, because
// random token ids tokenize, attend and cache unlike what users send.
//
// It is one string: prompts are substrings of it plus a salt, built on demand.
//
//go:embed corpus/opticks.txt
var corpus string

// Prompts are cut from the corpus read as an endless loop: the book, a space, the book
// again. loopLen is the period of that loop.
var loopLen = len(corpus) + 1

func loopByte(v int) byte {
	v %= loopLen
	if v == len(corpus) {
		return ' '
	}
	return corpus[v]
}

// wordStart moves p forward to the start of a word, so that a prompt never opens inside
// a word (or inside a multi-byte character).
func wordStart(p int) int {
	p %= loopLen
	for i := 0; i < 256 && p != 0 && loopByte(p-1) != ' '; i++ {
		p = (p + 1) % loopLen
	}
	return p
}

// cutEnd returns the end (exclusive, on the loop axis) of a text of about n bytes from the
// word start `start`: the word boundary nearest to start+n, so lengths are unbiased.
func cutEnd(start, n int) int {
	if n <= 0 {
		return start
	}
	e := start + n
	back, fwd := -1, -1
	for j := e; j > start && j > e-256; j-- {
		if loopByte(j) == ' ' {
			back = j
			break
		}
	}
	for j := e; j < e+256; j++ {
		if loopByte(j) == ' ' {
			fwd = j
			break
		}
	}
	switch {
	case back < 0 && fwd < 0:
		return e // no space near: cannot happen with this corpus (longest word 78 bytes)
	case back < 0:
		return fwd
	case fwd < 0 || e-back <= fwd-e:
		return back
	}
	return fwd
}

// writeLoop writes loop bytes [start, end) to b, in as few pieces as the wrap allows.
func writeLoop(b *strings.Builder, start, end int) {
	for pos := start; pos < end; {
		off := pos % loopLen
		if off == len(corpus) {
			b.WriteByte(' ')
			pos++
			continue
		}
		n := min(end-pos, len(corpus)-off)
		b.WriteString(corpus[off : off+n])
		pos += n
	}
}

// corpusText returns about n bytes of corpus from the word at or after p.
func corpusText(p, n int) string {
	start := wordStart(p)
	end := cutEnd(start, n)
	if end <= len(corpus) {
		return corpus[start:end]
	}
	var b strings.Builder
	b.Grow(end - start)
	writeLoop(&b, start, end)
	return b.String()
}

// saltLen is the length of a salt for an index below a million.
const saltLen = len("[7f3a9c12 r000123 slogate] ")

// appendSalt appends the unique marker of request (phase, i): "[HHHHHHHH r000123 slogate] "
// for measured requests, "w000123" for warm-up ones. The hex comes first: an engine that
// caches prompt tokens one by one (llama.cpp) reuses any common opening, and a fixed
// "[slogate " first made about 15% of a short cold prompt's tokens hits on stories260K's
// tokenizer. The hex comes from (seed, run, phase,
// i), so two workloads with different seeds never share a prefix either, and two runs of
// one workload with different run keys (see Generator.SetRunID) share none: a rerun
// against the same server is as cold as the first run. The index makes it unique within
// a run. Its length does not depend on the hex, so lengths stay identical from run to run.
func appendSalt(dst []byte, seed int64, run uint64, phase uint64, i int) []byte {
	r := newRNG(seed, streamSalt, phase, uint64(i))
	if run != 0 {
		r = newRNG(seed, streamSalt, phase, uint64(i), run)
	}
	h := uint32(r.uint64() >> 32)
	dst = append(dst, '[')
	const hexDigits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(h>>uint(shift))&0xf])
	}
	if phase == phaseWarmup {
		dst = append(dst, " w"...)
	} else {
		dst = append(dst, " r"...)
	}
	for d := 100000; d > 1 && i < d; d /= 10 {
		dst = append(dst, '0')
	}
	dst = strconv.AppendInt(dst, int64(i), 10)
	return append(dst, " slogate] "...)
}

// charsFor converts tokens to corpus bytes at the current calibration.
func (g *Generator) charsFor(tokens int) int {
	return int(math.Round(float64(tokens) * g.cal.CharsPerToken))
}

// groupPrefix returns shared-prefix group grp's common text. It depends on (seed, group)
// and the calibration only, so every member of the group, warm-up requests included,
// starts with the same bytes (warm-up thereby primes the prefix cache, as real traffic
// would have).
func (g *Generator) groupPrefix(grp int) string {
	r := newRNG(g.w.Seed, streamGroupPrefix, uint64(grp))
	return corpusText(r.intN(len(corpus)), g.charsFor(g.w.PrefixCache.Tokens))
}

// prompt builds the text of request (phase, i) with a target of tokens tokens.
//
// cold:   salt + text. The salt counts toward the length.
// shared: group prefix + " " + salt + text, the group being i mod Groups. The prefix is
// Tokens tokens of corpus; the salt and the request's own text fill the rest. When the
// prefix alone reaches the target the prompt is prefix and salt only, longer than the
// target: the shared part is what the workload pins.
// rag:    run salt + the request's documents (see ragDocs) + salt + text, the same way:
// requests that drew the same leading documents share them as a prefix.
//
// Members of a group also share the salt's opening "[" (a token, less than
// one KV-cache block), so the cache-visible common prefix is the group prefix.
func (g *Generator) prompt(phase uint64, i, tokens int) string {
	var saltBuf [40]byte
	salt := appendSalt(saltBuf[:0], g.w.Seed, g.run, phase, i)
	total := g.charsFor(tokens)

	var prefix string
	switch g.w.PrefixCache.Mode {
	case PrefixShared:
		prefix = g.groupPrefix(i % g.impl.groups)
	case PrefixRAG:
		prefix = g.ragPrefix(phase, i)
	}
	own := total - len(salt)
	if prefix != "" {
		own -= len(prefix) + 1
	}
	r := newRNG(g.w.Seed, streamPromptText, phase, uint64(i))
	start := wordStart(r.intN(len(corpus)))
	end := start
	if own > 0 {
		end = cutEnd(start, own)
	}

	var b strings.Builder
	b.Grow(len(prefix) + 1 + len(salt) + end - start)
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteByte(' ')
	}
	b.Write(salt)
	writeLoop(&b, start, end)
	return b.String()
}

// runSaltLen is the length of a run salt.
const runSaltLen = len("[slogate 7f3a9c12] ")

// appendRunSalt appends "[slogate HHHHHHHH] ", the hex from (seed, run) only: the opening
// that every prompt of a block-structured trace shares within a run, so that blocks are
// shared between its requests and with no other run or seed.
func appendRunSalt(dst []byte, seed int64, run uint64) []byte {
	r := newRNG(seed, streamRunSalt)
	if run != 0 {
		r = newRNG(seed, streamRunSalt, run)
	}
	h := uint32(r.uint64() >> 32)
	dst = append(dst, "[slogate "...)
	const hexDigits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(h>>uint(shift))&0xf])
	}
	return append(dst, "] "...)
}

// blockText is the text of hash id h of a block-structured trace: about BlockTokens
// tokens of corpus and a space, from (seed, h) and the calibration only.
func (g *Generator) blockText(h int64) string {
	r := newRNG(g.w.Seed, streamBlock, uint64(h))
	return corpusText(r.intN(len(corpus)), g.charsFor(g.w.Arrival.BlockTokens)) + " "
}

// blockPrompt builds the prompt of a trace entry with hash ids (Mooncake): the run salt,
// then block j's text for each id, the last block cut to what the entry's length leaves
// (a cut block is a prefix of the whole one, as a partial KV block is); an entry longer
// than its blocks ends with text of its own. Two entries whose first k ids agree share
// their first k blocks byte for byte, so the engine's prefix cache sees the trace's
// block-level sharing. The salt counts toward the first block.
func (g *Generator) blockPrompt(phase uint64, i int, rec *TraceRecord) string {
	var saltBuf [32]byte
	salt := appendRunSalt(saltBuf[:0], g.w.Seed, g.run)
	var b strings.Builder
	b.Grow(g.charsFor(rec.Input) + 64)
	b.Write(salt)
	left := g.charsFor(rec.Input) - len(salt)
	for j, h := range rec.Blocks {
		if left <= 0 {
			break
		}
		text := g.blockText(h)
		if j == 0 && len(text) > len(salt) {
			// The salt takes the first block's opening bytes, the same in every entry.
			text = text[:len(text)-len(salt)]
		}
		if len(text) > left {
			text = text[:runeStart(text, left)]
		}
		b.WriteString(text)
		left -= len(text)
	}
	if left > 0 {
		r := newRNG(g.w.Seed, streamPromptText, phase, uint64(i))
		start := wordStart(r.intN(len(corpus)))
		writeLoop(&b, start, cutEnd(start, left))
	}
	return b.String()
}

// runeStart moves n back to the start of a UTF-8 character of s.
func runeStart(s string, n int) int {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return n
}

// calibrationWindows are the sizes (bytes) of corpus text sent to the tokenizer: short and
// long windows, since tokenizers that add special tokens weigh more on short texts.
var calibrationWindows = []int{256, 1024, 4096}

// calibrationPositions are where in the book the windows start (fractions of its length):
// the book's front matter, prose, tables and queries tokenize differently.
var calibrationPositions = []float64{0.05, 0.35, 0.65, 0.9}

func (g *Generator) calibrate(ctx context.Context, tok Tokenizer) error {
	estimate := Calibration{Method: "estimate", CharsPerToken: DefaultCharsPerToken}
	g.cal = estimate
	if tok == nil {
		return nil
	}
	chars, tokens := 0, 0
	for k, size := range calibrationWindows {
		for j, frac := range calibrationPositions {
			// Shift each size a little so no two windows start at the same word.
			p := int(frac*float64(len(corpus))) + (k*len(calibrationPositions)+j)*997
			text := corpusText(p, size)
			n, err := tok.CountTokens(ctx, text)
			if err != nil {
				return fmt.Errorf("workload %q: calibrating prompt lengths with the engine tokenizer (keeping %.1f chars/token): %w",
					g.w.Name, DefaultCharsPerToken, err)
			}
			chars += len(text)
			tokens += n
		}
	}
	if tokens <= 0 {
		return fmt.Errorf("workload %q: the engine tokenizer counted %d tokens in %d chars (keeping %.1f chars/token)",
			g.w.Name, tokens, chars, DefaultCharsPerToken)
	}
	ratio := float64(chars) / float64(tokens)
	if ratio < 0.5 || ratio > 20 {
		return fmt.Errorf("workload %q: the engine tokenizer gives %.2f chars/token (%d chars, %d tokens), outside 0.5..20 (keeping %.1f chars/token)",
			g.w.Name, ratio, chars, tokens, DefaultCharsPerToken)
	}
	g.cal = Calibration{Method: "tokenize", CharsPerToken: ratio}
	if g.w.Dataset != nil {
		return g.measureDataset(ctx, tok)
	}
	return nil
}
