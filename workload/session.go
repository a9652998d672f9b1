package workload

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Multi-turn sessions: a session opens with the run's cold salt (so that no two sessions,
// and no two runs, share a cached prefix), then an optional system prompt, then its
// turns. Turn n sends the whole history (the system prompt, every earlier message and the
// engine's own answers) and one new message, so the history of a turn is a prefix of the
// next turn's prompt, as in real chat. What is drawn (the number of turns, the lengths,
// the think times, the texts) comes from streams keyed by (seed, phase, session, turn)
// only.

// Session is what a session sends besides its turns.
type Session struct {
	Index  int  // 0-based within its phase
	Warmup bool // a warm-up session (its first turn is the warm-up request)
	// System is the system message, "" for none; SystemTokens its target length.
	System       string
	SystemTokens int
	Turns        int // turns the session sends, when none fails
}

// Turn is turn n (1-based) of a session: the new user message and the lengths.
type Turn struct {
	N int
	// Text is the new user message. The first turn of a session without a system prompt
	// opens with the session's salt.
	Text string
	// Tokens is the target length of Text; OutputTokens the answer's (max_tokens).
	Tokens, OutputTokens int
	// Think is the pause between the end of turn N-1 and the sending of turn N; 0 for the
	// first turn.
	Think time.Duration
}

// Streams of the session generator.
const (
	streamTurns      uint64 = 0x510e527fade682d1
	streamTurnUser   uint64 = 0x9b05688c2b3e6c1f
	streamTurnOutput uint64 = 0x1f83d9abfb41bd6b
	streamTurnThink  uint64 = 0x5be0cd19137e2179
	streamTurnText   uint64 = 0xcbbb9d5dc1059ed8
	streamSystem     uint64 = 0x629a292a367cd507
)

// HasSessions reports whether the generator's workload is a set of conversations.
func (g *Generator) HasSessions() bool { return g.w.Sessions != nil }

// Session returns measured session i.
func (g *Generator) Session(i int) Session { return g.session(phaseMeasured, i) }

// Turn returns turn n (1-based) of measured session i.
func (g *Generator) Turn(i, n int) Turn { return g.turn(phaseMeasured, i, n) }

// sessionEntry is the dataset conversation session i replays.
func (g *Generator) sessionEntry(i int) *DatasetEntry {
	ds := g.w.Dataset
	return &ds.Entries[i%len(ds.Entries)]
}

func (g *Generator) fromDataset() bool { return g.w.Dataset != nil && g.w.Dataset.Sessions }

func entryTurns(e *DatasetEntry) []DatasetTurn {
	if len(e.Turns) > 0 {
		return e.Turns
	}
	return []DatasetTurn{{User: e.Prompt, Reply: e.Reply}}
}

func (g *Generator) session(phase uint64, i int) Session {
	s := Session{Index: i, Warmup: phase == phaseWarmup}
	ss := g.w.Sessions
	if g.fromDataset() {
		s.Turns = len(entryTurns(g.sessionEntry(i)))
	} else {
		r := newRNG(g.w.Seed, streamTurns, phase, uint64(i))
		s.Turns = g.impl.turns.sample(&r)
	}
	if ss.SystemPromptTokens > 0 {
		var saltBuf [40]byte
		salt := appendSalt(saltBuf[:0], g.w.Seed, g.run, phase, i)
		r := newRNG(g.w.Seed, streamSystem, phase, uint64(i))
		s.System = string(salt) + corpusText(r.intN(len(corpus)), max(g.charsFor(ss.SystemPromptTokens)-len(salt), 0))
		s.SystemTokens = ss.SystemPromptTokens
	}
	return s
}

func (g *Generator) turn(phase uint64, i, n int) Turn {
	t := Turn{N: n}
	ss := g.w.Sessions
	key := []uint64{phase, uint64(i), uint64(n)}
	if n > 1 {
		r := newRNG(g.w.Seed, streamTurnThink, key...)
		t.Think = ss.ThinkTime.sample(&r)
	}
	// The salt opens the session: the system prompt when there is one, else the first
	// message.
	var saltBuf [40]byte
	var salt []byte
	if n == 1 && ss.SystemPromptTokens == 0 {
		salt = appendSalt(saltBuf[:0], g.w.Seed, g.run, phase, i)
	}
	if g.fromDataset() {
		e := g.sessionEntry(i)
		turns := entryTurns(e)
		dt := turns[min(n, len(turns))-1]
		t.Text = string(salt) + dt.User
		t.Tokens = g.estimateTokens(t.Text)
		t.OutputTokens = max(g.estimateTokens(dt.Reply), 1)
		if dt.Reply == "" {
			t.OutputTokens = 1
		}
		return t
	}
	ur := newRNG(g.w.Seed, streamTurnUser, key...)
	or := newRNG(g.w.Seed, streamTurnOutput, key...)
	t.Tokens = g.impl.user.sample(&ur)
	t.OutputTokens = g.impl.output.sample(&or)
	tr := newRNG(g.w.Seed, streamTurnText, key...)
	start := wordStart(tr.intN(len(corpus)))
	end := start
	if own := g.charsFor(t.Tokens) - len(salt); own > 0 {
		end = cutEnd(start, own)
	}
	var b strings.Builder
	b.Grow(len(salt) + end - start)
	b.Write(salt)
	writeLoop(&b, start, end)
	t.Text = b.String()
	return t
}

