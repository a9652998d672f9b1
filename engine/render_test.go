package engine

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// wordIDs are fake token ids: one a word, from its hash.
func wordIDs(text string) []int {
	var ids []int
	for _, w := range strings.Fields(text) {
		h := fnv.New32a()
		h.Write([]byte(w))
		ids = append(ids, int(h.Sum32()%50000)+1000)
	}
	return ids
}

// vllmRenderer answers POST /tokenize as vLLM does: a prompt is tokenized with BOS (1)
// where add_special_tokens is true; messages go through a template whose header is ids
// 10, 11, 12 and whose assistant header (add_generation_prompt) is 13.
func vllmRenderer(t *testing.T) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var in struct {
			Model               string  `json:"model"`
			Prompt              *string `json:"prompt"`
			AddSpecialTokens    bool    `json:"add_special_tokens"`
			AddGenerationPrompt bool    `json:"add_generation_prompt"`
			Messages            []struct {
				Role, Content string
			} `json:"messages"`
		}
		if r.URL.Path != "/tokenize" || json.NewDecoder(r.Body).Decode(&in) != nil || in.Model != "m" {
			http.Error(rw, `{"message":"Field required"}`, http.StatusBadRequest)
			return
		}
		var ids []int
		switch {
		case in.Prompt != nil:
			if in.AddSpecialTokens {
				ids = append(ids, 1)
			}
			ids = append(ids, wordIDs(*in.Prompt)...)
		case len(in.Messages) == 1 && in.Messages[0].Role == "user":
			if !in.AddGenerationPrompt {
				t.Error("a chat prompt rendered without the assistant's header")
			}
			ids = append(append([]int{10, 11, 12}, wordIDs(in.Messages[0].Content)...), 13)
		default:
			http.Error(rw, `{"message":"bad messages"}`, http.StatusBadRequest)
			return
		}
		json.NewEncoder(rw).Encode(map[string]any{"count": len(ids), "max_model_len": 4096, "tokens": ids})
	})
}

// llamaRenderer answers as llama.cpp's server: POST /apply-template renders ChatML text,
// POST /tokenize adds BOS (1) where add_special is true, tokenizes "<|im_start|>" as id 7
// where parse_special is true, and gives pieces where with_pieces is.
func llamaRenderer(t *testing.T, pieces, template bool) http.Handler {
	mux := http.NewServeMux()
	if template {
		mux.HandleFunc("POST /apply-template", func(rw http.ResponseWriter, r *http.Request) {
			var in struct {
				Messages []struct{ Role, Content string } `json:"messages"`
			}
			if json.NewDecoder(r.Body).Decode(&in) != nil || len(in.Messages) != 1 {
				http.Error(rw, "bad", http.StatusBadRequest)
				return
			}
			json.NewEncoder(rw).Encode(map[string]string{"prompt": "<|im_start|> user " + in.Messages[0].Content + " <|im_end|> <|im_start|> assistant"})
		})
	}
	mux.HandleFunc("POST /tokenize", func(rw http.ResponseWriter, r *http.Request) {
		var in struct {
			Content      *string `json:"content"`
			AddSpecial   bool    `json:"add_special"`
			ParseSpecial bool    `json:"parse_special"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil {
			http.Error(rw, "bad json", http.StatusInternalServerError)
			return
		}
		ids := []int{}
		if in.Content != nil {
			if in.AddSpecial {
				ids = append(ids, 1)
			}
			for _, w := range strings.Fields(*in.Content) {
				if w == "<|im_start|>" && in.ParseSpecial {
					ids = append(ids, 7)
				} else {
					ids = append(ids, wordIDs(w)...)
				}
			}
		}
		if !pieces {
			json.NewEncoder(rw).Encode(map[string]any{"tokens": ids})
			return
		}
		out := []map[string]any{}
		for _, id := range ids {
			out = append(out, map[string]any{"id": id, "piece": "x"})
		}
		json.NewEncoder(rw).Encode(map[string]any{"tokens": out})
	})
	return mux
}

// PromptTokenIDs renders a prompt as the engine serves it: what two prompts share is the
// engine's opening (BOS, the chat template's header), then their own words.
func TestPromptTokenIDs(t *testing.T) {
	t.Parallel()
	words := wordIDs("hello world")
	for _, c := range []struct {
		name    string
		h       http.Handler
		api     string
		want    []int
		noToken bool
	}{
		{"vllm completions", vllmRenderer(t), APICompletions, append([]int{1}, words...), false},
		{"vllm chat", vllmRenderer(t), APIChat, append(append([]int{10, 11, 12}, words...), 13), false},
		{"llama.cpp completions", llamaRenderer(t, false, true), APICompletions, append([]int{1}, words...), false},
		{"llama.cpp chat", llamaRenderer(t, false, true), APIChat,
			append(append(append([]int{1, 7}, wordIDs("user")...), words...), append(wordIDs("<|im_end|>"), append([]int{7}, wordIDs("assistant")...)...)...), false},
		{"llama.cpp chat with pieces", llamaRenderer(t, true, true), APIChat,
			append(append(append([]int{1, 7}, wordIDs("user")...), words...), append(wordIDs("<|im_end|>"), append([]int{7}, wordIDs("assistant")...)...)...), false},
		// A llama.cpp server without /apply-template cannot say how it renders chat.
		{"llama.cpp chat without a template endpoint", llamaRenderer(t, false, false), APIChat, nil, true},
		// Ollama, TGI: no tokenizer at all.
		{"none", http.NotFoundHandler(), APIChat, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			cl := NewClient(ClientOptions{BaseURL: srv.URL, Model: "m"})
			got, err := cl.PromptTokenIDs(context.Background(), c.api, "hello world")
			if c.noToken {
				if !errors.Is(err, ErrNoTokenizer) {
					t.Fatalf("ids %v, error %v: want ErrNoTokenizer", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("ids %v, error %v; want %v", got, err, c.want)
			}
		})
	}
}

// A tokenize answer whose tokens are neither ids nor pieces is an error that quotes it.
func TestParseTokenIDsRefusesOtherTokens(t *testing.T) {
	t.Parallel()
	for _, b := range []string{`{"tokens":["a"]}`, `{"tokens":[{"piece":"a"}]}`, `{"count":3}`, `{`} {
		if ids, err := parseTokenIDs([]byte(b)); err == nil {
			t.Errorf("%s: ids %v, want an error", b, ids)
		}
	}
}
