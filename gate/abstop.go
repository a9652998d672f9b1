package gate

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// An A/B job whose clear answer is known after a few blocks need not run the rest: with
// an engine start per block, every block costs minutes of a GPU. The job looks after
// every block (from its minimum on) at each gated rule's confidence sequence
// (stats.SequentialBlocks: valid however often it is looked at) and stops when the
// answer is known: a rule whose whole sequence is beyond its tolerance (the job fails
// whatever the others say), or every rule's sequence within its tolerance. A close
// call runs to the maximum. With the minimum equal to the maximum the job is the fixed
// design of old, judged by the blocks' regression interval (stats.CompareBlocks).

// Reasons of Stopped.
const (
	StopDecided   = "decided"    // the answer was known before the maximum
	StopMaxBlocks = "max_blocks" // the maximum was reached
	// StopFutile: no rule is likely to be shown beyond its tolerance (worse or better)
	// by the maximum at the noise seen (ab --futility-from); the job is judged by its
	// sequences as at the maximum.
	StopFutile = "futile"
)

// MinFutilityFrom is the fewest blocks a futility look may start from: four pairs, so
// that the forecast rests on the spread of more than a couple of pairs.
const MinFutilityFrom = 8

// Stopped says when and why an A/B job stopped adding blocks.
type Stopped struct {
	// Reason is StopDecided, StopFutile or StopMaxBlocks.
	Reason string `json:"reason"`
	// AtBlock is the block after which the job stopped (its blocks run).
	AtBlock int `json:"at_block"`
	// Why says it in words: "every rule decided", "itl_p99 decided fail", "no
	// decision".
	Why string `json:"why"`
}

// ABStop is the stopping rule of an A/B job: it looks after at least MinBlocks blocks
// and stops at MaxBlocks. MinBlocks equal to MaxBlocks (or 0) is the fixed design.
//
// With FutilityFrom (0: none) it also stops, from that block on, when no undecided
// rule has as much as a stats.FutilityPower chance of being shown beyond its tolerance
// (a fail or an improvement) by MaxBlocks if its pairs went on as they have
// (stats.Futile): an engine against itself on a host noisier than its tolerance, whose
// further blocks could at best turn a pass undecided into a pass decided. A futile stop
// never fails a job that the maximum would have passed (the job is judged by the same
// sequences, valid at every look), but a regression whose first pairs understate it may
// stop undecided: the later the futility looks start, the rarer that is
// (docs/noise.md).
//
// With FinalShare (0: none) a job that reaches its maximum is judged there by the
// blocks' fixed interval (stats.CompareBlocks) at that share of the error rate, and
// its looks before the maximum by the sequences at the rest: the chance of a wrong
// decision is at most the sum of the two, however often the job looks (a union bound).
// The fixed interval of all the blocks is much narrower than the sequence at the same
// blocks (the sequence pays for every look it may take), so a close call that runs to
// the maximum is judged with the power of the fixed design, at the price of sequences
// a little wider before it.
type ABStop struct {
	MinBlocks, MaxBlocks int
	FutilityFrom         int
	FinalShare           float64
}

// MaxFinalShare is the largest share of the error rate a job may keep for its maximum:
// the sequences' looks keep the rest, and with less than a tenth they could hardly stop
// anything early.
const MaxFinalShare = 0.9

// CheckFinal says what is wrong with s.FinalShare, nil when nothing: from 0 to
// MaxFinalShare, and 0 unless the job is sequential.
func (s ABStop) CheckFinal() error {
	f := s.FinalShare
	if !(f >= 0 && f <= MaxFinalShare) {
		return fmt.Errorf("want a share of the error rate from 0 (none: the sequences judge the maximum too) to %g", MaxFinalShare)
	}
	if f > 0 && !s.Sequential() {
		return fmt.Errorf("a job of a fixed %d blocks is judged by the fixed interval at the whole error rate already: a share for its maximum needs a minimum below the maximum", s.MaxBlocks)
	}
	return nil
}

// SeqConfidence is the level of the sequences at the looks before the maximum for an
// overall confidence conf: all of it without a final share.
func (s ABStop) SeqConfidence(conf float64) float64 {
	return 1 - (1-conf)*(1-s.FinalShare)
}

// FinalConfidence is the level of the fixed interval that judges a job at its maximum
// (FinalShare of the error rate); 0 when the sequences judge it.
func (s ABStop) FinalConfidence(conf float64) float64 {
	if s.FinalShare <= 0 {
		return 0
	}
	return 1 - (1-conf)*s.FinalShare
}

// judgePolicy is the policy that judges a job that ended after n blocks under s, from
// pol at the job's confidence: the sequences' share of the error rate when the sequence
// judges it (seq), else the fixed interval's (the whole rate, or a sequential job's
// final share at its maximum).
func (s ABStop) judgePolicy(pol stats.Policy, n int) (_ stats.Policy, seq bool) {
	conf := cmp.Or(pol.Confidence, stats.DefaultConfidence)
	seq = !s.judgedFixedAt(n)
	switch {
	case seq:
		pol.Confidence = s.SeqConfidence(conf)
	case s.Sequential():
		pol.Confidence = s.FinalConfidence(conf) // the job's stopped.why says so
	}
	return pol, seq
}