// sessionRequest is warm-up request i of a session workload: the first turn of warm-up
// session i, sent alone (with its system prompt folded in front, as one user message).
func (g *Generator) sessionRequest(phase uint64, i int, warm bool) Item {
	s := g.session(phase, i)
	t := g.turn(phase, i, 1)
	it := Item{Index: i, Warmup: warm, PromptTokens: s.SystemTokens + t.Tokens, OutputTokens: t.OutputTokens, Prompt: t.Text}
	if s.System != "" {
		it.Prompt = s.System + "\n" + t.Text
	}
	return it
}

// newSessionSamplers prepares the session samplers.
func (g *Generator) newSessionSamplers() error {
	ss := g.w.Sessions
	if ss.Count < 1 {
		return fmt.Errorf("sessions: count %d must be >= 1", ss.Count)
	}
	if err := ss.ThinkTime.check(); err != nil {
		return fmt.Errorf("sessions think_time: %w", err)
	}
	if g.fromDataset() {
		if g.w.Dataset.Format != DatasetShareGPT || len(g.w.Dataset.Entries) == 0 {
			return fmt.Errorf("sessions from a dataset need a loaded %s dataset", DatasetShareGPT)
		}
		return nil
	}
	var err error
	im := &g.impl
	if im.turns, err = newSampler(ss.Turns); err != nil {
		return fmt.Errorf("sessions turns: %w", err)
	}
	if im.user, err = newSampler(ss.UserTokens); err != nil {
		return fmt.Errorf("sessions user_tokens: %w", err)
	}
	if im.output, err = newSampler(ss.OutputTokens); err != nil {
		return fmt.Errorf("sessions output_tokens: %w", err)
	}
	return nil
}

// check is what sampling needs to be safe; the loader reports file:line:col.
func (t ThinkTime) check() error {
	switch t.Dist {
	case "", DistFixed:
		if t.Value < 0 {
			return fmt.Errorf("fixed %v: must not be negative", t.Value)
		}
	case DistUniform:
		if t.Min < 0 || t.Max < t.Min {
			return fmt.Errorf("uniform [%v, %v]: need 0 <= min <= max", t.Min, t.Max)
		}
	case DistLognormal:
		if t.P50 <= 0 || t.P95 <= t.P50 || (t.Max > 0 && t.Max < t.P95) {
			return fmt.Errorf("lognormal p50 %v, p95 %v, max %v: need 0 < p50 < p95 <= max", t.P50, t.P95, t.Max)
		}
	case ThinkExponential:
		if t.Mean < 0 {
			return fmt.Errorf("exponential mean %v: must not be negative", t.Mean)
		}
	default:
		return fmt.Errorf("dist %q: expected one of %s", t.Dist, quoteList(validThinkTimeDists))
	}
	return nil
}

// sample draws one think time, rounded to the microsecond.
func (t ThinkTime) sample(r *rng) time.Duration {
	var x float64 // nanoseconds
	switch t.Dist {
	case "", DistFixed:
		return t.Value
	case DistUniform:
		x = float64(t.Min) + r.float64()*float64(t.Max-t.Min)
	case DistLognormal:
		mu := math.Log(float64(t.P50))
		sig := (math.Log(float64(t.P95)) - mu) / z95
		x = math.Exp(mu + sig*r.norm())
		if t.Max > 0 {
			x = min(x, float64(t.Max))
		}
	case ThinkExponential:
		x = r.exp() * float64(t.Mean)
	}
	return time.Duration(math.Round(x/1e3)) * time.Microsecond
}

// maxDuration is the longest think time t can draw; ok is false when it has no bound.
func (t ThinkTime) maxDuration() (time.Duration, bool) {
	switch t.Dist {
	case "", DistFixed:
		return t.Value, true
	case DistUniform:
		return t.Max, true
	case DistLognormal:
		return t.Max, t.Max > 0
	}
	return 0, false
}

var validThinkTimeDists = []string{DistFixed, DistUniform, DistLognormal, ThinkExponential}

