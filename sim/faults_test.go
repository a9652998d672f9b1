package sim

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	body := req{Model: "sim-tiny", Prompt: words(16), MaxTokens: 40, IgnoreEOS: true, Stream: true, StreamOptions: withUsage()}
	for _, tc := range []struct {
		name   string
		faults Faults
		check  func(t *testing.T, x streamResult)
	}{
		// Every request is answered 500 with a JSON error body.
		{"http 500", Faults{ErrorRate: 1}, func(t *testing.T, x streamResult) {
			if x.Status != 500 || !strings.Contains(string(x.Body), `"error"`) {
				t.Fatalf("status %d body %s", x.Status, x.Body)
			}
		}},
		// The connection is cut mid-stream: an unexpected EOF, no finish, no [DONE].
		{"disconnect", Faults{DisconnectRate: 1}, func(t *testing.T, x streamResult) {
			if x.Status != 200 || x.Done || x.Finish != "" || x.Err == nil {
				t.Fatalf("status %d done %v finish %q err %v tokens %d", x.Status, x.Done, x.Finish, x.Err, x.OutputTokens())
			}
			if !errors.Is(x.Err, io.ErrUnexpectedEOF) {
				t.Logf("disconnect surfaced as %v", x.Err)
			}
		}},
		// A vLLM-style error event arrives mid-stream, without a finish reason.
		{"error event", Faults{ErrorEventRate: 1}, func(t *testing.T, x streamResult) {
			if !x.ErrorEvent || x.Finish != "" || x.Usage != nil {
				t.Fatalf("error event %v finish %q usage %+v", x.ErrorEvent, x.Finish, x.Usage)
			}
		}},
		// A 500 ms stall shows as one long gap; the engine kept generating, so the
		// stream still completes and the chunk after the gap carries the rest.
		{"stall", Faults{StallProb: 1, Stall: 500 * time.Millisecond}, func(t *testing.T, x streamResult) {
			if x.Err != nil || !x.Done || x.OutputTokens() != 40 {
				t.Fatalf("err %v done %v tokens %d", x.Err, x.Done, x.OutputTokens())
			}
			// A loaded machine may deliver the chunk before the stall late, so the gap
			// the client sees can be tens of ms short of the stall; other gaps are ~2 ms.
			if g := x.MaxGap(); g < 350*time.Millisecond {
				t.Fatalf("max gap %v, want ≈ 500ms", g)
			}
			// The engine finishes within the stall, so everything produced meanwhile
			// arrives in the one chunk after the gap.
			at, before := 0, 0
			for i := 1; i < len(x.Times); i++ {
				if x.Times[i].Sub(x.Times[i-1]) == x.MaxGap() {
					at = i
				}
			}
			for _, n := range x.Tokens[:at] {
				before += n
			}
			if x.Tokens[at] != 40-before {
				t.Fatalf("chunk after the stall carries %d tokens, want the remaining %d: %v", x.Tokens[at], 40-before, x.Tokens)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tinyOpts()
			o.Faults = tc.faults
			r, c, ctx := start(t, o)
			tc.check(t, post(ctx, c, r.URL+"/v1/completions", body))
			chat := body
			chat.Prompt, chat.Messages = "", []ChatMessage{{"user", "hi"}}
			tc.check(t, post(ctx, c, r.URL+"/v1/chat/completions", chat))
			// The engine dropped what the faults cut short.
			deadline := time.Now().Add(5 * time.Second)
			for r.Server.Stats().UsedBlocks != 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if st := r.Server.Stats(); st.UsedBlocks != 0 || st.Running != 0 {
				t.Fatalf("engine still holds %d blocks, %d running", st.UsedBlocks, st.Running)
			}
		})
	}
}

func TestFaultRatesAreSeeded(t *testing.T) {
	t.Parallel()
	run := func() []int {
		o := tinyOpts()
		o.Seed = 42
		o.Faults.ErrorRate = 0.3
		r, c, ctx := start(t, o)
		var codes []int
		for range 30 {
			x := post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: "hi", MaxTokens: 1, Stream: true})
			codes = append(codes, x.Status)
		}
		return codes
	}
	a, b := run(), run()
	fails := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %d then %d with the same seed", i, a[i], b[i])
		}
		if a[i] == 500 {
			fails++
		}
	}
	// 30 draws at 0.3: 9 expected; [2, 18] has a probability far above 99.9%.
	if fails < 2 || fails > 18 {
		t.Fatalf("%d of 30 failed at rate 0.3", fails)
	}
}

func TestSlowStart(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Faults.SlowStart = 300 * time.Millisecond
	begin := time.Now()
	r, c, ctx := start(t, o)
	if code := getJSON(t, c, r.URL+"/health", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("health during slow start: %d", code)
	}
	if x := post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: "hi", MaxTokens: 1}); x.Status != http.StatusServiceUnavailable {
		t.Fatalf("request during slow start: %d", x.Status)
	}
	for getJSON(t, c, r.URL+"/health", nil) != http.StatusOK {
		if time.Since(begin) > 10*time.Second {
			t.Fatal("never ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if el := time.Since(begin); el < 300*time.Millisecond {
		t.Fatalf("ready after %v, before the 300ms slow start", el)
	}
	if x := post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: "hi", MaxTokens: 1}); x.Status != 200 {
		t.Fatalf("request after slow start: %d", x.Status)
	}
}

func TestSlowdownScalesSteps(t *testing.T) {
	t.Parallel()
	tpot := func(slow float64) time.Duration {
		o := tinyOpts()
		o.Faults.Slowdown = slow
		r, c, ctx := start(t, o)
		var d []time.Duration
		for range 3 {
			x := post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: "hi", MaxTokens: 20, IgnoreEOS: true, Stream: true})
			if x.Err != nil || x.OutputTokens() != 20 {
				t.Fatalf("err %v tokens %d", x.Err, x.OutputTokens())
			}
			d = append(d, x.TPOT())
		}
		return median(d)
	}
	// Steps of ≈ 6 ms and ≈ 25 ms: the ratio is 4 within a margin for a loaded machine.
	fast, slow := tpot(3), tpot(12)
	ratio := float64(slow) / float64(fast)
	t.Logf("median TPOT %v at ×3, %v at ×12: ratio %.2f", fast, slow, ratio)
	if ratio < 3 || ratio > 5 {
		t.Fatalf("slowdown ratio %.2f, want 4 ± 1", ratio)
	}
}
