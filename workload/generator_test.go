package workload

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The -update flag rewrites golden files. Registered only if no other test file of the
// package has (package variables initialise before init functions run).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// mixWorkload exercises every per-request stream: classes, lognormal lengths, cold salts.
func mixWorkload(seed int64) *Workload {
	return &Workload{
		Name:         "mix",
		Seed:         seed,
		Requests:     500,
		Warmup:       Warmup{Requests: 8},
		Arrival:      Arrival{Process: ArrivalGamma, Rate: 20, Burstiness: 0.5},
		PromptTokens: LengthDist{Dist: DistLognormal, P50: 300, P95: 1500, Max: 4000},
		OutputTokens: LengthDist{Dist: DistLognormal, P50: 100, P95: 400, Max: 1000},
		PrefixCache:  PrefixCache{Mode: PrefixCold},
		Classes: []Class{
			{Name: "chat", Weight: 0.5},
			{Name: "rag", Weight: 0.3, PromptTokens: LengthDist{Dist: DistUniform, Min: 2000, Max: 3000}},
			{Name: "batch", Weight: 0.2, OutputTokens: LengthDist{Dist: DistFixed, Value: 900}},
		},
	}
}

func TestSameWorkloadSameEverything(t *testing.T) {
	a, b := mustGenerator(t, mixWorkload(3)), mustGenerator(t, mixWorkload(3))
	if diff := cmp.Diff(a.Arrivals(), b.Arrivals()); diff != "" {
		t.Errorf("arrivals differ between two generators (-a +b):\n%s", diff)
	}
	const n = 300
	inOrder := make([]Item, n)
	for i := range n {
		inOrder[i] = a.Request(i)
	}
	// Reversed, shuffled and concurrent calls on a second generator give the same items.
	reversed := make([]Item, n)
	for i := n - 1; i >= 0; i-- {
		reversed[i] = b.Request(i)
	}
	shuffled := make([]Item, n)
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		shuffled[i] = b.Request(i)
	}
	concurrent := make([]Item, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				concurrent[i] = b.Request(i)
			}
		})
	}
	wg.Wait()
	for name, got := range map[string][]Item{"reversed": reversed, "shuffled": shuffled, "concurrent": concurrent} {
		if diff := cmp.Diff(inOrder, got); diff != "" {
			t.Errorf("%s calls give other items (-in order +%s):\n%s", name, name, diff)
		}
	}
	for i := range 8 {
		if diff := cmp.Diff(a.WarmupRequest(i), b.WarmupRequest(i)); diff != "" {
			t.Errorf("warm-up item %d differs:\n%s", i, diff)
		}
	}
}

func TestSeedChangesEverything(t *testing.T) {
	a, b := mustGenerator(t, mixWorkload(3)), mustGenerator(t, mixWorkload(4))
	if slices.Equal(a.Arrivals(), b.Arrivals()) {
		t.Error("seeds 3 and 4 give the same arrivals")
	}
	var sameLen, sameClass int
	for i := range 200 {
		x, y := a.Request(i), b.Request(i)
		if x.Prompt == y.Prompt || x.Prompt[:32] == y.Prompt[:32] {
			t.Errorf("item %d: same prompt opening under two seeds", i)
		}
		if x.PromptTokens == y.PromptTokens && x.OutputTokens == y.OutputTokens {
			sameLen++
		}
		if x.Class == y.Class {
			sameClass++
		}
	}
	// Chance agreement: classes about 38% (0.5² + 0.3² + 0.2²), both lengths rarely.
	if sameLen > 20 || sameClass > 110 {
		t.Errorf("seeds 3 and 4 agree on %d/200 lengths and %d/200 classes", sameLen, sameClass)
	}
}

func TestWarmupIsItsOwnPhase(t *testing.T) {
	g := mustGenerator(t, mixWorkload(3))
	for i := range 8 {
		w, m := g.WarmupRequest(i), g.Request(i)
		if !w.Warmup || m.Warmup || w.Index != i || m.Index != i {
			t.Fatalf("item %d: flags warm-up %v/%v, index %d/%d", i, w.Warmup, m.Warmup, w.Index, m.Index)
		}
		if w.Prompt[27:] == m.Prompt[27:] {
			t.Errorf("warm-up and measured item %d share their text", i)
		}
	}
}

