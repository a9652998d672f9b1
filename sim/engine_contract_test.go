package sim

import (
	"testing"

	"github.com/slogate/slogate/engine"
)

// The simulator is only useful if slogate's own client reads it as it reads vLLM: these
// rows go through engine.Client and engine.Identify.
func TestEngineClientContract(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Version = "0.9.2-sim"
	r, _, ctx := start(t, o)
	id, err := engine.Identify(ctx, engine.IdentifyOptions{BaseURL: r.URL, Model: "sim-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if id.Engine != engine.EngineSim || id.Version != "0.9.2-sim" || id.ModelID != "sim-tiny" ||
		id.MaxContext != 1024 || id.KVCapacityTokens != 64*16 || id.KVBlockSize != 16 {
		t.Fatalf("identity %+v", id)
	}
	c := engine.NewClient(engine.ClientOptions{BaseURL: r.URL, Model: "sim-tiny"})
	prompt := "The quick brown fox jumps over the lazy dog, twice over."
	want, err := c.CountTokens(ctx, prompt)
	if err != nil || want != CountTokens(prompt) {
		t.Fatalf("CountTokens = %d, %v; want %d", want, err, CountTokens(prompt))
	}
	for _, api := range []string{engine.APICompletions, engine.APIChat} {
		var res engine.Result
		c.Stream(ctx, &engine.Request{API: api, Model: "sim-tiny", Prompt: prompt, MaxTokens: 12, IgnoreEOS: true}, &res)
		// Chunks may be fewer than tokens: a client scheduled late gets several per chunk.
		if !res.OK() || !res.UsageReported || res.OutputTokens != 12 || res.Chunks < 1 || res.Chunks > 12 || res.FinishReason != "length" {
			t.Fatalf("%s: %+v", api, res)
		}
		if api == engine.APICompletions && res.PromptTokens != want {
			t.Fatalf("usage prompt tokens %d, tokenize %d", res.PromptTokens, want)
		}
	}
}

func TestEngineClientSeesFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults Faults
		reason string
	}{
		// An HTTP 500 is recorded by status.
		{"500", Faults{ErrorRate: 1}, "http_500"},
		// A cut connection is a disconnect, not a success with fewer tokens.
		{"disconnect", Faults{DisconnectRate: 1}, engine.ErrDisconnect},
		// An error event inside the stream is a stream error.
		{"error event", Faults{ErrorEventRate: 1}, engine.ErrStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tinyOpts()
			o.Faults = tc.faults
			r, _, ctx := start(t, o)
			c := engine.NewClient(engine.ClientOptions{BaseURL: r.URL, Model: "sim-tiny"})
			var res engine.Result
			c.Stream(ctx, &engine.Request{API: engine.APICompletions, Model: "sim-tiny", Prompt: "hello", MaxTokens: 30, IgnoreEOS: true}, &res)
			if res.ErrReason != tc.reason {
				t.Fatalf("reason %q (%s), want %q", res.ErrReason, res.ErrDetail, tc.reason)
			}
		})
	}
}
