package gate

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// A block of an A/B job whose engine was started for it (restart) draws that start's
// offset: the speed a start happens to get (clocks, memory placement, compiled kernels,
// what the engine measured at start-up). Over the blocks those offsets are noise the
// blocks' spread sees. An engine started once for the whole job and swapped between
// blocks (sleep, memory_release, resident, or an engine someone else runs) keeps one
// start's offset through every block of its side: every pair of blocks carries the
// difference of the two sides' offsets, and the pairs' spread cannot see it however
// many there are. Over 200 seeded A/A jobs of swapped engines, intervals without it
// failed 3 (1.5%, over the 1% bound; docs/noise.md). The interval of such a job adds it
// from the baseline's calibration: its spread between engine starts (calibrate with an
// engine start per run or --restart-every K), once per side that kept its engine.

// startPart is what the engines' starts put into one rule's ratio that the blocks
// cannot see.
type startPart struct {
	// kept is the number of sides whose engine served all their blocks from one start.
	kept int
	// sd is the spread of one start's offset (sd of the log), df its degrees of
	// freedom; known says whether a calibration measured it.
	sd, df float64
	known  bool
	// bound says that the calibration's part was measured less surely than the whole
	// spread of its starts' means, and sd is that whole in its place (StartSpread).
	bound bool
}

// shared is the part as the statistics take it: nothing when no side kept its engine or
// the spread is unknown.
func (p startPart) shared() stats.Shared {
	if p.kept == 0 || !p.known {
		return stats.Shared{}
	}
	return stats.Shared{Var: float64(p.kept) * p.sd * p.sd, DF: p.df}
}

// keptSides names the sides of an A/B job whose blocks were not each served by an engine
// started for the block (AB.Restarted false): one start served all of them.
func keptSides(recs []*result.Record) []string {
	kept := map[string]bool{}
	var out []string
	for _, r := range recs {
		if r.AB == nil || r.AB.Restarted || kept[r.AB.Side] {
			continue
		}
		kept[r.AB.Side] = true
		out = append(out, r.AB.Side)
	}
	return out
}

// StartSpread is the calibration's spread of one engine start for metric, on df degrees
// of freedom, as an interval at confidence conf (0: stats.DefaultConfidence) takes it
// for the part the engines' starts put into a swapped job's ratio: its between_starts
// part, or for a calibration without the breakdown whose every run had its own start,
// its runs' spread less their sampling noise. ok is false when the calibration did not
// measure it.
//
// That part is a difference of two estimates: the spread of the starts' means (MS, on
// the starts' degrees of freedom) less what the levels below put into a mean (B: the
// runs' sampling noise, known from their bootstrap, or the spread of runs of one start
// over their count). A difference is measured less surely than its parts, the more so
// the smaller it is against them, and taken at the starts' degrees of freedom it made
// an interval too narrow: a swapped job of 32 blocks against a 10-start calibration
// whose part was about half of MS failed a change at its tolerance's edge 77–95 times
// in 2,000 (gate/edge_components_test.go), over the 50 its error rate allows. So the
// part is taken on its Welch–Satterthwaite degrees of freedom,
//
//	df_part = v² / (MS²/df + B²/df_B)        (v = MS − B; df_B infinite where B is known)
//
// and the interval is never wider than the whole of MS on the starts' degrees of
// freedom, which holds the part and everything below it, and whose degrees of freedom
// are exact: whichever of the two half-widths t(df_part)·√v and t(df)·√MS is the
// narrower at conf's level for this part is taken (bound true for the whole). A part
// that came out 0 or below has df_part 0 and so takes the whole: no special case, and no
// jump as the part shrinks. Several runs per start (calibrate --restart-every K) average
// the noise below out of MS, so that it can show starts that differ little.
func StartSpread(cal *Calibration, metric string, conf float64) (sd, df float64, ok, bound bool) {
	ms := cal.Lookup(metric)
	if ms == nil {
		return 0, 0, false, false
	}
	// whole is √MS; below is B and dfBelow its degrees of freedom (0: known).
	var whole, below, dfBelow float64
	switch c := ms.Components; {
	case c != nil && c.StartsSD != nil:
		sd, df = *c.StartsSD, float64(cmp.Or(c.StartsDF, c.DF))
		// A calibration older than start_means_sd, or of one run per start, has its
		// runs' whole spread.
		whole = ms.RunSD
		if c.StartMeansSD != nil && *c.StartMeansSD > 0 {
			whole = *c.StartMeansSD
		}
		below = max(whole*whole-sd*sd, 0)
		if c.RunsSD != nil && c.RunsDF > 0 {
			dfBelow = float64(c.RunsDF)
		}
	case c == nil && cal.Restarts:
		sd, df = math.Sqrt(max(ms.RunSD*ms.RunSD-ms.WithinSD*ms.WithinSD, 0)), float64(ms.DF)
		whole, below = ms.RunSD, ms.WithinSD*ms.WithinSD
	default:
		return 0, 0, false, false
	}
	if df <= 0 {
		return sd, df, false, false
	}
	if whole <= sd {
		return sd, df, true, false
	}
	v, m := sd*sd, whole*whole
	dfPart := 0.0
	if v > 0 {
		d := m * m / df
		if dfBelow > 0 {
			d += below * below / dfBelow
		}
		dfPart = v * v / d
	}
	// The level of the start part's quantile in a job at conf (stats.Shared.HalfWidth:
	// half of the error rate). Below one degree of freedom the part's half-width is
	// always the wider (t's quantile there is over 50).
	a := (1 - cmp.Or(conf, stats.DefaultConfidence)) / 2
	if dfPart >= 1 && stats.TQuantile(1-a/2, dfPart)*sd <= stats.TQuantile(1-a/2, df)*whole {
		return sd, dfPart, true, false
	}
	return whole, df, true, true
}

