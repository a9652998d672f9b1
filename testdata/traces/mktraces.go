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
//   - bad_mooncake.jsonl, bad_azure.csv: malformed lines and an unknown header.
package main

import (
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
