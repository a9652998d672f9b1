package sim

import (
	"slices"
	"testing"
)

// A later turn's prompt starts with exactly the tokens of the earlier turn's prompt and
// its answer, as a real chat template renders them: what a session's history cost to
// compute is what the prefix cache can give back.
func TestChatHistoryIsPrefix(t *testing.T) {
	t.Parallel()
	answer := string(appendTokens(nil, 3, 0, 9))
	turn1 := []ChatMessage{{"system", "Be brief, and say why."}, {"user", "Why is the sky blue?"}}
	turn2 := append(slices.Clone(turn1), ChatMessage{"assistant", answer}, ChatMessage{"user", "And the sunset red?"})
	p1, p2 := chatTokenIDs(turn1), chatTokenIDs(turn2)
	if len(p1) != ChatTokens(turn1) || len(p2) != ChatTokens(turn2) {
		t.Fatalf("ids %d and %d, counts %d and %d", len(p1), len(p2), ChatTokens(turn1), ChatTokens(turn2))
	}
	// The generated tokens re-tokenize to one id each (4-byte vocabulary pieces).
	withAnswer := append(slices.Clone(p1), tokenIDs(answer)...)
	if len(tokenIDs(answer)) != 9 || !slices.Equal(p2[:len(withAnswer)], withAnswer) {
		t.Errorf("turn 2 does not start with turn 1's prompt and answer:\n%v\n%v", withAnswer, p2[:min(len(p2), len(withAnswer))])
	}
	// Rendering is deterministic and depends on the messages only.
	if !slices.Equal(chatTokenIDs(turn2), p2) {
		t.Error("two renderings of the same messages differ")
	}
	// The role is part of no token here, but the message boundary is: moving text from
	// one message to the next changes the ids.
	moved := []ChatMessage{{"system", "Be brief, and say"}, {"user", " why.Why is the sky blue?"}}
	if slices.Equal(chatTokenIDs(moved), p1) {
		t.Error("message boundaries do not show in the ids")
	}
}