// StartBoundWhy says why a swapped job adds the whole spread of the calibration's
// starts' means (StartSpread's bound).
const StartBoundWhy = "the calibration's spread between engine starts is small against what its runs' own noise puts into its starts' means (0 where they moved no more than that noise), so it is measured less surely than that whole spread"

// startParts is each rule's start part for a job whose kept sides are kept, from cal
// (nil: none stored with the baseline).
func startParts(rules []string, kept []string, cal *Calibration, conf float64) []startPart {
	out := make([]startPart, len(rules))
	for i, metric := range rules {
		out[i].kept = len(kept)
		if len(kept) > 0 {
			out[i].sd, out[i].df, out[i].known, out[i].bound = StartSpread(cal, metric, conf)
		}
	}
	return out
}

// keptNote is the job's warning on engines that kept their start through their blocks:
// what the intervals add, or that they cannot, and what is missing.
func keptNote(kept []string, calPath string, cal *Calibration, unknown []string) string {
	sides := strings.Join(kept, " and ")
	head := fmt.Sprintf("the %s engine served every block of its side from one start (no restart per block): each start's offset stays in every block, and the blocks cannot see it", sides)
	if len(kept) > 1 {
		head = fmt.Sprintf("the %s engines each served every block of their side from one start (no restart per block): each start's offset stays in every block, and the blocks cannot see it", sides)
	}
	switch {
	case cal == nil:
		return head + fmt.Sprintf("; no calibration of the baseline was found (%s) to say how far engine starts differ, so the intervals hold the blocks' spread only: calibrate the baseline with an engine start per run (slogate calibrate --restart-every K), or run the blocks with restarts", calPath)
	case len(unknown) > 0:
		return head + fmt.Sprintf("; the baseline's calibration (%s) did not measure the spread between engine starts for %s, so their intervals hold the blocks' spread only: calibrate with an engine start per run (slogate calibrate --restart-every K)", calPath, joinAnd(unknown))
	}
	return head + fmt.Sprintf("; the intervals add the spread between engine starts of the baseline's calibration (%s) once per such side", calPath)
}

// CalibrationOf gives the calibration stored with the baseline of a workload on a
// hardware, and where it was looked for; nil when there is none.
type CalibrationOf func(workload, hardware string) (*Calibration, string)

// Once is c with each (workload, hardware) looked up once: a sequential job looks after
// every block, and its baselines do not change while it runs.
func (c CalibrationOf) Once() CalibrationOf {
	type key struct{ workload, hardware string }
	type found struct {
		cal  *Calibration
		path string
	}
	var mu sync.Mutex
	seen := map[key]found{}
	return func(workload, hardware string) (*Calibration, string) {
		mu.Lock()
		defer mu.Unlock()
		k := key{workload, hardware}
		f, ok := seen[k]
		if !ok {
			f.cal, f.path = c(workload, hardware)
			seen[k] = f
		}
		return f.cal, f.path
	}
}

// CalibrationOf is the calibration of the baseline stored in s.
func (s Store) CalibrationOf(workload, hardware string) (*Calibration, string) {
	b, path, err := s.Lookup(workload, hardware)
	if path == "" {
		path = s.Dir
	}
	if err != nil || b == nil {
		return nil, path
	}
	return b.Noise, path
}

// jobStartParts are the start parts of an A/B job's rules (one per rule, in order) and
// the job's note on them ("" when every block had its own engine start).
func jobStartParts(rules []workload.Rule, defs []metricDef, recs []*result.Record, cals CalibrationOf, conf float64) ([]startPart, string) {
	kept := keptSides(recs)
	metrics := make([]string, len(rules))
	for i, r := range rules {
		metrics[i] = r.Metric
	}
	var cal *Calibration
	path := "no baselines given"
	if len(kept) > 0 && cals != nil && len(recs) > 0 {
		cal, path = cals(recs[0].Workload, HardwareOf(recs[0]))
	}
	parts := startParts(metrics, kept, cal, conf)
	if len(kept) == 0 {
		return parts, ""
	}
	var unknown []string
	for i, p := range parts {
		if defs[i].kind == kindBootstrap && isRelative(rules[i]) && !p.known {
			unknown = append(unknown, rules[i].Metric)
		}
	}
	return parts, keptNote(kept, path, cal, unknown)
}
