package workload

import (
	"context"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCorpus(t *testing.T) {
	if len(corpus) < 300<<10 {
		t.Errorf("corpus is %d bytes, want at least 300 KiB", len(corpus))
	}
	if !utf8.ValidString(corpus) {
		t.Error("corpus is not valid UTF-8")
	}
	if !strings.HasPrefix(corpus, "OPTICKS: OR, A TREATISE") || !strings.HasSuffix(corpus, "corrupted themselves.") {
		t.Errorf("corpus does not run from the title to the last sentence: %q ... %q", corpus[:40], corpus[len(corpus)-40:])
	}
	for _, bad := range []string{"  ", "\n", "\t", "\r", "Gutenberg", "pgdp", "Transcriber", "[Illustration", "Produced by", "_"} {
		if i := strings.Index(corpus, bad); i >= 0 {
			t.Errorf("corpus holds %q at byte %d: transcription apparatus or unnormalised whitespace", bad, i)
		}
	}
}

func TestCorpusTextWrapsAtWordBoundaries(t *testing.T) {
	// A window that starts 100 bytes before the end continues at the book's start.
	got := corpusText(len(corpus)-100, 400)
	tail := corpus[wordStart(len(corpus)-100):]
	if !strings.HasPrefix(got, tail+" OPTICKS: OR,") {
		t.Errorf("wrapped text = %q, want the tail %q then the title", got, tail)
	}
	for _, p := range []int{0, 1, 12345, len(corpus) / 2, len(corpus) - 1} {
		for _, n := range []int{1, 50, 4000, 3 * len(corpus)} {
			s := corpusText(p, n)
			if !utf8.ValidString(s) || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
				t.Errorf("corpusText(%d, %d) is not cut at word boundaries: %q...%q", p, n, s[:min(20, len(s))], s[max(0, len(s)-20):])
			}
			// Nearest boundary: off by at most half the longest word (78 bytes).
			if n > 100 && math.Abs(float64(len(s)-n)) > 40 {
				t.Errorf("corpusText(%d, %d) has %d bytes", p, n, len(s))
			}
		}
	}
}

func TestAppendSalt(t *testing.T) {
	cases := []struct {
		why   string
		phase uint64
		i     int
		tail  string
	}{
		{"index zero-padded to six digits", phaseMeasured, 123, " r000123 slogate] "},
		{"warm-up salts are marked apart", phaseWarmup, 7, " w000007 slogate] "},
		{"indexes past a million still fit", phaseMeasured, 1234567, " r1234567 slogate] "},
	}
	for _, c := range cases {
		s := string(appendSalt(nil, 9, 0, c.phase, c.i))
		if !saltRE.MatchString(s) || !strings.HasSuffix(s, c.tail) || len(s) != saltLen+len(c.tail)-len(" r000123 slogate] ") {
			t.Errorf("%s: salt %q, want [XXXXXXXX%s", c.why, s, c.tail)
		}
	}
	if a, b := appendSalt(nil, 1, 0, phaseMeasured, 5), appendSalt(nil, 2, 0, phaseMeasured, 5); string(a) == string(b) {
		t.Errorf("salts of different seeds are equal: %q", a)
	}
}

func promptWorkload(pc PrefixCache, prompt LengthDist) *Workload {
	return &Workload{
		Name:         "prompts",
		Seed:         7,
		Requests:     100,
		Arrival:      Arrival{Process: ArrivalPoisson, Rate: 10},
		PromptTokens: prompt,
		OutputTokens: LengthDist{Dist: DistFixed, Value: 16},
		PrefixCache:  pc,
	}
}

