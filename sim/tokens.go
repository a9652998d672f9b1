package sim

// The simulator's tokenizer is one rule, used by /tokenize and by the request path alike,
// so that a client that calibrates with /tokenize hits its target lengths exactly:
//
//	tokens(text) = ⌈bytes(text) / 4⌉
//
// A chat request adds a fixed template overhead: ChatOverheadPerMessage tokens for each
// message (role header and end marker) and ChatOverheadFixed tokens once (the
// assistant header that starts the reply).
const (
	BytesPerToken          = 4
	ChatOverheadPerMessage = 4
	ChatOverheadFixed      = 3
)

// CountTokens is the simulator's token count of text.
func CountTokens(text string) int { return (len(text) + BytesPerToken - 1) / BytesPerToken }

// ChatMessage is one message of a chat request.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatTokens is the simulator's token count of a chat prompt.
func ChatTokens(msgs []ChatMessage) int {
	n := ChatOverheadFixed
	for _, m := range msgs {
		n += ChatOverheadPerMessage + CountTokens(m.Content)
	}
	return n
}

// vocab holds the generated tokens. Each is exactly BytesPerToken bytes, so that the
// generated text re-tokenizes to the number of tokens generated, and none needs JSON
// escaping, so that chunks are written without encoding.
var vocab = [...]string{" the", " sun", " sky", " was", " and", " one", " day", " sea", " kid", " ran", " far", " new"}

// appendTokens appends generated tokens [from, from+n) of a sequence whose text starts
// at vocabulary offset off.
func appendTokens(b []byte, off, from, n int) []byte {
	for i := from; i < from+n; i++ {
		b = append(b, vocab[(off+i)%len(vocab)]...)
	}
	return b
}

// tokenIDs returns fake but stable token ids for text: one per 4-byte piece.
func tokenIDs(text string) []int {
	ids := make([]int, CountTokens(text))
	for i := range ids {
		end := min((i+1)*BytesPerToken, len(text))
		h := uint32(2166136261)
		for _, c := range []byte(text[i*BytesPerToken : end]) {
			h = (h ^ uint32(c)) * 16777619
		}
		ids[i] = int(h % 128000)
	}
	return ids
}