// thinkKeys are the keys each think-time distribution accepts.
var thinkKeys = map[string][]string{
	DistFixed:        {"dist", "value"},
	DistUniform:      {"dist", "min", "max"},
	DistLognormal:    {"dist", "p50", "p95", "max"},
	ThinkExponential: {"dist", "mean"},
}

// sessions decodes workloads[].sessions.
func (d *decoder) sessions(path string, n *yaml.Node) *Sessions {
	s := &Sessions{}
	if k, ok := d.keys[path]; ok {
		s.Line, s.Col = k.Line, k.Column
	}
	d.mapping(n, path, "", []field{
		{"count", func(p string, v *yaml.Node) { s.Count = d.int(p, v) }},
		{"turns", func(p string, v *yaml.Node) { s.Turns = d.length(p, v) }},
		{"user_tokens", func(p string, v *yaml.Node) { s.UserTokens = d.length(p, v) }},
		{"output_tokens", func(p string, v *yaml.Node) { s.OutputTokens = d.length(p, v) }},
		{"think_time", func(p string, v *yaml.Node) { s.ThinkTime = d.thinkTime(p, v) }},
		{"system_prompt_tokens", func(p string, v *yaml.Node) { s.SystemPromptTokens = d.int(p, v) }},
	})
	return s
}

// thinkTime decodes a think-time distribution: a bare duration is a fixed pause.
func (d *decoder) thinkTime(path string, n *yaml.Node) ThinkTime {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		return ThinkTime{Dist: DistFixed, Value: d.duration(path, n)}
	}
	var t ThinkTime
	context := ""
	allowed := []string{"dist", "value", "min", "max", "p50", "p95", "mean"}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if resolve(n.Content[i]).Value == "dist" {
				v := resolve(n.Content[i+1])
				if v.Kind == yaml.ScalarNode && thinkKeys[v.Value] != nil {
					allowed = thinkKeys[v.Value]
					context = fmt.Sprintf("in %q for dist %q", disp(path), v.Value)
				}
			}
		}
	}
	all := map[string]func(p string, v *yaml.Node){
		"dist":  func(p string, v *yaml.Node) { t.Dist = d.enum(p, v, validThinkTimeDists) },
		"value": func(p string, v *yaml.Node) { t.Value = d.duration(p, v) },
		"min":   func(p string, v *yaml.Node) { t.Min = d.duration(p, v) },
		"max":   func(p string, v *yaml.Node) { t.Max = d.duration(p, v) },
		"p50":   func(p string, v *yaml.Node) { t.P50 = d.duration(p, v) },
		"p95":   func(p string, v *yaml.Node) { t.P95 = d.duration(p, v) },
		"mean":  func(p string, v *yaml.Node) { t.Mean = d.duration(p, v) },
	}
	fs := make([]field, len(allowed))
	for i, k := range allowed {
		fs[i] = field{k, all[k]}
	}
	d.mapping(n, path, context, fs)
	return t
}

// validateSessions checks workloads[].sessions at p (the workload at wp).
func (d *decoder) validateSessions(wp string, w *Workload) {
	p := join(wp, "sessions")
	ss := w.Sessions
	if !d.ok(p) {
		return
	}
	why := "a session workload sends sessions.count conversations"
	for _, k := range []string{"requests", "duration", "prompt_tokens", "output_tokens", "classes"} {
		if kp := join(wp, k); d.has(kp) {
			what := why
			switch k {
			case "prompt_tokens", "output_tokens":
				what = "the lengths of a session's turns are sessions.user_tokens and sessions.output_tokens"
			case "classes":
				what = "a session workload is one class"
			}
			d.errorf(d.keyNode(kp), "%q does not apply to a workload with \"sessions\": %s", k, what)
			d.bad[kp] = true
		}
	}
	if w.Arrival.Process == ArrivalClosed {
		d.errorf(d.keyNode(join(wp, "arrival.process")), "arrival process %q does not apply to a workload with \"sessions\": sessions arrive open-loop (constant, poisson, gamma or an offsets trace) and their turns are closed-loop already", ArrivalClosed)
	}
	if w.Arrival.HasLengths() {
		d.errorf(d.keyNode(join(wp, "arrival.format")), "a trace with lengths does not apply to a workload with \"sessions\": give an offsets trace of session starts")
	}
	if w.PrefixCache.Mode != PrefixCold && d.has(join(wp, "prefix_cache")) {
		d.errorf(d.keyNode(join(wp, "prefix_cache")), "prefix_cache mode %q does not apply to a workload with \"sessions\": each session opens with its own salt and shares its history with its own later turns", w.PrefixCache.Mode)
	}
	if d.require(p, "count", "give the number of sessions to send") {
		d.check(join(p, "count"), ss.Count >= 1, "must be at least 1")
		d.check(join(p, "count"), ss.Count <= MaxScheduledRequests, "%d sessions is over the bound of %d on one run's schedule", ss.Count, MaxScheduledRequests)
	}
	fromDS := w.Dataset != nil && w.Dataset.Sessions
	for _, k := range []string{"turns", "user_tokens", "output_tokens"} {
		kp := join(p, k)
		if fromDS {
			if d.has(kp) {
				d.errorf(d.keyNode(kp), "%q does not apply: the dataset's conversations give every session's turns and lengths (dataset.sessions is true)", k)
				d.bad[kp] = true
			}
			continue
		}
		if d.require(p, k, "") {
			d.validateLength(kp)
		}
	}
	if tp := join(p, "turns"); d.ok(tp) && !fromDS {
		if m, ok := distMax(ss.Turns); ok && m > maxTurns {
			d.fail(tp, d.nodes[tp], "a session of up to %d turns is over the bound of %d turns", m, maxTurns)
		}
	}
	d.check(join(p, "system_prompt_tokens"), ss.SystemPromptTokens >= 0, "must not be negative (0 is no system prompt)")
	d.validateThinkTime(join(p, "think_time"), &ss.ThinkTime)
}

