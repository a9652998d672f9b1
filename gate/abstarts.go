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
	// bound says that the calibration's part came out 0 and sd is the runs' whole
	// spread in its place (StartSpread).
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
// of freedom: its between_starts part, or for a calibration without the breakdown whose
// every run had its own start, its runs' spread less their sampling noise. ok is false
// when the calibration did not measure it.
//
// That part is a difference of two estimates (the runs' spread less what their own
// sampling noise puts into it) and comes out 0 whenever the runs happened to move no
// more than their sampling noise: over 20 simulated calibrations of 10 starts, for ITL
// p99 at a true spread between starts of 0.03 and a sampling noise of 0.036, in 5
// (TestNoiseSwapBudget logs both). A 0 then says only that the starts could
// not be told apart, not that they do not differ, and a swapped job that added nothing
// for them failed unchanged engines more often than its error rate. In its place
// StartSpread gives the whole spread of the starts' means (each start's runs averaged,
// their sampling noise and the runs of one server included; with one run per start,
// the runs' spread), which the spread of one start's offset does not exceed in
// expectation: bound is then true. Several runs per start (calibrate --restart-every
// K) average the noise below out of that bound, so that it can show starts that differ
// little.
func StartSpread(cal *Calibration, metric string) (sd, df float64, ok, bound bool) {
	ms := cal.Lookup(metric)
	if ms == nil {
		return 0, 0, false, false
	}
	switch c := ms.Components; {
	case c != nil && c.StartsSD != nil:
		sd, df = *c.StartsSD, float64(cmp.Or(c.StartsDF, c.DF))
	case c == nil && cal.Restarts:
		sd, df = math.Sqrt(max(ms.RunSD*ms.RunSD-ms.WithinSD*ms.WithinSD, 0)), float64(ms.DF)
	default:
		return 0, 0, false, false
	}
	if df <= 0 {
		return sd, df, false, false
	}
	if sd == 0 {
		// The starts' means spread by no more than the levels below put into them; a
		// calibration older than that figure, or of one run per start, has the runs'.
		whole := ms.RunSD
		if c := ms.Components; c != nil && c.StartMeansSD != nil && *c.StartMeansSD > 0 {
			whole = *c.StartMeansSD
		}
		if whole > 0 {
			return whole, df, true, true
		}
	}
	return sd, df, true, false
}

// startParts is each rule's start part for a job whose kept sides are kept, from cal
// (nil: none stored with the baseline).
func startParts(rules []string, kept []string, cal *Calibration) []startPart {
	out := make([]startPart, len(rules))
	for i, metric := range rules {
		out[i].kept = len(kept)
		if len(kept) > 0 {
			out[i].sd, out[i].df, out[i].known, out[i].bound = StartSpread(cal, metric)
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
func jobStartParts(rules []workload.Rule, defs []metricDef, recs []*result.Record, cals CalibrationOf) ([]startPart, string) {
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
	parts := startParts(metrics, kept, cal)
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