// judgedFixedAt says whether a job of n blocks under s is judged by the fixed interval:
// a fixed job always, a sequential one with a final share when it reached its maximum.
func (s ABStop) judgedFixedAt(n int) bool {
	return !s.Sequential() || (s.FinalShare > 0 && n >= s.MaxBlocks)
}

// CheckFutility says what is wrong with s.FutilityFrom, nil when nothing: it is 0, or
// an even block from MinFutilityFrom and from MinBlocks to below MaxBlocks.
func (s ABStop) CheckFutility() error {
	f, from := s.FutilityFrom, max(MinFutilityFrom, s.MinBlocks)
	if f == 0 || (f >= from && f%2 == 0 && f < s.MaxBlocks) {
		return nil
	}
	return fmt.Errorf("want 0 (never) or an even block from %d (four pairs, and the minimum of %d blocks) to below the maximum of %d", from, s.MinBlocks, s.MaxBlocks)
}

// Sequential says whether the job may stop before its maximum.
func (s ABStop) Sequential() bool { return s.MinBlocks > 0 && s.MinBlocks < s.MaxBlocks }

// stopOf is the stopping rule a job's records were made under.
func stopOf(r *result.Record) ABStop {
	return ABStop{MinBlocks: r.AB.MinBlocks, MaxBlocks: r.AB.Blocks, FutilityFrom: r.AB.FutilityFrom, FinalShare: r.AB.FinalShare}
}

// LookAB is the stopping rule's look after a block of one workload's A/B job: recs are
// the job's blocks so far (of that workload, in order). It returns nil to go on, or
// when and why to stop. A job that is not sequential stops at its maximum only.
//
// cals gives the baseline's calibration (nil: none), whose spread between engine starts
// joins the sequences of a job whose engines were kept through their blocks, as
// EvaluateAB's.
func LookAB(cfg *workload.File, stop ABStop, recs []*result.Record, cals CalibrationOf) (*Stopped, error) {
	n := len(recs)
	if n >= stop.MaxBlocks {
		return &Stopped{Reason: StopMaxBlocks, AtBlock: n, Why: "no decision before the maximum"}, nil
	}
	if !stop.Sequential() || n < stop.MinBlocks || n%2 != 0 {
		return nil, nil // a decision changes only when a pair of blocks completes
	}
	rules, defs, err := ruleDefs(cfg)
	if err != nil {
		return nil, err
	}
	ab := make([]abBlock, n)
	for i, r := range recs {
		if r.AB == nil {
			return nil, inputErrorf("%s: the record of workload %q has no A/B block: not a record of slogate ab", cfg.Path, r.Workload)
		}
		if why := r.Unfit(); why != "" {
			// The job measures no more blocks once one did not measure the engine.
			return nil, &UnfitError{Workload: r.Workload, Reason: fmt.Sprintf("block %d (%s side): %s", r.AB.Block, r.AB.Side, why)}
		}
		ab[i] = abBlock{r: runOf(r), candidate: r.AB.Side == result.SideCandidate}
	}
	parts, _ := jobStartParts(rules, defs, recs, cals, cfg.Gate.Confidence)
	if reason, why := lookBlocks(rules, defs, ab, cfg.Gate.Confidence, parts, stop); reason != "" {
		return &Stopped{Reason: reason, AtBlock: n, Why: why}, nil
	}
	return nil, nil
}

// lookBlocks is one look at every gated rule's confidence sequence over the blocks so
// far: stop (a reason) when a rule is decided fail or every rule is decided, or from
// stop.FutilityFrom when no undecided rule is likely to be shown beyond its tolerance
// by the maximum (stats.Futile); and why. A rule is decided when its sequence settles
// its verdict (stats.Decide): fail, pass or improved. parts are the rules' start parts
// (nil: none).
func lookBlocks(rules []workload.Rule, defs []metricDef, ab []abBlock, confidence float64, parts []startPart, stop ABStop) (string, string) {
	confidence = cmp.Or(confidence, stats.DefaultConfidence)
	var decided, failed, futile []string
	open := 0
	for i, rule := range rules {
		def := defs[i]
		if def.kind != kindBootstrap || !isRelative(rule) || lacks(def, ab) {
			// An exact metric has no noise to wait out, and an absolute limit is
			// checked on the candidate's blocks run, whenever the job stops.
			continue
		}
		var sp startPart
		if parts != nil {
			sp = parts[i]
		}
		l := lookRule(blocksOf(def, ab), seqPolicy(rule, def, confidence), sp.shared(), stop)
		switch l.dec {
		case stats.DecidedFail:
			failed = append(failed, rule.Metric)
		case stats.DecidedPass, stats.DecidedImproved:
			decided = append(decided, rule.Metric)
		default:
			open++
			if l.futile {
				futile = append(futile, fmt.Sprintf("%s (±%.1f%% at %d blocks against its %s: %s likely beyond it)", rule.Metric, 100*math.Expm1(l.hw), stop.MaxBlocks, pctText(rule.Tolerance), chanceText(l.power)))
			}
		}
	}
	switch {
	case len(failed) > 0:
		return StopDecided, strings.Join(failed, ", ") + " decided fail"
	case open == 0 && len(decided) > 0:
		return StopDecided, "every rule decided"
	case open > 0 && len(futile) == open:
		return StopFutile, "no rule is likely to leave its tolerance by the maximum at the noise seen: " + strings.Join(futile, ", ")
	}
	return "", ""
}

