package gate

import (
	"fmt"
	"math"
	"strings"

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
