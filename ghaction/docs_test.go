package ghaction

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/slogate/slogate/gate"
)

// actionYAML is the part of action.yml the documentation must agree with.
type actionYAML struct {
	Inputs map[string]struct {
		Description string `yaml:"description"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
	} `yaml:"outputs"`
}

func readRepo(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// mdTable returns the rows of the first table under the heading, keyed by the first
// cell without its backticks: the other cells, trimmed.
func mdTable(t *testing.T, doc, heading string) map[string][]string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no heading %q", heading)
	}
	rows := map[string][]string{}
	started := false
	for line := range strings.SplitSeq(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[strings.Trim(cells[0], "`")] = cells[1:]
	}
	return rows
}

// docDefault reads a default cell of docs/action.md: `x` is x, and "empty" (with or
// without what it means in parentheses) or `""` is the empty string.
func docDefault(cell string) string {
	if strings.HasPrefix(cell, "empty") || cell == "`\"\"`" {
		return ""
	}
	return strings.Trim(cell, "`")
}

// hasWord says whether text names w as a word of its own (not inside another word or
// a longer snake_case name).
func hasWord(text, w string) bool {
	return regexp.MustCompile(`(^|[^a-z_-])` + regexp.QuoteMeta(w) + `($|[^a-z_-])`).MatchString(text)
}

// TestDocsMatchActionYAML: docs/action.md documents every input of action.yml with the
// same default, every output, and no input or output action.yml lacks; action.yml's
// mode input and docs/action.md name every mode the Action runs; and both name every
// verdict the gate gives in the verdict output.
func TestDocsMatchActionYAML(t *testing.T) {
	var act actionYAML
	if err := yaml.Unmarshal([]byte(readRepo(t, "action.yml")), &act); err != nil {
		t.Fatal(err)
	}
	doc := readRepo(t, "docs/action.md")
	inputs, outputs := mdTable(t, doc, "## Inputs"), mdTable(t, doc, "## Outputs")
	for name, in := range act.Inputs {
		row, ok := inputs[name]
		if !ok {
			t.Errorf("docs/action.md: input %q of action.yml is not documented", name)
			continue
		}
		if got := docDefault(row[0]); got != in.Default {
			t.Errorf("docs/action.md: input %q defaults to %q (%s), action.yml to %q", name, got, row[0], in.Default)
		}
	}
	for name := range inputs {
		if _, ok := act.Inputs[name]; !ok && name != "input" && !strings.HasPrefix(name, "---") {
			t.Errorf("docs/action.md documents input %q, which action.yml does not have", name)
		}
	}
	for name := range act.Outputs {
		if _, ok := outputs[name]; !ok {
			t.Errorf("docs/action.md: output %q of action.yml is not documented", name)
		}
	}
	for name := range outputs {
		if _, ok := act.Outputs[name]; !ok && name != "output" && !strings.HasPrefix(name, "---") {
			t.Errorf("docs/action.md documents output %q, which action.yml does not have", name)
		}
	}
	for _, m := range Modes {
		if !strings.Contains(act.Inputs["mode"].Description, m+":") {
			t.Errorf("action.yml: the mode input does not describe mode %q", m)
		}
		if row := inputs["mode"]; row == nil || !strings.Contains(row[1], "`"+m+"`:") {
			t.Errorf("docs/action.md: the mode input does not describe mode %q", m)
		}
	}
	for _, v := range gate.Verdicts {
		if !hasWord(act.Outputs["verdict"].Description, string(v)) {
			t.Errorf("action.yml: the verdict output does not name verdict %q", v)
		}
		if row := outputs["verdict"]; row == nil || !strings.Contains(row[0], "`"+string(v)+"`") {
			t.Errorf("docs/action.md: the verdict output does not name verdict %q", v)
		}
	}
}

// TestREADMEIsShortAndCopyable: the README is read in minutes (at most 15,000 bytes),
// its workflow uses a ref that exists before the first release (@main), and every link
// between the README and docs/ leads to a file, and to a heading, that exist.
func TestREADMEIsShortAndCopyable(t *testing.T) {
	readme := readRepo(t, "README.md")
	if len(readme) > 15000 {
		t.Errorf("README.md is %d bytes, more than 15,000: move detail into docs/", len(readme))
	}
	var workflows strings.Builder
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(readme, -1) {
		workflows.WriteString(block[1])
	}
	uses := regexp.MustCompile(`uses: slogate/slogate@(\S+)`).FindAllStringSubmatch(workflows.String(), -1)
	if len(uses) == 0 {
		t.Error("README.md has no workflow that uses the Action")
	}
	for _, u := range uses {
		if u[1] != "main" {
			t.Errorf("README.md's workflow uses slogate/slogate@%s: no release exists yet, use @main", u[1])
		}
	}
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatal(err, docs)
	}
	files := []string{"README.md", "CONTRIBUTING.md"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		for _, m := range link.FindAllStringSubmatch(readRepo(t, f), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(filepath.Join("..", path)); err != nil {
				t.Errorf("%s links to %s: %v", f, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !slices.Contains(anchors(readRepo(t, path)), anchor) {
				t.Errorf("%s links to %s: %s has no heading #%s", f, target, path, anchor)
			}
		}
	}
}

// anchors are the fragment names GitHub gives a Markdown file's headings: lower case,
// spaces as hyphens, punctuation other than hyphens and underscores dropped.
func anchors(doc string) []string {
	var out []string
	inCode := false
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127 && !strings.ContainsRune("’—–×→·", r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