func TestStreamsAreIndependent(t *testing.T) {
	base := mustGenerator(t, mixWorkload(3))
	// Other class weights: the arrival schedule must not move.
	w := mixWorkload(3)
	w.Classes[0].Weight = 5
	if !slices.Equal(base.Arrivals(), mustGenerator(t, w).Arrivals()) {
		t.Error("changing class weights moved the arrivals")
	}
	// Another arrival process: the requests must not change.
	w = mixWorkload(3)
	w.Arrival = Arrival{Process: ArrivalPoisson, Rate: 99}
	other := mustGenerator(t, w)
	for i := range 50 {
		if diff := cmp.Diff(base.Request(i), other.Request(i)); diff != "" {
			t.Fatalf("changing the arrival process changed item %d:\n%s", i, diff)
		}
	}
}

func TestClassMix(t *testing.T) {
	g := mustGenerator(t, mixWorkload(17))
	const n = 20000
	counts := map[string]int{}
	for i := range n {
		it := g.Request(i)
		counts[it.Class]++
		switch it.Class {
		case "rag": // own prompt lengths, inherited output lengths
			if it.PromptTokens < 2000 || it.PromptTokens > 3000 {
				t.Fatalf("rag item %d: prompt %d tokens outside its own [2000, 3000]", i, it.PromptTokens)
			}
		case "batch": // own output length, inherited prompt lengths
			if it.OutputTokens != 900 || it.PromptTokens > 4000 {
				t.Fatalf("batch item %d: %d/%d tokens, want output 900 and the workload's prompts", i, it.PromptTokens, it.OutputTokens)
			}
		case "chat": // everything inherited
			if it.OutputTokens > 1000 || it.PromptTokens > 4000 {
				t.Fatalf("chat item %d: lengths %d/%d beyond the workload's max", i, it.PromptTokens, it.OutputTokens)
			}
		default:
			t.Fatalf("item %d: class %q", i, it.Class)
		}
	}
	for _, c := range mixWorkload(17).Classes {
		if got := float64(counts[c.Name]) / n; math.Abs(got-c.Weight) > 0.02 {
			t.Errorf("class %s: share %.4f, want %v ± 0.02", c.Name, got, c.Weight)
		}
	}
}

func TestNoClassesMeansEmptyClass(t *testing.T) {
	w := mixWorkload(1)
	w.Classes = nil
	if c := mustGenerator(t, w).Request(0).Class; c != "" {
		t.Errorf("class %q, want \"\" without a mix", c)
	}
}

func TestNewGeneratorRejects(t *testing.T) {
	cases := []struct {
		why  string
		edit func(w *Workload)
	}{
		{"unknown process", func(w *Workload) { w.Arrival.Process = "burst" }},
		{"an open loop without a rate never sends", func(w *Workload) { w.Arrival.Rate = 0 }},
		{"negative burstiness has no gamma", func(w *Workload) { w.Arrival.Burstiness = -1 }},
		{"unknown profile kind", func(w *Workload) { w.Arrival.Profile = &RateProfile{Kind: "sawtooth"} }},
		{"steps without steps", func(w *Workload) { w.Arrival.Profile = &RateProfile{Kind: "steps"} }},
		{"a middle step without duration hides the next ones", func(w *Workload) {
			w.Arrival.Profile = &RateProfile{Kind: "steps", Steps: []RateStep{{Rate: 1}, {Rate: 2}}}
		}},
		{"ramp of zero to zero", func(w *Workload) { w.Arrival.Profile = &RateProfile{Kind: "ramp", Over: time.Second} }},
		{"diurnal trough above peak", func(w *Workload) {
			w.Arrival.Profile = &RateProfile{Kind: "diurnal", Trough: 5, Peak: 1, Period: time.Minute}
		}},
		{"diurnal without period", func(w *Workload) { w.Arrival.Profile = &RateProfile{Kind: "diurnal", Trough: 1, Peak: 5} }},
		{"bad prompt lengths", func(w *Workload) { w.PromptTokens = LengthDist{Dist: DistUniform, Min: 5, Max: 1} }},
		{"bad output lengths", func(w *Workload) { w.OutputTokens = LengthDist{} }},
		{"zero class weight", func(w *Workload) { w.Classes[1].Weight = 0 }},
		{"bad class lengths", func(w *Workload) { w.Classes[1].PromptTokens = LengthDist{Dist: DistEmpirical} }},
		{"unknown prefix mode", func(w *Workload) { w.PrefixCache.Mode = "hot" }},
		{"shared with no prefix", func(w *Workload) { w.PrefixCache = PrefixCache{Mode: PrefixShared} }},
	}
	for _, c := range cases {
		w := mixWorkload(1)
		c.edit(w)
		if _, err := NewGenerator(w); err == nil {
			t.Errorf("%s: accepted", c.why)
		} else if !strings.Contains(err.Error(), `"mix"`) {
			t.Errorf("%s: error %q does not name the workload", c.why, err)
		}
	}
	if _, err := NewGenerator(nil); err == nil {
		t.Error("nil workload accepted")
	}
}

