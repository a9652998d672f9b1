package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A multi-turn request sends its messages in order, roles and contents as given, and
// gets back the generated text decoded, escapes and all, without the reasoning deltas.
func TestMessagesAndCapturedText(t *testing.T) {
	t.Parallel()
	var body []byte
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`,
			`{"choices":[{"delta":{"content":"Light \"bends\""}}]}`,
			`{"choices":[{"delta":{"content":"\n\u00e9t\u00e9 \ud83c\udf08"}}]}`,
			`{"choices":[{"delta":{"content":""},"finish_reason":"length"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3}}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	c := NewClient(ClientOptions{BaseURL: srv.URL, Model: "m"})
	msgs := []Message{{"system", "Be brief."}, {"user", "Why \"rainbows\"?"}, {"assistant", "Prisms."}, {"user", "And\nthen?"}}
	res := stream(t, c, &Request{API: APIChat, Model: "m", Prompt: "ignored", Messages: msgs, MaxTokens: 8, CaptureText: true})
	if !res.OK() {
		t.Fatalf("error %s: %s", res.ErrReason, res.ErrDetail)
	}
	if got, want := string(res.Text), "Light \"bends\"\nété 🌈"; got != want {
		t.Errorf("captured text %q, want %q", got, want)
	}
	var sent struct {
		Messages []struct{ Role, Content string } `json:"messages"`
		Prompt   *string                          `json:"prompt"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	var got []Message
	for _, m := range sent.Messages {
		got = append(got, Message{m.Role, m.Content})
	}
	if diff := cmp.Diff(msgs, got); diff != "" || sent.Prompt != nil {
		t.Errorf("messages sent (-want +got):\n%s\nprompt %v", diff, sent.Prompt)
	}

	// Without CaptureText nothing is kept, and a reused Result starts empty.
	res2 := stream(t, c, &Request{API: APIChat, Model: "m", Messages: msgs, MaxTokens: 8})
	if !res2.OK() || len(res2.Text) != 0 {
		t.Errorf("text %q kept without CaptureText (error %q)", res2.Text, res2.ErrReason)
	}
	res.Reset()
	if len(res.Text) != 0 {
		t.Errorf("Reset kept text %q", res.Text)
	}
}
