package workload

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

var validDatasetFormats = []string{DatasetShareGPT, DatasetPrompts}

// dataset decodes workloads[].dataset: {format, file}. The file is read once both are
// known.
func (d *decoder) dataset(path string, n *yaml.Node) *Dataset {
	ds := &Dataset{}
	var fileNode *yaml.Node
	d.mapping(n, path, "", []field{
		{"format", func(p string, v *yaml.Node) { ds.Format = d.enum(p, v, validDatasetFormats) }},
		{"file", func(p string, v *yaml.Node) {
			ds.File = d.str(p, v)
			fileNode = v
		}},
		{"sessions", func(p string, v *yaml.Node) { ds.Sessions = d.boolean(p, v) }},
	})
	if !d.ok(join(path, "format")) || !d.ok(join(path, "file")) || ds.File == "" {
		return ds
	}
	fp := join(path, "file")
	full := d.resolvePath(ds.File)
	data, err := d.readFile(full)
	if err != nil {
		d.fail(fp, fileNode, "cannot read dataset %s: %s", full, ioReason(err))
		return ds
	}
	sum := sha256.Sum256(data)
	ds.SHA256 = hex.EncodeToString(sum[:])
	fe := &fileErrs{d: d, full: full, n: fileNode}
	if ds.Format == DatasetShareGPT {
		ds.Entries = parseShareGPT(data, fe)
	} else {
		ds.Entries = parsePrompts(data, fe)
	}
	if fe.done(fp) && len(ds.Entries) == 0 {
		d.fail(fp, fileNode, "the dataset %s holds no usable prompts", full)
	}
	return ds
}

// lineCol is the 1-based line and column of byte offset off of data.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	pre := data[:off]
	line := bytes.Count(pre, []byte{'\n'}) + 1
	return line, int(off) - (bytes.LastIndexByte(pre, '\n') + 1) + 1
}

// shareGPTEntry is one conversation of a ShareGPT-style file.
type shareGPTEntry struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// parseShareGPT reads a JSON array of conversations. As vLLM's benchmark does, the
// prompt is the first turn and the output length that of the second; conversations with
// fewer than two turns are skipped.
func parseShareGPT(data []byte, fe *fileErrs) []DatasetEntry {
	dec := json.NewDecoder(bytes.NewReader(data))
	fail := func(off int64, format string, args ...any) {
		l, c := lineCol(data, off)
		fe.add(l, c, format, args...)
	}
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		fail(dec.InputOffset(), "invalid ShareGPT file: expected a JSON array of {\"conversations\": [{\"from\": ..., \"value\": ...}, ...]}")
		return nil
	}
	var out []DatasetEntry
	for dec.More() {
		// The entry starts after the separator the decoder has yet to skip.
		start := dec.InputOffset()
		for start < int64(len(data)) && strings.ContainsRune(" \t\r\n,", rune(data[start])) {
			start++
		}
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			fail(start, "invalid ShareGPT entry: %s", jsonReason(err))
			return out // the decoder cannot resynchronize
		}
		if len(e.Conversations) < 2 || e.Conversations[0].Value == "" {
			continue
		}
		l, _ := lineCol(data, start)
		entry := DatasetEntry{Line: l, Prompt: e.Conversations[0].Value, Reply: e.Conversations[1].Value}
		// The exchanges of the conversation, in order, up to the first that lacks a
		// message or an answer.
		for j := 0; j+1 < len(e.Conversations); j += 2 {
			u, a := e.Conversations[j].Value, e.Conversations[j+1].Value
			if u == "" || a == "" {
				break
			}
			entry.Turns = append(entry.Turns, DatasetTurn{User: u, Reply: a})
		}
		out = append(out, entry)
	}
	if _, err := dec.Token(); err != nil {
		fail(dec.InputOffset(), "invalid ShareGPT file: %s", jsonReason(err))
	}
	return out
}

// promptLine is one line of a JSONL prompts file.
type promptLine struct {
	Prompt    *string `json:"prompt"`
	OutputLen *int    `json:"output_len"`
	TaskID    *taskID `json:"task_id"`
}

