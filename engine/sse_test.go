package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseChunk(t *testing.T) {
	t.Parallel()
	type want struct {
		content            bool
		finish             string // "" for none
		usage              bool
		prompt, completion int
		err                bool // a top-level error value
	}
	tests := []struct {
		name    string
		payload string
		want    want
	}{
		// The plain shapes of the hot path.
		{"vllm completions token",
			`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`,
			want{content: true}},
		{"vllm chat token",
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`,
			want{content: true}},
		// Empty text mid-stream and in the finish chunk is not generated text.
		{"empty text",
			`{"choices":[{"text":"","index":0,"finish_reason":null}]}`,
			want{}},
		// llama.cpp's first chat chunk: a role and a null content.
		{"role-only delta",
			`{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}]}`,
			want{}},
		// An escaped quote must not end the string early; what follows still parses.
		{"escaped quotes in content",
			`{"choices":[{"text":"say \"hi\" \"","finish_reason":"stop"}]}`,
			want{content: true, finish: "stop"}},
		// A string ending in an escaped backslash: the quote after \\ does end it.
		{"escaped backslash before the closing quote",
			`{"choices":[{"text":"C:\\dir\\","finish_reason":"length"}]}`,
			want{content: true, finish: "length"}},
		// Keys inside a string value are text, not keys.
		{"key named text inside a content string",
			`{"choices":[{"delta":{"content":"\"text\":\"x\",\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":9}"},"finish_reason":null}]}`,
			want{content: true}},
		{"key named text inside another string of an empty chunk",
			`{"choices":[{"text":"","note":"\"text\":\"x\"","finish_reason":null}]}`,
			want{}},
		// Nested objects (llama.cpp timings, logprobs) before choices, with a decoy
		// choices array inside them.
		{"nested objects before choices",
			`{"timings":{"a":{"b":[1,{"choices":[{"text":"x"}]},"]}"]},"n":-1.5e3},"logprobs":{"content":[{"token":"x","bytes":[120]}]},"choices":[{"text":"","finish_reason":null}]}`,
			want{}},
		{"logprobs object inside the choice",
			`{"choices":[{"index":0,"logprobs":{"tokens":["a"],"top_logprobs":[{"a":-0.1}]},"text":"a","finish_reason":null}]}`,
			want{content: true}},
		// Unicode escapes decode to at least one character, NUL included.
		{"unicode escape NUL", `{"choices":[{"text":"\u0000"}]}`, want{content: true}},
		{"surrogate pair", `{"choices":[{"delta":{"content":"\ud83d\ude00"}}]}`, want{content: true}},
		// Reasoning models stream thoughts before content (vLLM, DeepSeek, Ollama).
		{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"Let me"}}]}`, want{content: true}},
		{"reasoning", `{"choices":[{"delta":{"reasoning":"Let me","content":null}}]}`, want{content: true}},
		// Tool-call arguments are generated; an empty tool_calls list is not.
		{"tool call delta", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}}]}`, want{content: true}},
		{"empty tool_calls", `{"choices":[{"delta":{"content":"","tool_calls":[ ]}}]}`, want{}},
		// llama.cpp: usage (and timings) in the finish chunk.
		{"llama.cpp finish chunk",
			`{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"completion_tokens":20,"prompt_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"prompt_ms":1.486}}`,
			want{finish: "length", usage: true, prompt: 5, completion: 20}},
		// Ollama: a zero usage in every chunk, then choices [] with the real one.
		{"ollama zero usage", `{"choices":[{"text":",","index":0,"finish_reason":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			want{content: true, usage: true}},
		{"ollama final usage", `{"id":"cmpl-831","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":40,"total_tokens":45}}`,
			want{usage: true, prompt: 5, completion: 40}},
		// Only choices[0] counts (n=1 requests); others are skipped, not misread.
		{"second choice ignored", `{"choices":[{"text":""},{"text":"x","finish_reason":"stop"}]}`, want{}},
		{"text outside choices", `{"text":"x","choices":[{"text":""}]}`, want{}},
		// Pretty-printed JSON (a proxy might re-encode).
		{"whitespace everywhere", "{ \"choices\" :\t[ { \"text\" : \"a\" ,\r\n \"finish_reason\" : \"stop\" } ] ,\n \"usage\" : { \"prompt_tokens\" : 3 , \"completion_tokens\" : 4 } }",
			want{content: true, finish: "stop", usage: true, prompt: 3, completion: 4}},
		// A float count, seen from proxies that re-encode numbers.
		{"float count", `{"usage":{"prompt_tokens":5.0,"completion_tokens":7e0}}`, want{usage: true, prompt: 5, completion: 7}},
		// In-stream errors: vLLM/SGLang objects, TGI strings, ErrorResponse objects.
		{"error object", `{"error":{"object":"error","message":"boom","type":"InternalServerError","code":500}}`, want{err: true}},
		{"error string", `{"error":"Request failed during generation","error_type":"generation"}`, want{err: true}},
		{"object error", `{"object":"error","message":"boom","type":"BadRequestError","code":400}`, want{err: true}},
		{"null error is no error", `{"error":null,"choices":[{"text":"a"}]}`, want{content: true}},
		// A repeated key overrides, as in encoding/json.
		{"repeated choices", `{"choices":[{"text":"a"}],"choices":[{"text":""}]}`, want{}},
		// An escaped key is the same key.
		{"escaped key", `{"ch\u006fices":[{"te\u0078t":"a"}]}`, want{content: true}},
		{"escaped finish reason", `{"choices":[{"finish_reason":"st\u006fp"}]}`, want{finish: "stop"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.payload)) {
				t.Fatalf("test payload is not valid JSON")
			}
			var c chunkInfo
			if err := parseChunk([]byte(tc.payload), &c); err != nil {
				t.Fatalf("parseChunk: %v", err)
			}
			got := want{content: c.content, usage: c.usage, prompt: c.prompt, completion: c.completion, err: c.errVal != nil}
			if c.finish != nil {
				got.finish = finishReason(c.finish)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseChunkMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p      string
		reject bool
	}{
		{`{"choices":[{"text":"ab`, true},          // cut inside a string
		{`{"choices":[{"text":"a\"}]}`, true},      // the only quote after "a is escaped
		{`{"choices":[{"text":"a"}]`, true},        // missing the last brace
		{`{"choices":[{"text":"a"}]}x`, true},      // trailing bytes
		{`["choices"]`, true},                      // valid JSON, but not an object
		{`null`, true},                             // valid JSON, but not an object
		{`{"choices" [{"text":"a"}]}`, true},       // missing colon
		{`{"choices":[{"text":"a"} {}]}`, true},    // missing comma
		{`{"usage":{"prompt_tokens":}}`, true},     // missing value
		{`{"choices":[{"text":"a"}],}`, true},      // trailing comma before the brace
		{`{choices:[]}`, true},                     // unquoted key
		{`{"a":{"b":[1,2}`, true},                  // unbalanced
		{``, true},                                 // empty
		{`{"usage":{"prompt_tokens":"-"}}`, false}, // a string count is 0, not an error
		{`{"choices":5,"usage":[]}`, false},        // wrong types read as absent
	} {
		var c chunkInfo
		if err := parseChunk([]byte(tc.p), &c); (err != nil) != tc.reject {
			t.Errorf("%q: error %v, want rejected %v", tc.p, err, tc.reject)
		}
	}
}

// refChunk is what encoding/json says a payload holds, the oracle for the scanner.
func refChunk(p []byte) (chunkInfo, string, bool) {
	var top map[string]any
	if json.Unmarshal(p, &top) != nil || top == nil {
		return chunkInfo{}, "", false
	}
	var c chunkInfo
	var finish string
	nonEmpty := func(v any) bool { s, ok := v.(string); return ok && s != "" }
	if ch, ok := top["choices"].([]any); ok && len(ch) > 0 {
		if first, ok := ch[0].(map[string]any); ok {
			c.content = nonEmpty(first["text"])
			if d, ok := first["delta"].(map[string]any); ok {
				tc, _ := d["tool_calls"].([]any)
				c.content = c.content || nonEmpty(d["content"]) || nonEmpty(d["reasoning_content"]) ||
					nonEmpty(d["reasoning"]) || len(tc) > 0
			}
			if f, ok := first["finish_reason"].(string); ok {
				finish = f
				c.finish = []byte{}
			}
		}
	}
	if u, ok := top["usage"].(map[string]any); ok {
		c.usage = true
		num := func(v any) int {
			f, ok := v.(float64)
			if !ok || f < 0 {
				return 0
			}
			return int(min(f, maxCount))
		}
		c.prompt, c.completion = num(u["prompt_tokens"]), num(u["completion_tokens"])
		if d, ok := u["prompt_tokens_details"].(map[string]any); ok {
			if _, isNum := d["cached_tokens"].(float64); isNum {
				c.cached, c.cachedOK = num(d["cached_tokens"]), true
			}
		}
	}
	if top["error"] != nil || top["object"] == "error" {
		c.errVal = []byte{}
	}
	return c, finish, true
}

// FuzzParseChunk checks the scanner against encoding/json on every valid input, and
// that no input makes it panic. The seeds are the captured fixtures and the table rows.
func FuzzParseChunk(f *testing.F) {
	for _, name := range fixtureFiles(f) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := dataPayload([]byte(strings.TrimRight(line, "\r"))); ok {
				f.Add(p)
			}
		}
	}
	for _, p := range benchChunks {
		f.Add([]byte(p.payload))
	}
	f.Add([]byte(`{"choices":[{"text":"\"text\":\"x\"","finish_reason":"st\\op"}],"error":null}`))
	f.Add([]byte(`{"ch\u006fices":[{"delta":{"tool_calls":[{}],"content":""}}],"usage":{"prompt_tokens":1e3}}`))
	f.Add([]byte(`{"choices":[],"usage":{"prompt_tokens":40,"prompt_tokens_details":{"cached_tokens":32,"cached_tokens":"x"},"completion_tokens":3}}`))
	f.Add([]byte(`{"choices":[],"usage":{"prompt_tokens_details":null,"prompt_tokens":4}}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		var c chunkInfo
		err := parseChunk(p, &c)
		want, wantFinish, valid := refChunk(p)
		if !valid {
			return
		}
		if err != nil {
			t.Fatalf("valid JSON rejected: %v\n%s", err, p)
		}
		gotFinish := ""
		if c.finish != nil {
			gotFinish = finishReason(c.finish)
			if len(wantFinish) > 64 || strings.ContainsFunc(wantFinish, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd || (r >= 0x80 && r < 0xa0) }) || strings.TrimSpace(wantFinish) != wantFinish {
				// finishReason cleans and caps what it keeps; only presence is comparable.
				gotFinish, wantFinish = "x", "x"
			}
		}
		if c.content != want.content || (c.finish != nil) != (want.finish != nil) || gotFinish != wantFinish ||
			c.usage != want.usage || c.prompt != want.prompt || c.completion != want.completion ||
			c.cached != want.cached || c.cachedOK != want.cachedOK ||
			(c.errVal != nil) != (want.errVal != nil) {
			t.Fatalf("scanner %+v finish %q, encoding/json %+v finish %q\n%s", c, gotFinish, want, wantFinish, p)
		}
	})
}

func fixtureFiles(tb testing.TB) []string {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join("..", "testdata", "sse", "sse_*.txt"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no fixtures in ../testdata/sse: %v", err)
	}
	return names
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		maxLine int
		maxBody int64
		want    []string
		wantErr error
	}{
		// LF and CRLF endings, and a blank line (the SSE event boundary).
		{"lf and crlf", "a\nb\r\n\r\nc\n", 10, 100, []string{"a", "b", "", "c"}, io.EOF},
		// A last line without a newline is still delivered before EOF.
		{"unterminated last line", "a\nbc", 10, 100, []string{"a", "bc"}, io.EOF},
		// A line of exactly the cap passes; one byte more fails.
		{"line at the cap", "abcd\nx\n", 4, 100, []string{"abcd", "x"}, io.EOF},
		{"line over the cap", "abcd\nabcde\n", 4, 100, []string{"abcd"}, errTooLarge},
		{"unterminated line over the cap", "abcdefgh", 4, 100, nil, errTooLarge},
		// The body cap counts every byte, newlines included.
		{"body at the cap", "ab\ncd\n", 10, 6, []string{"ab", "cd"}, io.EOF},
		{"body over the cap", "ab\ncd\ne", 10, 6, []string{"ab", "cd"}, errTooLarge},
	}
	for _, tc := range tests {
		for _, split := range []string{"whole", "one byte"} {
			t.Run(tc.name+"/"+split, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tc.in)
				if split == "one byte" {
					r = iotest.OneByteReader(r)
				}
				var lr lineReader
				lr.reset(r, tc.maxLine, tc.maxBody)
				var got []string
				var err error
				for {
					var line []byte
					if line, err = lr.next(); err != nil {
						break
					}
					got = append(got, string(line))
				}
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(got) != len(tc.want) {
					t.Errorf("lines %q, want %q", got, tc.want)
				}
			})
		}
	}
}

// TestLineReaderGrowsAndCompacts feeds lines longer than the initial buffer, so the
// buffer must grow, and many short ones, so it must compact.
func TestLineReaderGrowsAndCompacts(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	var want []string
	for i := 0; i < 2000; i++ {
		n := 1 + (i*7919)%(3*initialLineBuf)
		if i%10 != 0 {
			n %= 300
		}
		line := strings.Repeat(string(rune('a'+i%26)), n)
		want = append(want, line)
		in.WriteString(line + "\n")
	}
	var lr lineReader
	lr.reset(bufio.NewReaderSize(strings.NewReader(in.String()), 4096), 4*initialLineBuf, 1<<30)
	for i, w := range want {
		line, err := lr.next()
		if err != nil || string(line) != w {
			t.Fatalf("line %d: %d bytes, error %v; want %d bytes", i, len(line), err, len(w))
		}
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
	if cap(lr.buf) > 8*initialLineBuf {
		t.Errorf("buffer grew to %d bytes for lines of at most %d", cap(lr.buf), 3*initialLineBuf)
	}
}

// benchChunks are real chunk shapes: vLLM's are written from its OpenAI server's
// output, the others are lines of the fixtures.
var benchChunks = []struct{ name, payload string }{
	{"vllm_completions", `{"id":"cmpl-5f2d0b6a1f7e4c0e8a8f3a3c2b1d9e7f","object":"text_completion","created":1732000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`},
	{"vllm_chat", `{"id":"chatcmpl-5f2d0b6a1f7e4c0e8a8f3a3c2b1d9e7f","object":"chat.completion.chunk","created":1732000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`},
	{"llamacpp_chat", `{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" d"}}],"created":1795937880,"id":"chatcmpl-OecT6gH8kV2iKhkAEiMlgIVOm3fQQrRb","model":"stories260K.gguf","system_fingerprint":"b1-de3ff81","object":"chat.completion.chunk"}`},
	{"llamacpp_finish_timings", `{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1795937877,"model":"stories260K.gguf","system_fingerprint":"b1-de3ff81","object":"text_completion","usage":{"completion_tokens":20,"prompt_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":0}},"id":"chatcmpl-ewsiFKzT6B2lllpOmgeSc5KJtoTCFx9E","timings":{"cache_n":0,"prompt_n":5,"prompt_ms":1.486,"prompt_per_token_ms":0.2972,"prompt_per_second":3364.7375504710635,"predicted_n":20,"predicted_ms":7.627,"predicted_per_token_ms":0.40142105263157896,"predicted_per_second":2491.149862331192}}`},
	{"ollama_completions", `{"id":"cmpl-831","object":"text_completion","created":1795937183,"choices":[{"text":" there","index":0,"finish_reason":null}],"model":"stories260k","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`},
}

