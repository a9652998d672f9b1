package report

import "strings"

// StripBidi removes the invisible characters that change how text reads without
// showing themselves: bidi embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069), marks (U+200E, U+200F, U+061C) and zero-width characters (U+200B–U+200D,
// U+2060, U+FEFF). Text from the server under test could otherwise make a reviewer read
// "ssap" as "pass" in the comment, the HTML report or the terminal. It is the one
// sanitizer every renderer applies to such text; slogate's own text has none of them.
func StripBidi(s string) string {
	if !strings.ContainsFunc(s, isInvisible) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isInvisible(r) {
			return -1
		}
		return r
	}, s)
}

func isInvisible(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r >= 0x200b && r <= 0x200f:
		return true
	}
	return r == 0x061c || r == 0x2060 || r == 0xfeff
}