func TestColdPromptsNeverSharePrefix(t *testing.T) {
	g := mustGenerator(t, promptWorkload(PrefixCache{Mode: PrefixCold}, LengthDist{Dist: DistUniform, Min: 20, Max: 400}))
	seen := map[string]string{}
	check := func(it Item) {
		if !saltRE.MatchString(it.Prompt) {
			t.Fatalf("item %d (warm-up %v): prompt does not open with the salt: %q", it.Index, it.Warmup, it.Prompt[:40])
		}
		head := it.Prompt[:32]
		if prev, dup := seen[head]; dup {
			t.Fatalf("two prompts share their first 32 bytes %q: %s and item %d warm-up %v", head, prev, it.Index, it.Warmup)
		}
		seen[head] = it.Prompt[:9]
	}
	for i := range 5000 {
		check(g.Request(i))
	}
	for i := range 500 {
		check(g.WarmupRequest(i))
	}
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestSharedPrefixGroups(t *testing.T) {
	const groups, prefixTokens = 3, 200
	g := mustGenerator(t, promptWorkload(PrefixCache{Mode: PrefixShared, Tokens: prefixTokens, Groups: groups}, LengthDist{Dist: DistFixed, Value: 600}))
	var prefixes [groups]string
	for grp := range groups {
		prefixes[grp] = g.groupPrefix(grp)
		if n := len(prefixes[grp]); math.Abs(float64(n)-prefixTokens*DefaultCharsPerToken) > 40 {
			t.Errorf("group %d prefix is %d bytes, want about %v", grp, n, prefixTokens*DefaultCharsPerToken)
		}
	}
	for a := range groups {
		for b := a + 1; b < groups; b++ {
			if commonPrefix(prefixes[a], prefixes[b]) >= 32 {
				t.Fatalf("groups %d and %d share their prefix text", a, b)
			}
		}
	}
	items := make([]Item, 30)
	for i := range items {
		items[i] = g.Request(i)
		if p := items[i].Prompt; !strings.HasPrefix(p, prefixes[i%groups]+" ") || !saltRE.MatchString(p[len(prefixes[i%groups])+1:]) {
			t.Fatalf("item %d does not open with its group's prefix and salt", i)
		}
		if n := len(items[i].Prompt); math.Abs(float64(n)-600*DefaultCharsPerToken) > 60 {
			t.Errorf("item %d prompt is %d bytes, want about %v: prefix and salt count in the budget", i, n, 600*DefaultCharsPerToken)
		}
	}
	for i := range items {
		for j := i + 1; j < len(items); j++ {
			cp := commonPrefix(items[i].Prompt, items[j].Prompt)
			if i%groups == j%groups {
				// Same group: exactly the prefix, plus the salt's fixed opening, is shared.
				lo, hi := len(prefixes[i%groups]), len(prefixes[i%groups])+len(" [")+8
				if cp < lo || cp >= hi {
					t.Errorf("items %d and %d (group %d) share %d bytes, want the %d-byte prefix and then differ in the salt", i, j, i%groups, cp, lo)
				}
			} else if cp >= 32 {
				t.Errorf("items %d and %d of different groups share %d bytes", i, j, cp)
			}
		}
	}
	// Warm-up requests prime the same prefixes.
	if w := g.WarmupRequest(4); !strings.HasPrefix(w.Prompt, prefixes[4%groups]+" ") {
		t.Errorf("warm-up item 4 does not carry group %d's prefix", 4%groups)
	}
}

func TestSharedPrefixAtLeastTarget(t *testing.T) {
	// The prefix reaches the target: the prompt is the prefix and the salt, nothing more.
	g := mustGenerator(t, promptWorkload(PrefixCache{Mode: PrefixShared, Tokens: 300}, LengthDist{Dist: DistFixed, Value: 100}))
	it := g.Request(5)
	want := g.groupPrefix(0) + " " + string(appendSalt(nil, 7, 0, phaseMeasured, 5))
	if it.Prompt != want {
		t.Errorf("prompt = %q..., want exactly prefix + salt (%d bytes), got %d bytes", it.Prompt[:40], len(want), len(it.Prompt))
	}
}

func TestPromptLengths(t *testing.T) {
	cases := []struct {
		why    string
		tokens int
		ratio  float64
	}{
		{"short prompt: the salt is a large share of it", 16, DefaultCharsPerToken},
		{"typical chat prompt", 800, DefaultCharsPerToken},
		{"calibrated ratio below the estimate", 2000, 3.3},
		{"longer than the corpus: wraps around more than once", 300000, DefaultCharsPerToken},
	}
	for _, c := range cases {
		g := mustGenerator(t, promptWorkload(PrefixCache{}, LengthDist{Dist: DistFixed, Value: c.tokens}))
		g.cal = Calibration{Method: "tokenize", CharsPerToken: c.ratio}
		for i := range 20 {
			it := g.Request(i)
			want := float64(c.tokens) * c.ratio
			if d := math.Abs(float64(len(it.Prompt)) - want); d > 40 {
				t.Errorf("%s: item %d prompt %d bytes, want %v ± 40", c.why, i, len(it.Prompt), want)
			}
			if !utf8.ValidString(it.Prompt) || strings.HasSuffix(it.Prompt, " ") {
				t.Errorf("%s: item %d prompt not cut at a word boundary", c.why, i)
			}
			body := it.Prompt[saltLen:]
			if k := strings.Index(corpus, body[:min(len(body), 60)]); k > 0 && corpus[k-1] != ' ' {
				t.Errorf("%s: item %d text starts inside a word", c.why, i)
			}
		}
	}
}

// wordTokenizer is a fake engine tokenizer: 1.3 tokens per word, as BPE tokenizers give
// on English.
type wordTokenizer struct{ calls int }

func (w *wordTokenizer) CountTokens(_ context.Context, text string) (int, error) {
	w.calls++
	return int(math.Round(1.3 * float64(len(strings.Fields(text))))), nil
}

type funcTokenizer func(string) (int, error)

func (f funcTokenizer) CountTokens(_ context.Context, text string) (int, error) { return f(text) }

func TestCalibrate(t *testing.T) {
	g := mustGenerator(t, promptWorkload(PrefixCache{}, LengthDist{Dist: DistFixed, Value: 1000}))
	if c := g.Calibration(); c.Method != "estimate" || c.CharsPerToken != DefaultCharsPerToken {
		t.Fatalf("before calibration: %+v, want the estimate", c)
	}
	tok := &wordTokenizer{}
	if err := g.Calibrate(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	want := float64(len(corpus)) / (1.3 * float64(len(strings.Fields(corpus))))
	c := g.Calibration()
	if c.Method != "tokenize" || math.Abs(c.CharsPerToken/want-1) > 0.05 {
		t.Errorf("calibration %+v, want tokenize at %.3f chars/token (the corpus's bytes per 1.3 words)", c, want)
	}
	if tok.calls < 9 {
		t.Errorf("tokenizer called %d times, want windows of several sizes at several positions", tok.calls)
	}
	// The prompts now hit the calibrated length: tokenized, they count about the target.
	it := g.Request(3)
	if n, _ := tok.CountTokens(context.Background(), it.Prompt); math.Abs(float64(n)/1000-1) > 0.08 {
		t.Errorf("calibrated 1000-token prompt tokenizes to %d", n)
	}

	// A nil tokenizer returns to the estimate.
	if err := g.Calibrate(context.Background(), nil); err != nil || g.Calibration().Method != "estimate" {
		t.Errorf("nil tokenizer: err %v, calibration %+v", err, g.Calibration())
	}
}

func TestCalibrateFailuresKeepEstimate(t *testing.T) {
	errDown := errors.New("tokenize endpoint down")
	cases := []struct {
		why string
		tok Tokenizer
	}{
		{"the endpoint fails: the caller logs the error and goes on", funcTokenizer(func(string) (int, error) { return 0, errDown })},
		{"zero tokens would divide by zero", funcTokenizer(func(string) (int, error) { return 0, nil })},
		{"one token per window: 5000 chars/token is nonsense", funcTokenizer(func(string) (int, error) { return 1, nil })},
		{"a token per 0.1 byte is nonsense", funcTokenizer(func(s string) (int, error) { return 10 * len(s), nil })},
	}
	for _, c := range cases {
		g := mustGenerator(t, promptWorkload(PrefixCache{}, LengthDist{Dist: DistFixed, Value: 1000}))
		err := g.Calibrate(context.Background(), c.tok)
		if err == nil {
			t.Errorf("%s: no error", c.why)
		}
		if cal := g.Calibration(); cal.Method != "estimate" || cal.CharsPerToken != DefaultCharsPerToken {
			t.Errorf("%s: calibration %+v, want the estimate kept", c.why, cal)
		}
	}
	g := mustGenerator(t, promptWorkload(PrefixCache{}, LengthDist{Dist: DistFixed, Value: 1000}))
	if err := g.Calibrate(context.Background(), cases[0].tok); !errors.Is(err, errDown) {
		t.Errorf("tokenizer error not wrapped: %v", err)
	}
}

// A rerun of a cold workload must not find the previous run's prompts in the engine's
// prefix cache: with different run ids every salt differs, and nothing else does.
func TestColdRunIDChangesOnlyTheSalt(t *testing.T) {
	w := mixWorkload(3)
	a, b, same := mustGenerator(t, w), mustGenerator(t, w), mustGenerator(t, w)
	a.SetRunID("run-a")
	b.SetRunID("run-b")
	same.SetRunID("run-a")
	if !slices.Equal(a.Arrivals(), b.Arrivals()) {
		t.Errorf("the run id changed the schedule")
	}
	for i := range 300 {
		x, y := a.Request(i), b.Request(i)
		if x.Prompt == y.Prompt || x.Prompt[:saltLen] == y.Prompt[:saltLen] {
			t.Fatalf("item %d: runs a and b send the same salt %q", i, x.Prompt[:saltLen])
		}
		if x.Prompt[saltLen:] != y.Prompt[saltLen:] || len(x.Prompt) != len(y.Prompt) {
			t.Fatalf("item %d: the run id changed more than the salt:\n%q\n%q", i, x.Prompt, y.Prompt)
		}
		x.Prompt, y.Prompt = "", ""
		if x != y {
			t.Fatalf("item %d: the run id changed the item: %+v vs %+v", i, x, y)
		}
		if z := same.Request(i); z.Prompt != a.Request(i).Prompt {
			t.Fatalf("item %d: the same run id gives a different prompt", i)
		}
	}
	for i := range 8 {
		if a.WarmupRequest(i).Prompt == b.WarmupRequest(i).Prompt {
			t.Fatalf("warm-up item %d: runs a and b send the same prompt", i)
		}
	}
}

// saltRE is how every salted prompt opens: the request's hex first, so that no two
// requests share an opening token.
var saltRE = regexp.MustCompile(`^\[[0-9a-f]{8} [rw][0-9]{6,} slogate\] `)
