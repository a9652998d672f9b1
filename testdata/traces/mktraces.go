//go:build ignore

// mktraces writes the small synthesized trace and dataset files of this directory, one
// per format slogate replays, from a fixed seed (nothing here is downloaded):
//
//	go run ./testdata/traces/mktraces.go testdata/traces
//
// The files:
//   - mooncake.jsonl: Mooncake trace lines, timestamp (ms), input_length, output_length
//     and hash_ids (one id per 512-token block; ids are chained, so a shared id at
//     position j means the first j+1 blocks are the same text). Requests reuse a prefix
//     of one of a few "document" roots, so blocks are shared.
//   - azure.csv: the Azure LLM inference trace, TIMESTAMP, ContextTokens, GeneratedTokens.
//   - burstgpt.csv: BurstGPT, Timestamp, Model, Request tokens, Response tokens, Total
//     tokens, Log Type (with a few failed requests of 0 response tokens).
//   - sharegpt.json: ShareGPT-style conversations, [{"id", "conversations": [{"from",
//     "value"}, ...]}], a few with a single turn (skipped, as vLLM's benchmark does).
//   - prompts.jsonl: {"prompt": text, "output_len": n}, output_len left out on some lines.
//   - bad_mooncake.jsonl, bad_azure.csv, bad_prompts.jsonl: malformed lines and an
//     unknown header.
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const lines = 300

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mktraces DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	r := rand.New(rand.NewPCG(16, 2026))
	write(dir, "mooncake.jsonl", mooncake(r))
	write(dir, "azure.csv", azure(r))
	write(dir, "burstgpt.csv", burstgpt(r))
	write(dir, "bad_mooncake.jsonl", `{"timestamp": 0, "input_length": 700, "output_length": 20, "hash_ids": [0, 1]}
{"timestamp": 120, "input_length": 900, "output_length": 20, "hash_ids": [0, 2]}
{"timestamp": 250, "input_length": "many", "output_length": 20, "hash_ids": [3]}
{"timestamp": 300, "input_length": 100, "output_length": 20, "hash_ids": [4]
`)
	write(dir, "sharegpt.json", sharegpt(r))
	write(dir, "prompts.jsonl", prompts(r))
	write(dir, "bad_prompts.jsonl", `{"prompt": "Explain the rainbow.", "output_len": 40}
{"prompt": "What bends light?", "output_len": "long"}
{"output_len": 12}
`)
	write(dir, "bad_azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens,Prompt\n2023-11-16 18:15:46.6805900,374,44,hello\n")
}

func write(dir, name, s string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func mooncake(r *rand.Rand) string {
	next := int64(0)
	newID := func() int64 { next++; return next - 1 }
	// Eight document roots of 2 to 6 blocks, drawn with Zipf-like weights 1/(k+1).
	roots := make([][]int64, 8)
	var cum []float64
	total := 0.0
	for k := range roots {
		for range 2 + r.IntN(5) {
			roots[k] = append(roots[k], newID())
		}
		total += 1 / float64(k+1)
		cum = append(cum, total)
	}
	var b strings.Builder
	ms := 0.0
	for range lines {
		var ids []int64
		if r.Float64() < 0.7 {
			x := r.Float64() * total
			k := 0
			for cum[k] < x {
				k++
			}
			ids = append(ids, roots[k][:1+r.IntN(len(roots[k]))]...)
			for range 1 + r.IntN(3) {
				ids = append(ids, newID())
			}
		} else {
			for range 1 + r.IntN(8) {
				ids = append(ids, newID())
			}
		}
		// The last block is partial, as in the published trace.
		in := len(ids)*512 - 1 - r.IntN(400)
		out := 8 + r.IntN(250)
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, int64(ms), in, out)
		for j, id := range ids {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, id)
		}
		b.WriteString("]}\n")
		ms += r.ExpFloat64() * 200
	}
	return b.String()
}

func azure(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	t := time.Date(2023, 11, 16, 18, 15, 46, 680590000, time.UTC)
	for range lines {
		in := int(r.ExpFloat64()*1500) + 20
		in = min(in, 6000)
		out := int(r.ExpFloat64()*200) + 5
		out = min(out, 1000)
		fmt.Fprintf(&b, "%s,%d,%d\n", t.Format("2006-01-02 15:04:05.0000000"), in, out)
		t = t.Add(time.Duration(r.ExpFloat64() * float64(150*time.Millisecond)))
	}
	return b.String()
}

func burstgpt(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	ts := 5.0
	for i := range lines {
		model := "ChatGPT"
		if r.Float64() < 0.2 {
			model = "GPT-4"
		}
		logType := "Conversation log"
		if r.Float64() < 0.3 {
			logType = "API log"
		}
		in := int(r.ExpFloat64()*600) + 10
		in = min(in, 6000)
		out := int(r.ExpFloat64()*250) + 1
		out = min(out, 1000)
		if i%50 == 49 {
			out = 0 // a failed request, as BurstGPT_1.csv keeps them
		}
		fmt.Fprintf(&b, "%d,%s,%d,%d,%d,%s\n", int64(ts), model, in, out, in+out, logType)
		ts += r.ExpFloat64() * 0.4
	}
	return b.String()
}

var words = strings.Fields(`light ray prism colour refraction lens glass sun eye image
	red violet green blue yellow angle experiment reflection white beam shadow mirror
	water crystal spectrum theory motion body medium figure line point circle edge
	the a of and to in is that it for with as on by this which be are from or`)

func sentence(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[r.IntN(len(words))]
	}
	return strings.ToUpper(ws[0][:1]) + strings.Join(ws, " ")[1:] + "."
}

func text(r *rand.Rand, words int) string {
	var parts []string
	for words > 0 {
		n := min(words, 6+r.IntN(12))
		parts = append(parts, sentence(r, n))
		words -= n
	}
	return strings.Join(parts, " ")
}

func sharegpt(r *rand.Rand) string {
	type msg struct {
		From  string `json:"from"`
		Value string `json:"value"`
	}
	type conv struct {
		ID            string `json:"id"`
		Conversations []msg  `json:"conversations"`
	}
	var out []conv
	for i := range 200 {
		c := conv{ID: fmt.Sprintf("conv-%03d", i)}
		turns := 2 + 2*r.IntN(3)
		if i%40 == 39 {
			turns = 1
		}
		for t := range turns {
			from, n := "human", 10+int(r.ExpFloat64()*120)
			if t%2 == 1 {
				from, n = "gpt", 20+int(r.ExpFloat64()*150)
			}
			c.Conversations = append(c.Conversations, msg{from, text(r, min(n, 1200))})
		}
		out = append(out, c)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func prompts(r *rand.Rand) string {
	var b strings.Builder
	for i := range 300 {
		line := map[string]any{"prompt": text(r, 10+int(r.ExpFloat64()*200))}
		if i%5 != 4 {
			line["output_len"] = 8 + r.IntN(200)
		}
		j, err := json.Marshal(line)
		if err != nil {
			panic(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
