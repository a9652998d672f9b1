package gate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/slogate/slogate/gate/stats"
	"github.com/slogate/slogate/workload"
)

// A calibration estimates a spread, not a sign, so "stop when the answer is known" asks
// what the spread is for: the interval a candidate of `repeats` runs will be judged by
// against this baseline. Each gated rule's question is whether its tolerance is wider
// than that interval's half-width (a supported tolerance, which does not flap on
// noise). After each run from a minimum on (calibrate --min-runs), the run-to-run
// spread's confidence interval (χ² on the calibration's degrees of freedom) decides it:
//
//   - supported: even at the interval's upper end, the half-width with the runs so far
//     fits within the tolerance, so more runs cannot change the answer;
//   - too narrow: even at its lower end, and with every run up to the maximum, the
//     half-width exceeds the tolerance, so more runs cannot save the rule.
//
// The runs stop when every rule is decided either way, else at the maximum. The
// interval at each look is at level 1 − α/L for the L looks the maximum allows
// (Bonferroni over a fixed, finite set of looks), so that the chance that any look's
// interval misses the true spread, and a decision is wrong, stays within α however
// many looks are taken. A rule whose spread the runs cannot measure stays undecided.

// Reasons a sequential calibration stopped.
const (
	CalStopDecided = "decided"
	CalStopMaxRuns = "max_runs"
)

// Decisions of one rule's look at a calibration.
const (
	CalSupported = "supported"
	CalTooNarrow = "too_narrow"
)

// CalStop is how a sequential calibration ended (calibrate --min-runs).
type CalStop struct {
	MinRuns int `json:"min_runs"`
	MaxRuns int `json:"max_runs"`
	// Runs are the runs this calibration made before it stopped (appended runs count
	// here, the baseline's earlier ones do not).
	Runs   int    `json:"runs"`
	Reason string `json:"reason"`
	Why    string `json:"why"`
	// Rules are the gated rules' last look.
	Rules []CalRuleLook `json:"rules,omitempty"`
}

// CalRuleLook is one rule's look at the spread measured so far.
type CalRuleLook struct {
	Metric    string  `json:"metric"`
	Tolerance float64 `json:"tolerance"`
	// RunSD is the measured spread of one run (sd of the log); SDLo and SDHi its
	// interval at this look's level.
	RunSD float64 `json:"run_sd"`
	SDLo  float64 `json:"sd_lo"`
	SDHi  float64 `json:"sd_hi"`
	// Supported is the half-width of a candidate's interval against the runs so far
	// at SDHi; Best, against the maximum of runs at SDLo.
	Supported float64 `json:"supported_tolerance"`
	Best      float64 `json:"best_supported_tolerance"`
	// Decided is CalSupported, CalTooNarrow or "" (undecided).
	Decided string `json:"decided,omitempty"`
}

// LookCalibration is the stopping rule's look after run n of a calibration whose runs
// so far gave cal (of cal.Runs runs in all, earlier appended ones included) for
// workload w. It returns nil to go on, or how the runs end.
func LookCalibration(cfg *workload.File, w *workload.Workload, cal *Calibration, n, minRuns, maxRuns int) (*CalStop, error) {
	if n < minRuns && n < maxRuns {
		return nil, nil
	}
	looks, err := lookCalibration(cfg, w, cal, n, minRuns, maxRuns)
	if err != nil {
		return nil, err
	}
	st := &CalStop{MinRuns: minRuns, MaxRuns: maxRuns, Runs: n, Rules: looks}
	var sup, narrow, open []string
	for _, l := range looks {
		switch l.Decided {
		case CalSupported:
			sup = append(sup, fmt.Sprintf("%s supports ±%s (at most ±%.1f%%)", l.Metric, pctText(l.Tolerance), 100*l.Supported))
		case CalTooNarrow:
			narrow = append(narrow, fmt.Sprintf("%s cannot support ±%s (at least ±%.1f%% at %d runs)", l.Metric, pctText(l.Tolerance), 100*l.Best, maxRuns))
		default:
			open = append(open, l.Metric)
		}
	}
	decided := strings.Join(append(sup, narrow...), "; ")
	switch {
	case n >= maxRuns:
		st.Reason, st.Why = CalStopMaxRuns, fmt.Sprintf("every one of the %d runs ran", maxRuns)
		if len(open) > 0 {
			st.Why += "; undecided: " + strings.Join(open, ", ")
		}
		if decided != "" {
			st.Why += "; " + decided
		}
		return st, nil
	case len(open) == 0 && len(looks) > 0:
		st.Reason, st.Why = CalStopDecided, "every rule decided: "+decided
		return st, nil
	}
	return nil, nil
}

