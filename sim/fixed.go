package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Fixed is an engine with exact timing and no batching model: every streamed request
// gets its first token TTFT after it arrived and each next one ITL later, on an absolute
// schedule (a late write does not delay the ones after it), whatever the load. It is the
// oracle of the load-generator benchmark (slogate loadbench): what the client measures
// above these figures is the client's, or the machine's. Per chunk it only formats a
// few bytes and flushes, so that it is not the bottleneck.
type Fixed struct {
	TTFT, ITL time.Duration
	// Model is the model id /v1/models answers with; default "sim-fixed".
	Model string

	// late is how far behind its schedule each event was handed to the socket, in µs:
	// where the oracle itself falls behind (its share of the cores is too small), the
	// client cannot measure its timing, and GET /fixed/lateness says so.
	mu   sync.Mutex
	late *hdrhistogram.Histogram
}

// Lateness is GET /fixed/lateness: how far behind schedule the engine wrote its events
// since the last such call (which resets it), in microseconds.
type Lateness struct {
	Writes int64 `json:"writes"`
	P50US  int64 `json:"p50_us"`
	P99US  int64 `json:"p99_us"`
	MaxUS  int64 `json:"max_us"`
}

// lateness returns the events' lateness since the last call and starts afresh.
func (f *Fixed) lateness() Lateness {
	f.mu.Lock()
	h := f.late
	f.late = nil
	f.mu.Unlock()
	if h == nil {
		return Lateness{}
	}
	return Lateness{Writes: h.TotalCount(), P50US: h.ValueAtQuantile(50), P99US: h.ValueAtQuantile(99), MaxUS: h.Max()}
}

// wrote records one event written late behind its schedule.
func (f *Fixed) wrote(late time.Duration) {
	us := min(max(late.Microseconds(), 0), int64(time.Hour/time.Microsecond))
	f.mu.Lock()
	if f.late == nil {
		f.late = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	}
	_ = f.late.RecordValue(us) // in range
	f.mu.Unlock()
}

// Handler serves the OpenAI-compatible streaming endpoints and /v1/models, /health and
// /fixed/lateness.
func (f *Fixed) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { f.stream(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { f.stream(w, r, true) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"id": f.model(), "object": "model", "max_model_len": 1 << 20}}})
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /fixed/lateness", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(f.lateness())
	})
	return mux
}

func (f *Fixed) model() string {
	if f.Model == "" {
		return "sim-fixed"
	}
	return f.Model
}

// The events every stream sends, built once: a content chunk is the same bytes each time.
var (
	fixedTextChunk = []byte(`data: {"object":"text_completion","choices":[{"index":0,"text":" a","finish_reason":null}]}` + "\n\n")
	fixedChatChunk = []byte(`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":" a"},"finish_reason":null}]}` + "\n\n")
)

func (f *Fixed) stream(w http.ResponseWriter, r *http.Request, chat bool) {
	arrived := time.Now()
	var req struct {
		MaxTokens int    `json:"max_tokens"`
		Prompt    string `json:"prompt"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil || req.MaxTokens < 1 {
		http.Error(w, `{"error":{"message":"need a JSON body with max_tokens >= 1"}}`, http.StatusBadRequest)
		return
	}
	promptChars := len(req.Prompt)
	for _, m := range req.Messages {
		promptChars += len(m.Content)
	}
	content := fixedTextChunk
	if chat {
		content = fixedChatChunk
	}
	tail := fixedTail(chat, max(promptChars/4, 1), req.MaxTokens)
	// The whole body is known now, so it goes with a Content-Length: each event is one
	// write of prebuilt bytes and one flush (one write to the socket), with no chunked
	// framing to format per event.
	h := w.Header()
	h["Content-Type"] = eventStream
	h["Cache-Control"] = noCache
	h["Content-Length"] = []string{strconv.Itoa(req.MaxTokens*len(content) + len(tail))}
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	for k := range req.MaxTokens {
		// An absolute schedule: a late write does not delay the ones after it. A plain
		// sleep parks the goroutine on its timer with no channel or select per event; a
		// client that went away is seen at the next write.
		due := arrived.Add(f.TTFT + time.Duration(k)*f.ITL)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if _, err := w.Write(content); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
		f.wrote(time.Since(due))
	}
	w.Write(tail)
}

var (
	eventStream = []string{"text/event-stream"}
	noCache     = []string{"no-cache"}
)

// fixedTail is the last event (finish_reason and usage) and [DONE].
func fixedTail(chat bool, prompt, completion int) []byte {
	b := make([]byte, 0, 192)
	b = append(b, `data: {"choices":[{"index":0,`...)
	if chat {
		b = append(b, `"delta":{},`...)
	} else {
		b = append(b, `"text":"",`...)
	}
	b = append(b, `"finish_reason":"length"}],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	return append(b, "}}\n\ndata: [DONE]\n\n"...)
}

// ServeFixed serves f on addr until ctx ends, saying where on log.
func ServeFixed(ctx context.Context, addr string, f *Fixed, log io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "slogate sim: fixed timing, TTFT %v, ITL %v\n", f.TTFT, f.ITL)
	fmt.Fprintf(log, "slogate sim: serving on http://%s\n", ln.Addr())
	hs := &http.Server{Handler: f.Handler(), ReadHeaderTimeout: 10 * time.Second}
	// A pointer-free ballast that is never written (so never resident) makes the
	// collector wait for 64 MB more garbage between cycles: the oracle's own collections
	// took CPU from the client on the same cores, as the load generator's did
	// (loadgen.GCFloor).
	ballast := make([]byte, 64<<20)
	defer runtime.KeepAlive(ballast)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return hs.Close()
}
