//go:build ignore

// mkcorpus rebuilds opticks.txt, the prompt corpus, from the Project Gutenberg text of
// Isaac Newton's Opticks (public domain) that ships with the Go distribution:
//
//	go run ./workload/corpus/mkcorpus.go $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt > workload/corpus/opticks.txt
//
// Only the book's own text is kept: the producers' credit, the transcriber's note, the
// illustration placeholders, the title-page caption and the underscore italics markup are
// transcription apparatus, not Newton's prose. Whitespace runs (line breaks included)
// become single spaces so that a prompt cut anywhere reads as continuous prose.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run mkcorpus.go Isaac.Newton-Opticks.txt > opticks.txt")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := string(raw)
	// The producers' credit precedes the title.
	if i := strings.Index(s, "OPTICKS:"); i >= 0 {
		s = s[i:]
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?s)Transcriber's Note:.*?\n\s*\*( +\*){4}`), // note and its closing rule
		regexp.MustCompile(`\n\s*\*( +\*){4}`),                           // remaining section rules
		regexp.MustCompile(`\[Illustration:[^\]]*\]`),
		regexp.MustCompile(`TITLE PAGE OF THE 1730 EDITION`),
	} {
		s = re.ReplaceAllString(s, " ")
	}
	s = strings.ReplaceAll(s, "_", "")
	s = strings.Join(strings.Fields(s), " ")
	fmt.Print(s)
}
