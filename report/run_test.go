package report

import (
	"strings"
	"testing"

	"github.com/slogate/slogate/result"
)

// The terminal table shows per-token ITL, and says what it is, only when chunks carried
// several tokens.
func TestRunTablePerTokenITL(t *testing.T) {
	rec := &result.Record{Workload: "w", Mode: "open"}
	rec.Summary.ITLms = result.Percentiles{P50: 8, Count: 10}
	var b strings.Builder
	RunTable(&b, rec, "")
	if strings.Contains(b.String(), "ITL/token") {
		t.Errorf("a per-token row with one token a chunk:\n%s", b.String())
	}
	rec.Summary.ITLTokenms = result.Percentiles{P50: 2, Count: 40}
	rec.Summary.TokensPerChunk = &result.TokensPerChunk{Mean: 4, Inferred: 3}
	b.Reset()
	RunTable(&b, rec, "")
	out := b.String()
	if !strings.Contains(out, "ITL/token") || !strings.Contains(out, "chunks carried 4.000 tokens on average") || !strings.Contains(out, "inferred from usage for 3") {
		t.Errorf("table:\n%s", out)
	}
}