func BenchmarkParseChunk(b *testing.B) {
	for _, bc := range benchChunks {
		b.Run(bc.name, func(b *testing.B) {
			p := []byte(bc.payload)
			var c chunkInfo
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if err := parseChunk(p, &c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "chunks/s")
		})
	}
}

// BenchmarkStream reads a whole 500-chunk vLLM chat stream from memory: line
// splitting, parsing and timestamping, the client's per-chunk work.
func BenchmarkStream(b *testing.B) {
	const n = 500
	var body bytes.Buffer
	body.WriteString(": keep-alive\n\n")
	body.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := 0; i < n; i++ {
		body.WriteString("data: " + benchChunks[1].payload + "\n\n")
	}
	body.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"length","stop_reason":null}]}` + "\n\n")
	body.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":800,"total_tokens":1300,"completion_tokens":500}}` + "\n\n")
	body.WriteString("data: [DONE]\n\n")

	c := NewClient(ClientOptions{BaseURL: "http://127.0.0.1:1"})
	ctx := context.Background()
	r := bytes.NewReader(body.Bytes())
	var res Result
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(body.Bytes())
		res.Reset()
		c.readStream(ctx, r, "text/event-stream", &res)
		if !res.OK() || res.Chunks != n || res.OutputTokens != n {
			b.Fatalf("result %+v", res)
		}
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "chunks/s")
}