// lookCalibration is the look of every rule judged against noise (NoiseRules) with a
// tolerance.
func lookCalibration(cfg *workload.File, w *workload.Workload, cal *Calibration, n, minRuns, maxRuns int) ([]CalRuleLook, error) {
	rules, err := NoiseRules(cfg)
	if err != nil {
		return nil, err
	}
	conf := cfg.Gate.Confidence
	if conf == 0 {
		conf = stats.DefaultConfidence
	}
	// The looks the maximum allows share the error rate.
	level := 1 - (1-conf)/float64(max(maxRuns-minRuns+1, 1))
	repeats := max(w.Repeats, 1)
	total := cal.Runs + (maxRuns - n) // the baseline's runs at the maximum
	var out []CalRuleLook
	for _, rule := range rules {
		if rule.Tolerance <= 0 {
			continue
		}
		l := CalRuleLook{Metric: rule.Metric, Tolerance: rule.Tolerance}
		ms := cal.Lookup(rule.Metric)
		if ms == nil {
			out = append(out, l)
			continue
		}
		sp := ms.Spread()
		l.RunSD = sp.RunSD
		l.SDLo, l.SDHi = SpreadInterval(sp.RunSD, sp.DF, level)
		l.Supported = SupportedTolerance(l.SDHi, cal.Runs, repeats, conf)
		l.Best = SupportedTolerance(l.SDLo, total, repeats, conf)
		switch {
		case l.Supported <= rule.Tolerance:
			l.Decided = CalSupported
		case l.Best > rule.Tolerance:
			l.Decided = CalTooNarrow
		}
		out = append(out, l)
	}
	return out, nil
}

// SpreadInterval is the two-sided interval at level of a standard deviation sd
// estimated on df degrees of freedom from normal values: sd·√(df/χ²) at the χ²
// quantiles.
func SpreadInterval(sd float64, df int, level float64) (lo, hi float64) {
	if df <= 0 {
		return 0, math.Inf(1)
	}
	a := (1 - level) / 2
	c := distuv.ChiSquared{K: float64(df)}
	return sd * math.Sqrt(float64(df)/c.Quantile(1-a)), sd * math.Sqrt(float64(df)/c.Quantile(a))
}

// SupportedTolerance is the half-width, as a fraction, of the interval a candidate of
// repeats runs is judged by against a baseline of runs calibration runs whose spread
// of one run is sd: exp(t·sd·√(1/runs + 1/repeats)) − 1 on runs − 1 degrees of freedom.
func SupportedTolerance(sd float64, runs, repeats int, conf float64) float64 {
	if runs < 2 {
		return math.Inf(1)
	}
	q := stats.TQuantile((1+conf)/2, float64(runs-1))
	return math.Expm1(q * sd * math.Sqrt(1/float64(runs)+1/float64(max(repeats, 1))))
}

// A calibration that stopped because its rules were decided supported stopped when its
// runs happened to spread little: the stop selects a low estimate. Judged on that
// estimate, a candidate at the tolerance's edge fails more often than the gate's α. The
// spread is therefore corrected for the stop (MetricSpread.StopFactor), by simulating
// the stop itself: calibrations of normal runs make the same looks (the same minimum,
// maximum, level and decisions), and σ* is the spread at which those that stop decided
// supported at the same run give, on average, the log spread measured (found by
// bisection, every bisection step on the same seeded runs). What is stored is σ*
// times what a calibration of as many runs without a stop gives on average
// (exp E[log s/σ]), the estimate the gate's t interval expects; the factor is that
// over the measured spread, and never below 1.

// stopTrials is how many calibrations each step of StopFactor simulates.
const stopTrials = 2000

// stopFactors memoises StopFactor (an edge test calls it thousands of times), by its
// arguments with the spread to 0.5%.
var stopFactors sync.Map

