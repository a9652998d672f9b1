package report

import (
	"bytes"
	"strings"
	"testing"
)

// Text from the server under test (a note, an engine version) cannot reorder what a
// reviewer reads, nor turn into GitHub math, in the comment or the HTML report.
func TestServerTextSanitized(t *testing.T) {
	const rlo, pdf = "\u202e", "\u202c"
	c := commentFixture()
	rec := c.Runs["chat-demo"][0]
	rec.Notes = append(rec.Notes, "error: "+rlo+"ssap"+pdf+" cost $x^2$ and $$\\sum y$$ done")
	rec.Environment["engine.version"] = "0.9" + rlo + "1-$a$"
	c.Gate.Workloads[0].Drift[0].Candidate = rec.Environment["engine.version"]
	md := Markdown(c)
	if strings.ContainsAny(md, rlo+pdf+"\u2066\u2069") {
		t.Error("a bidi control reached the comment")
	}
	if strings.Contains(md, "$x^2$") || strings.Contains(md, "$$\\sum") || strings.Contains(md, "-$a$") {
		t.Errorf("math delimiters from the server reach the comment unescaped:\n%s", md)
	}
	if !strings.Contains(md, `\$x^2\$`) {
		t.Errorf("the note is not shown with its dollars escaped:\n%s", md)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, HTMLReport{Candidate: rec}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), rlo+pdf) {
		t.Error("a bidi control reached the HTML report")
	}
	if got := StripBidi("a\u2066b\u200fc\ufeffd"); got != "abcd" {
		t.Errorf("StripBidi = %q", got)
	}
}
