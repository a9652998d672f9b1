package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// ClassLengths is the longest request a class of a workload can send: its prompt and
// output maxima in tokens. Unbounded is set when a length has no upper limit (a lognormal
// without max, built in code), in which case no maximum can be checked.
type ClassLengths struct {
	Class     string // "" for the workload's own lengths (no classes)
	MaxPrompt int
	MaxOutput int
	Unbounded bool
	// Session marks the longest session of a session workload: MaxPrompt is the longest
	// history its last turn can carry with that turn's message, MaxOutput its answer.
	// Turns, System and MaxUser are the maxima it comes from (MaxUser 0 for a dataset).
	Session                bool
	Turns, System, MaxUser int
}

// Total is the most tokens one request of the class can hold: prompt plus output.
func (c ClassLengths) Total() int { return c.MaxPrompt + c.MaxOutput }

// MaxLengths returns the longest prompt and output of each class of w (one entry for a
// workload without classes). A shared prefix longer than the drawn length makes a prompt
// of the prefix alone, so it counts as a prompt length too.
func MaxLengths(w *Workload) []ClassLengths {
	one := func(name string, p, o LengthDist) ClassLengths {
		mp, okp := distMax(p)
		mo, oko := distMax(o)
		if w.PrefixCache.Mode == PrefixShared {
			mp = max(mp, w.PrefixCache.Tokens)
		}
		if pc := w.PrefixCache; pc.Mode == PrefixRAG {
			mp = max(mp, pc.DocsPerRequest*pc.DocTokens+(runSaltLen+saltLen)/int(DefaultCharsPerToken)+1)
		}
		return ClassLengths{Class: name, MaxPrompt: mp, MaxOutput: mo, Unbounded: !okp || !oko}
	}
	if w.Sessions != nil {
		c := sessionLengths(w)
		c.Session = true
		return []ClassLengths{c}
	}
	if w.Arrival.HasLengths() {
		c := ClassLengths{}
		for _, r := range w.Arrival.Records {
			c.MaxPrompt, c.MaxOutput = max(c.MaxPrompt, r.Input), max(c.MaxOutput, r.Output)
		}
		if w.PrefixCache.Mode == PrefixShared {
			c.MaxPrompt = max(c.MaxPrompt, w.PrefixCache.Tokens)
		}
		return []ClassLengths{c}
	}
	if ds := w.Dataset; ds != nil {
		// Prompt lengths at the documented estimate: the engine's count is not known
		// before the run.
		c := ClassLengths{}
		var saltBuf [40]byte
		extra := len(appendSalt(saltBuf[:0], w.Seed, 0, phaseMeasured, 0))
		if w.PrefixCache.Mode == PrefixShared {
			extra += int(float64(w.PrefixCache.Tokens)*DefaultCharsPerToken) + 1
		}
		needOut := false
		for _, e := range ds.Entries {
			c.MaxPrompt = max(c.MaxPrompt, int(math.Ceil(float64(len(e.Prompt)+extra)/DefaultCharsPerToken)))
			switch {
			case e.OutputLen > 0:
				c.MaxOutput = max(c.MaxOutput, e.OutputLen)
			case e.Reply != "":
				c.MaxOutput = max(c.MaxOutput, int(math.Ceil(float64(len(e.Reply))/DefaultCharsPerToken)))
			default:
				needOut = true
			}
		}
		if needOut {
			mo, ok := distMax(w.OutputTokens)
			c.MaxOutput, c.Unbounded = max(c.MaxOutput, mo), !ok
		}
		return []ClassLengths{c}
	}
	if len(w.Classes) == 0 {
		return []ClassLengths{one("", w.PromptTokens, w.OutputTokens)}
	}
	out := make([]ClassLengths, 0, len(w.Classes))
	for _, c := range w.Classes {
		p, o := c.PromptTokens, c.OutputTokens
		// A class built in code with no length of its own uses the workload's, as the
		// generator does.
		if p.Dist == "" && p.Value == 0 {
			p = w.PromptTokens
		}
		if o.Dist == "" && o.Value == 0 {
			o = w.OutputTokens
		}
		out = append(out, one(c.Name, p, o))
	}
	return out
}

// distMax is the largest length d can draw; ok is false when it has no upper bound.
func distMax(d LengthDist) (int, bool) {
	switch d.Dist {
	case DistFixed, "":
		return max(d.Value, 1), true
	case DistUniform:
		return d.Max, true
	case DistLognormal:
		return d.Max, d.Max > 0
	case DistEmpirical:
		if len(d.Values) == 0 {
			return 0, false
		}
		m := slices.Max(d.Values)
		if d.Max > 0 {
			m = min(m, d.Max)
		}
		return max(m, 1), true
	}
	return 0, false
}

// ContextError says that requests of a workload cannot fit the engine's context: every
// such request would be cut short or refused by the engine, and counting it would measure
// the engine's limit, not the workload.
type ContextError struct {
	Config string // the workload file, for the message
	// Line and Col place the message at the key whose lengths do not fit (sessions);
	// 0: the file alone.
	Line, Col int
	Workload  string
	Limit     int    // the engine's context per request, in tokens
	Source    string // where the limit came from, e.g. "/v1/models max_model_len"
	Over      []ClassLengths
}

func (e *ContextError) Error() string {
	var b strings.Builder
	if e.Config != "" && e.Line > 0 {
		fmt.Fprintf(&b, "%s:%d:%d: ", e.Config, e.Line, e.Col)
	} else if e.Config != "" {
		fmt.Fprintf(&b, "%s: ", e.Config)
	}
	fmt.Fprintf(&b, "workload %q does not fit the engine's context of %d tokens per request", e.Workload, e.Limit)
	if e.Source != "" {
		fmt.Fprintf(&b, " (%s)", e.Source)
	}
	b.WriteString(": ")
	for i, c := range e.Over {
		if i > 0 {
			b.WriteString("; ")
		}
		if c.Class != "" {
			fmt.Fprintf(&b, "class %q: ", c.Class)
		}
		switch {
		case c.Session && c.MaxUser > 0:
			fmt.Fprintf(&b, "the longest session's history, system_prompt_tokens %d + turns max %d × (user_tokens max %d + output_tokens max %d), is %d tokens > %d",
				c.System, c.Turns, c.MaxUser, c.MaxOutput, c.Total(), e.Limit)
		case c.Session:
			fmt.Fprintf(&b, "the longest conversation of the dataset (%d turns at most) holds %d tokens with its answers > %d", c.Turns, c.Total(), e.Limit)
		default:
			fmt.Fprintf(&b, "prompt_tokens max %d + output_tokens max %d = %d > %d", c.MaxPrompt, c.MaxOutput, c.Total(), e.Limit)
		}
	}
	b.WriteString(". Nothing was sent: lower the maxima to at most the context, or serve the model with a longer one")
	return b.String()
}

// CheckContext compares each class's longest request (prompt max + output max) with the
// engine's context per request and returns a *ContextError naming every class over it.
// A limit of 0 (the engine does not say) and unbounded lengths are not checked.
func CheckContext(w *Workload, limit int, source, config string) error {
	if limit <= 0 {
		return nil
	}
	var over []ClassLengths
	for _, c := range MaxLengths(w) {
		if !c.Unbounded && c.Total() > limit {
			over = append(over, c)
		}
	}
	if len(over) == 0 {
		return nil
	}
	e := &ContextError{Config: config, Workload: w.Name, Limit: limit, Source: source, Over: over}
	if w.Sessions != nil {
		e.Line, e.Col = w.Sessions.Line, w.Sessions.Col
	}
	return e
}