// StopFactor is the factor (at least 1) by which the run-to-run spread sd, measured
// by a calibration that made n runs after earlier ones (calibrate --append) and stopped
// decided supported at the look for a rule of tolerance tol, under-states the spread,
// for candidates of repeats runs at confidence conf and looks from minRuns to maxRuns.
func StopFactor(sd float64, earlier, n, minRuns, maxRuns, repeats int, tol, conf float64) float64 {
	if !(sd > 0) || !(tol > 0) || n >= maxRuns || n < 2 || maxRuns < 2 {
		return 1
	}
	type key struct {
		sd                                   int
		earlier, n, minRuns, maxRuns, repeat int
		tol, conf                            float64
	}
	k := key{int(math.Round(200 * math.Log(sd))), earlier, n, minRuns, maxRuns, repeats, tol, conf}
	if f, ok := stopFactors.Load(k); ok {
		return f.(float64)
	}
	sd = math.Exp(float64(k.sd) / 200)
	level := 1 - (1-conf)/float64(max(maxRuns-minRuns+1, 1))
	r := float64(max(repeats, 1))
	limit := math.Log1p(tol)
	total := earlier + maxRuns
	// The looks' thresholds on the estimate, from run max(minRuns, 2) on: supported when
	// sd·sup[m] ≤ limit, too narrow when sd·narrow[m] > limit (lookCalibration's
	// SupportedTolerance of SpreadInterval, both linear in sd).
	first := max(minRuns, 2)
	sup := make([]float64, maxRuns+1)
	narrow := make([]float64, maxRuns+1)
	for m := first; m <= n; m++ {
		runs := earlier + m
		lo, hi := SpreadInterval(1, runs-1, level)
		sup[m] = stats.TQuantile((1+conf)/2, float64(runs-1)) * hi * math.Sqrt(1/float64(runs)+1/r)
		narrow[m] = stats.TQuantile((1+conf)/2, float64(total-1)) * lo * math.Sqrt(1/float64(total)+1/r)
	}
	// meanLog is the mean log estimate of the simulated calibrations at spread sigma
	// that stopped decided supported at run n, and how many did.
	meanLog := func(sigma float64) (float64, int) {
		rng := rand.New(rand.NewPCG(uint64(n), uint64(maxRuns)))
		var sum float64
		var stopped int
		for range stopTrials {
			// Welford's running mean and sum of squares over the earlier runs and these.
			var mean, m2 float64
			k := 0
			for m := 1 - earlier; m <= n; m++ {
				k++
				x := sigma * rng.NormFloat64()
				d := x - mean
				mean += d / float64(k)
				m2 += d * (x - mean)
				if m < first {
					continue
				}
				s := math.Sqrt(m2 / float64(k-1))
				if s*sup[m] <= limit {
					if m == n {
						sum += math.Log(s)
						stopped++
					}
					break
				}
				if s*narrow[m] > limit {
					break
				}
			}
		}
		if stopped == 0 {
			return 0, 0
		}
		return sum / float64(stopped), stopped
	}
	// σ* between the estimate and 20 times it (e³): the simulated mean grows with σ.
	lo, hi := math.Log(sd), math.Log(sd)+3
	target := math.Log(sd)
	for range 24 {
		mid := (lo + hi) / 2
		m, k := meanLog(math.Exp(mid))
		if k < 20 {
			// Too few stop at run n (at a small spread they stop before it, at a large
			// one they seldom stop supported): nothing to match, so the smaller side.
			hi = mid
			continue
		}
		if m < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	df := float64(earlier + n - 1)
	f := max(math.Exp((lo+hi)/2+0.5*(mathext.Digamma(df/2)-math.Log(df/2)))/sd, 1)
	stopFactors.Store(k, f)
	return f
}

// ApplyStop records how a sequential calibration ended, and corrects the spread of each
// metric whose rule the stop decided supported for the stop's selection (StopFactor). A
// calibration that ran to its maximum, or decided only that rules are too narrow,
// selected nothing downwards and is left as measured.
func ApplyStop(cfg *workload.File, w *workload.Workload, cal *Calibration, st *CalStop) {
	cal.Stop = st
	if st == nil || st.Reason != CalStopDecided {
		return
	}
	conf := cmp.Or(cfg.Gate.Confidence, stats.DefaultConfidence)
	for _, l := range st.Rules {
		if l.Decided != CalSupported {
			continue
		}
		for i := range cal.Metrics {
			ms := &cal.Metrics[i]
			if ms.Metric != l.Metric || ms.DF == 0 {
				continue
			}
			f := StopFactor(l.RunSD, cal.Runs-st.Runs, st.Runs, st.MinRuns, st.MaxRuns, max(w.Repeats, 1), l.Tolerance, conf)
			// Two rules on one metric: the larger correction.
			ms.StopFactor = max(ms.StopFactor, f)
		}
	}
}