// TestGeneratorGolden pins the exact schedule and prompts of one workload. Baselines
// compare runs by workload hash, and the hash covers the spec, not this code: a change
// that moves an arrival or a prompt byte makes old baselines measure something else, so it
// must be deliberate (go test ./workload -run TestGeneratorGolden -update) and called out.
func TestGeneratorGolden(t *testing.T) {
	w := mixWorkload(2024)
	w.PrefixCache = PrefixCache{Mode: PrefixShared, Tokens: 64, Groups: 2}
	w.Arrival.Profile = &RateProfile{Kind: "ramp", From: 5, To: 50, Over: 10 * time.Second}
	g := mustGenerator(t, w)
	var b strings.Builder
	fmt.Fprintf(&b, "calibration: %+v\narrivals (first 12):\n", g.Calibration())
	for _, a := range g.Arrivals()[:12] {
		fmt.Fprintf(&b, "  %v\n", a)
	}
	items := []Item{g.WarmupRequest(0), g.Request(0), g.Request(1), g.Request(2), g.Request(499)}
	for _, it := range items {
		fmt.Fprintf(&b, "item %d warmup=%v class=%q prompt_tokens=%d output_tokens=%d prompt_bytes=%d sha256=%x\n  %q\n",
			it.Index, it.Warmup, it.Class, it.PromptTokens, it.OutputTokens, len(it.Prompt), sha256.Sum256([]byte(it.Prompt)), it.Prompt[:min(len(it.Prompt), 360)])
	}
	w.Arrival = Arrival{Process: ArrivalClosed, Users: 2, Think: time.Second, ThinkDist: "exponential"}
	g = mustGenerator(t, w)
	fmt.Fprintf(&b, "think: %v %v %v\n", g.ThinkTime(0, 0), g.ThinkTime(0, 1), g.ThinkTime(1, 0))

	path := filepath.Join("testdata", "generator.golden")
	if updateGolden() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("generation changed (-golden +now); if deliberate, rerun with -update and say so in the change:\n%s", diff)
	}
}

// BenchmarkRequest builds one item with a 2,000-token prompt: the per-request cost paid
// by a closed-loop user or the dispatcher.
func BenchmarkRequest(b *testing.B) {
	for _, mode := range []string{PrefixCold, PrefixShared} {
		b.Run(mode, func(b *testing.B) {
			w := mixWorkload(1)
			w.Classes = nil
			w.PromptTokens = LengthDist{Dist: DistFixed, Value: 2000}
			w.PrefixCache = PrefixCache{Mode: mode, Tokens: 500, Groups: 4}
			g := mustGenerator(b, w)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				it := g.Request(i)
				if len(it.Prompt) < 7000 {
					b.Fatalf("prompt of %d bytes", len(it.Prompt))
				}
				i++
			}
		})
	}
}
