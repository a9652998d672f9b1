package workload

import (
	"errors"
	"strings"
	"testing"
)

func TestMaxLengths(t *testing.T) {
	w := &Workload{
		Name:         "mix",
		PromptTokens: LengthDist{Dist: DistLognormal, P50: 100, P95: 300, Max: 1000},
		OutputTokens: LengthDist{Dist: DistFixed, Value: 120},
		Classes: []Class{
			{Name: "chat", Weight: 1},
			{Name: "rag", Weight: 1, PromptTokens: LengthDist{Dist: DistUniform, Min: 10, Max: 3000}},
			{Name: "agent", Weight: 1, OutputTokens: LengthDist{Dist: DistEmpirical, Values: []int{5, 900, 40}, Max: 700}},
		},
	}
	got := MaxLengths(w)
	want := []ClassLengths{{Class: "chat", MaxPrompt: 1000, MaxOutput: 120}, {Class: "rag", MaxPrompt: 3000, MaxOutput: 120}, {Class: "agent", MaxPrompt: 1000, MaxOutput: 700}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("class %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	w.Classes = nil
	w.PrefixCache = PrefixCache{Mode: PrefixShared, Tokens: 1500}
	if got := MaxLengths(w); len(got) != 1 || got[0].MaxPrompt != 1500 {
		t.Errorf("a shared prefix longer than the prompt max: got %+v, want max prompt 1500", got)
	}
	w.PromptTokens = LengthDist{Dist: DistLognormal, P50: 100, P95: 300}
	if got := MaxLengths(w); !got[0].Unbounded {
		t.Errorf("lognormal without max: got %+v, want unbounded", got)
	}
}

// TestCheckContext: the simulator's profile has a 1,024-token context; prompt max 1,000 +
// output max 120 cannot fit it, nor can 400 + 300 in a 512-token llama.cpp slot.
func TestCheckContext(t *testing.T) {
	w := &Workload{
		Name:         "long",
		PromptTokens: LengthDist{Dist: DistUniform, Min: 200, Max: 1000},
		OutputTokens: LengthDist{Dist: DistUniform, Min: 10, Max: 120},
	}
	err := CheckContext(w, 1024, "/v1/models max_model_len", "slogate.yaml")
	var ce *ContextError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *ContextError", err)
	}
	for _, s := range []string{"slogate.yaml", `"long"`, "1024", "1000 + output_tokens max 120 = 1120 > 1024", "max_model_len"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
	if err := CheckContext(w, 1120, "", ""); err != nil {
		t.Errorf("a request of exactly the context fits: %v", err)
	}
	if err := CheckContext(w, 0, "", ""); err != nil {
		t.Errorf("an unknown context is not checked: %v", err)
	}

	slot := &Workload{
		Name:         "slot",
		PromptTokens: LengthDist{Dist: DistFixed, Value: 400},
		OutputTokens: LengthDist{Dist: DistFixed, Value: 300},
		Classes: []Class{
			{Name: "short", Weight: 1, OutputTokens: LengthDist{Dist: DistFixed, Value: 50}},
			{Name: "long", Weight: 1},
		},
	}
	err = CheckContext(slot, 512, "llama.cpp n_ctx", "")
	if !errors.As(err, &ce) || len(ce.Over) != 1 || ce.Over[0].Class != "long" || ce.Over[0].Total() != 700 {
		t.Fatalf("err = %v, want class long (700 tokens) only", err)
	}
}