func parsePrompts(data []byte, fe *fileErrs) []DatasetEntry {
	var out []DatasetEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var p promptLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			fe.add(ln, jsonCol(err), "invalid prompts line: %s; expected {\"prompt\": text, \"output_len\": n, \"task_id\": id} (output_len and task_id optional)", jsonReason(err))
			continue
		}
		if p.Prompt == nil || *p.Prompt == "" {
			fe.add(ln, 1, "invalid prompts line: missing \"prompt\" (a non-empty string)")
			continue
		}
		e := DatasetEntry{Line: ln, Prompt: *p.Prompt}
		if p.OutputLen != nil {
			if *p.OutputLen < 1 || *p.OutputLen > math.MaxInt32 {
				fe.add(ln, 1, "invalid output_len %d: must be at least 1", *p.OutputLen)
				continue
			}
			e.OutputLen = *p.OutputLen
		}
		if p.TaskID != nil {
			e.Task = string(*p.TaskID)
			if why := checkTaskID(e.Task); why != "" {
				fe.add(ln, 1, "invalid prompts line: %s", why)
				continue
			}
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		fe.add(0, 0, "cannot read: %s", err)
	}
	return out
}

// needsOutputTokens reports whether some entry of ds has no output length of its own.
func (ds *Dataset) needsOutputTokens() bool {
	if ds.Format == DatasetShareGPT {
		return false
	}
	for _, e := range ds.Entries {
		if e.OutputLen == 0 {
			return true
		}
	}
	return false
}

// maxDatasetTokenize bounds the entries whose lengths are measured with the engine's
// tokenizer, one call each; the rest use the calibrated ratio.
const maxDatasetTokenize = 2000

// measureDataset counts the tokens of the dataset's prompts and replies with the engine's
// tokenizer.
func (g *Generator) measureDataset(ctx context.Context, tok Tokenizer) error {
	ds := g.w.Dataset
	n := min(len(ds.Entries), maxDatasetTokenize)
	prompt := make([]int, n)
	reply := make([]int, n)
	for i := range n {
		e := &ds.Entries[i]
		var err error
		if prompt[i], err = tok.CountTokens(ctx, e.Prompt); err != nil {
			return fmt.Errorf("workload %q: measuring dataset prompt %d (line %d) with the engine tokenizer: %w", g.w.Name, i, e.Line, err)
		}
		if e.Reply != "" {
			if reply[i], err = tok.CountTokens(ctx, e.Reply); err != nil {
				return fmt.Errorf("workload %q: measuring dataset reply %d (line %d) with the engine tokenizer: %w", g.w.Name, i, e.Line, err)
			}
		}
	}
	g.dsPrompt, g.dsReply = prompt, reply
	return nil
}

// estimateTokens is the length of text at the calibration, at least 1.
func (g *Generator) estimateTokens(text string) int {
	return max(1, int(math.Round(float64(len(text))/g.cal.CharsPerToken)))
}

// datasetRequest builds request i of a phase from dataset entry i mod n: the salt (and a
// shared prefix, where set) before the entry's prompt; lengths from the tokenizer where
// it measured them, else the calibrated ratio.
func (g *Generator) datasetRequest(phase uint64, i int, warm bool) Item {
	ds := g.w.Dataset
	k := i % len(ds.Entries)
	e := &ds.Entries[k]
	var saltBuf [40]byte
	salt := appendSalt(saltBuf[:0], g.w.Seed, g.run, phase, i)
	var b strings.Builder
	var prefix string
	if g.w.PrefixCache.Mode == PrefixShared {
		prefix = g.groupPrefix(i % g.impl.groups)
		b.WriteString(prefix)
		b.WriteByte(' ')
	}
	b.Write(salt)
	b.WriteString(e.Prompt)
	it := Item{Index: i, Warmup: warm, Prompt: b.String(), Task: passTask(e.Task, i, len(ds.Entries))}
	extra := g.estimateTokens(string(salt))
	if prefix != "" {
		extra += g.estimateTokens(prefix + " ")
	}
	if k < len(g.dsPrompt) {
		it.PromptTokens = g.dsPrompt[k] + extra
	} else {
		it.PromptTokens = g.estimateTokens(e.Prompt) + extra
	}
	switch {
	case e.OutputLen > 0:
		it.OutputTokens = e.OutputLen
	case e.Reply != "" && k < len(g.dsReply):
		it.OutputTokens = max(g.dsReply[k], 1)
	case e.Reply != "":
		it.OutputTokens = g.estimateTokens(e.Reply)
	default:
		or := newRNG(g.w.Seed, streamOutputLength, phase, uint64(i))
		it.OutputTokens = g.impl.def.output.sample(&or)
	}
	return it
}