// maxTurns bounds the turns of one session: every turn resends the history.
const maxTurns = 1000

func (d *decoder) validateThinkTime(p string, t *ThinkTime) {
	if !d.ok(p) {
		return
	}
	n := d.nodes[p]
	if n.Kind == yaml.ScalarNode {
		d.check(p, t.Value >= 0, "must not be negative")
		return
	}
	if !d.require(p, "dist", "expected one of "+quoteList(validThinkTimeDists)) || !d.ok(join(p, "dist")) {
		return
	}
	nonNeg := func(k string, v time.Duration) { d.check(join(p, k), v >= 0, "must not be negative") }
	switch t.Dist {
	case DistFixed:
		if d.require(p, "value", "") {
			nonNeg("value", t.Value)
		}
	case DistUniform:
		d.require(p, "min", "")
		d.require(p, "max", "")
		nonNeg("min", t.Min)
		if d.ok(join(p, "min")) {
			d.check(join(p, "max"), t.Max >= t.Min, "must be at least min (%s)", t.Min)
		}
	case DistLognormal:
		for _, k := range []string{"p50", "p95", "max"} {
			d.require(p, k, "")
		}
		d.check(join(p, "p50"), t.P50 > 0, "must be more than 0s")
		if d.ok(join(p, "p50")) {
			d.check(join(p, "p95"), t.P95 > t.P50, "must be more than p50 (%s)", t.P50)
		}
		if d.ok(join(p, "p95")) {
			d.check(join(p, "max"), t.Max >= t.P95, "must be at least p95 (%s)", t.P95)
		}
	case ThinkExponential:
		if d.require(p, "mean", "") {
			nonNeg("mean", t.Mean)
		}
	}
}

// sessionLengths is the longest session of w as one request: the longest history a turn
// can carry (system prompt and every earlier message and answer, at their maxima) and the
// last answer. ok is false when a length has no upper bound.
func sessionLengths(w *Workload) ClassLengths {
	ss := w.Sessions
	c := ClassLengths{Class: ""}
	salt := (saltLen + int(DefaultCharsPerToken) - 1) / int(DefaultCharsPerToken)
	if w.Dataset != nil && w.Dataset.Sessions {
		for k := range w.Dataset.Entries {
			turns := entryTurns(&w.Dataset.Entries[k])
			prompt, out := ss.SystemPromptTokens+salt, 0
			for j, t := range turns {
				u := int(math.Ceil(float64(len(t.User)) / DefaultCharsPerToken))
				a := max(int(math.Ceil(float64(len(t.Reply))/DefaultCharsPerToken)), 1)
				prompt += u
				if j < len(turns)-1 {
					prompt += a
				} else {
					out = a
				}
			}
			if prompt+out > c.Total() {
				c.MaxPrompt, c.MaxOutput = prompt, out
			}
		}
		c.Turns = 0
		for k := range w.Dataset.Entries {
			c.Turns = max(c.Turns, len(entryTurns(&w.Dataset.Entries[k])))
		}
		return c
	}
	turns, okt := distMax(ss.Turns)
	user, oku := distMax(ss.UserTokens)
	out, oko := distMax(ss.OutputTokens)
	c.Turns, c.MaxUser = turns, user
	c.System = ss.SystemPromptTokens
	c.MaxPrompt = ss.SystemPromptTokens + turns*user + max(turns-1, 0)*out
	if ss.SystemPromptTokens == 0 {
		c.MaxPrompt = max(c.MaxPrompt, salt)
	}
	c.MaxOutput = out
	c.Unbounded = !okt || !oku || !oko
	return c
}