// ruleLook is one look at one rule's blocks: its sequence's decision, and for an
// undecided rule from the futility block on whether it is futile, with the forecast's
// half-width (of the log ratio) at the maximum and its chance of a decision beyond the
// tolerance.
type ruleLook struct {
	dec       stats.Decision
	futile    bool
	hw, power float64
}

// lookRule looks at one rule's blocks so far (sb, in order) under stop: the pairs'
// confidence sequence at the sequences' share of pol's confidence (the job's), with the
// part sh that the blocks cannot see, and from stop.FutilityFrom the futility forecast
// (stats.Futile). lookBlocks calls it for every gated rule; the noise simulations call
// it on the blocks they draw.
func lookRule(sb []stats.Block, pol stats.Policy, sh stats.Shared, stop ABStop) ruleLook {
	conf := cmp.Or(pol.Confidence, stats.DefaultConfidence)
	pol.Confidence = stop.SeqConfidence(conf)
	var l ruleLook
	if _, _, _, dec, ok := stats.SequentialBlocksShared(sb, pol, sh); ok {
		l.dec = dec
	}
	if l.dec == stats.Undecided && stop.FutilityFrom > 0 && len(sb) >= stop.FutilityFrom {
		f, hw, power, ok := stats.Futile(sb, pol, sh, stop.MaxBlocks/2, stop.FinalConfidence(conf))
		l.futile, l.hw, l.power = ok && f, hw, power
	}
	return l
}

// chanceText writes a futility forecast's chance for a reader: "3.2%", "under 0.1%".
func chanceText(p float64) string {
	if p < 0.001 {
		return "under 0.1%"
	}
	return pctText(p)
}

// lacks reports whether a block's run cannot give def (missingData judges the rule).
func lacks(def metricDef, ab []abBlock) bool {
	b, c := sides(ab)
	_, _, l := missingData(def, b, c)
	return l
}

func isRelative(rule workload.Rule) bool {
	return rule.Direction != "" || rule.Tolerance > 0 || (rule.Max == nil && rule.Min == nil)
}

func seqPolicy(rule workload.Rule, def metricDef, confidence float64) stats.Policy {
	return stats.Policy{Direction: ruleDirection(rule, def), Tolerance: rule.Tolerance, Confidence: confidence}
}

func blocksOf(def metricDef, ab []abBlock) []stats.Block {
	sb := make([]stats.Block, len(ab))
	for i, b := range ab {
		sb[i] = stats.Block{Candidate: b.candidate, At: b.at, Metric: b.r.metric(def)}
	}
	return sb
}

// stoppedOf replays the stopping rule over a sequential job's blocks: where it stopped
// and why. A job cut short of both (an engine that failed) says so.
func stoppedOf(rules []workload.Rule, defs []metricDef, ab []abBlock, stop ABStop, confidence float64, parts []startPart) *Stopped {
	confidence = cmp.Or(confidence, stats.DefaultConfidence)
	for k := stop.MinBlocks; k <= len(ab); k++ {
		if k%2 != 0 || k >= stop.MaxBlocks {
			continue
		}
		if reason, why := lookBlocks(rules, defs, ab[:k], confidence, parts, stop); reason != "" {
			return &Stopped{Reason: reason, AtBlock: k, Why: why}
		}
	}
	if len(ab) >= stop.MaxBlocks {
		why := "no decision before the maximum"
		if c := stop.FinalConfidence(confidence); c > 0 {
			why += fmt.Sprintf("; judged there by the blocks' fixed interval at %s confidence (--final-share %g)", pctText(c), stop.FinalShare)
		}
		return &Stopped{Reason: StopMaxBlocks, AtBlock: len(ab), Why: why}
	}
	return &Stopped{Reason: StopMaxBlocks, AtBlock: len(ab), Why: fmt.Sprintf("the job ended after %d of at most %d blocks without a decision", len(ab), stop.MaxBlocks)}
}

// NoiseRules are cfg's rules that the gate judges against noise (a bootstrapped metric
// with a relative part): the rules a stopping rule waits for and a plan costs.
func NoiseRules(cfg *workload.File) ([]workload.Rule, error) {
	rules, defs, err := ruleDefs(cfg)
	if err != nil {
		return nil, err
	}
	var out []workload.Rule
	for i, r := range rules {
		if defs[i].kind == kindBootstrap && isRelative(r) {
			out = append(out, r)
		}
	}
	return out, nil
}
