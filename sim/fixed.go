package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
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
}

// Handler serves the OpenAI-compatible streaming endpoints and /v1/models, /health.
func (f *Fixed) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { f.stream(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { f.stream(w, r, true) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"id": f.model(), "object": "model", "max_model_len": 1 << 20}}})
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {})
	return mux
}

func (f *Fixed) model() string {
	if f.Model == "" {
		return "sim-fixed"
	}
	return f.Model
}

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
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	content := []byte(`data: {"object":"text_completion","choices":[{"index":0,"text":" a","finish_reason":null}]}` + "\n\n")
	if chat {
		content = []byte(`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":" a"},"finish_reason":null}]}` + "\n\n")
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for k := range req.MaxTokens {
		due := arrived.Add(f.TTFT + time.Duration(k)*f.ITL)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				return
			}
		}
		if _, err := w.Write(content); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	prompt := max(promptChars/4, 1)
	var b []byte
	b = append(b, `data: {"choices":[{"index":0,`...)
	if chat {
		b = append(b, `"delta":{},`...)
	} else {
		b = append(b, `"text":"",`...)
	}
	b = append(b, `"finish_reason":"length"}],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+req.MaxTokens), 10)
	b = append(b, "}}\n\ndata: [DONE]\n\n"...)
	w.Write(b)
	if fl != nil {
		fl.Flush()
	}
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
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return hs.Close()
}
