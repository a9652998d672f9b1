package gate

import (
	"fmt"
	"math"
	"slices"

	"github.com/slogate/slogate/gate/stats"
)

// A pull request's run meets a fresh engine start on another day than the baseline's
// calibration. A calibration of back-to-back runs on one server sees none of what moves
// between engine starts or between days, and an unchanged server then fails (the
// llamacpp runs of docs/noise.md). A calibration can spread its runs over engine starts
// (calibrate --restart-every K) and over jobs on several days (calibrate --append); the
// spread is then split by where it comes from, nested as the runs are: within a run
// (sampling), between runs of one server, between engine starts of one day, between
// days.

// CalRun labels one calibration run: the engine start that served it (runs of one start
// share its number) and the day it ran (UTC, 2006-01-02).
type CalRun struct {
	Start int    `json:"start"`
	Day   string `json:"day"`
}

// Components are a metric's spread by source, as standard deviations of the log of one
// run's value; nil where the calibration's runs could not measure it.
type Components struct {
	// WithinSD: the sampling noise inside a run (its bootstrap over requests).
	WithinSD float64 `json:"within_sd"`
	// RunsSD: between runs of one server (measured with more than one run per start).
	RunsSD *float64 `json:"between_runs_sd,omitempty"`
	// StartsSD: between engine starts (measured with more than one start on a day). When
	// every start served one run it holds the runs' part too.
	StartsSD *float64 `json:"between_starts_sd,omitempty"`
	// DaysSD: between days (measured with runs on more than one day).
	DaysSD *float64 `json:"between_days_sd,omitempty"`
	// DF are the degrees of freedom of the highest level measured.
	DF int `json:"df"`
	// StartsDF are the degrees of freedom of StartsSD (absent in calibrations older
	// than it, whose DF stands in for it); RunsDF and DaysDF those of RunsSD and DaysSD.
	StartsDF int `json:"between_starts_df,omitempty"`
	RunsDF   int `json:"between_runs_df,omitempty"`
	DaysDF   int `json:"between_days_df,omitempty"`
	// StartMeansSD: the spread of the starts' means (each start's runs averaged) within
	// a day, everything below included, on StartsDF. It is the raw figure StartsSD is
	// taken out of, and what StartSpread bounds a StartsSD of 0 by: more runs per start
	// narrow it, so that a calibration can show starts that differ little. Absent in
	// calibrations older than it.
	StartMeansSD *float64 `json:"start_means_sd,omitempty"`
	// Lacks names each source the runs did not sample.
	Lacks []string `json:"lacks,omitempty"`
}

// Sources a calibration can lack, as Components.Lacks names them. Runs of one server
// are never lacking: with one run per start, the starts' part holds theirs.
const (
	LacksStarts = "between engine starts"
	LacksDays   = "between days"
)

// componentsOf splits the spread of a metric's values over runs labelled by info: at
// each level, the pooled variance of the group means within the level above (its mean
// square), less the mean square of the level below divided by the runs, or starts, that
// each group mean averages (ANOVA's method of moments, unbiased at every level;
// levelsOf). A level's standard deviation is its estimate clamped at 0.
func componentsOf(vals []float64, within float64, info []CalRun) *Components {
	lv, ok := levelsOf(vals, within, info)
	if !ok {
		return nil
	}
	c := &Components{WithinSD: within}
	if lv.runs.df > 0 {
		c.RunsSD, c.DF, c.RunsDF = sqrtp(max(lv.runs.v, 0)), lv.runs.df, lv.runs.df
	}
	if lv.starts.df > 0 {
		c.StartsSD, c.DF, c.StartsDF = sqrtp(max(lv.starts.v, 0)), lv.starts.df, lv.starts.df
		c.StartMeansSD = sqrtp(lv.starts.ms)
	} else if lv.nStarts > 1 && lv.nDays > 1 {
		c.Lacks = append(c.Lacks, LacksStarts+" on one day")
	} else {
		c.Lacks = append(c.Lacks, LacksStarts)
	}
	if lv.days.df > 0 {
		c.DaysSD, c.DF, c.DaysDF = sqrtp(max(lv.days.v, 0)), lv.days.df, lv.days.df
	} else {
		c.Lacks = append(c.Lacks, LacksDays)
	}
	return c
}

// level is one source's estimate: its variance v (unclamped: unbiased, and so below 0
// at times), the mean square it is taken out of, and that mean square's degrees of
// freedom (0: the runs did not sample the level).
type level struct {
	v, ms float64
	df    int
}

// levels are a calibration's estimates by source, nested as its runs are: runs within
// an engine start, starts within a day, days.
type levels struct {
	runs, starts, days level
	nStarts, nDays     int
}

// levelsOf estimates each level's variance from the log values of runs labelled by
// info, their mean sampling variance within². With one run per start the starts' level
// holds the runs' too; with one start per day the days' level holds the starts'. ok is
// false when a value is not positive.
func levelsOf(vals []float64, within float64, info []CalRun) (levels, bool) {
	logs := make([]float64, len(vals))
	for i, v := range vals {
		if !(v > 0) {
			return levels{}, false
		}
		logs[i] = math.Log(v)
	}
	var lv levels
	// below is the variance of one unit of the current level (a run, then a start's
	// mean) from the levels under it: estimated by that level's mean square where it was
	// measured, and carried down, divided by the group size, where it was not.
	below := within * within
	// Runs of one server: the spread of runs within each start.
	byStart := groupBy(len(logs), func(i int) string { return fmt.Sprint(info[i].Start) })
	if ms, df := pooled(logs, byStart); df > 0 {
		lv.runs = level{v: ms - below, ms: ms, df: df}
		below = ms
	}
	// Engine starts: the spread of start means within each day.
	startMeans, startDay, perStart := means(logs, byStart, func(i int) string { return info[i].Day })
	below /= harmonic(perStart)
	byDay := groupBy(len(startMeans), func(i int) string { return startDay[i] })
	lv.nStarts, lv.nDays = len(byStart), len(byDay)
	if ms, df := pooled(startMeans, byDay); df > 0 {
		lv.starts = level{v: ms - below, ms: ms, df: df}
		below = ms
	}
	// Days: the spread of day means (each the mean of its starts' means).
	dayMeans, _, startsPerDay := means(startMeans, byDay, func(int) string { return "" })
	if len(dayMeans) > 1 {
		ms, df := pooled(dayMeans, [][]int{seq(len(dayMeans))})
		lv.days = level{v: ms - below/harmonic(startsPerDay), ms: ms, df: df}
	}
	return lv, true
}

// Spread is the between-run spread a candidate run on a new engine start on another
// day meets, as far as the calibration measured it: every measured part added (a higher
// level's estimate already holds what the levels below put into its means), the starts'
// and days' parts marked as shared by the runs of one start, on the degrees of freedom
// of the highest level measured. A calibration whose runs
// sampled only one level gives the plain spread of its runs.
func (c *Components) spread(sp stats.Spread) stats.Spread {
	if c == nil || (c.StartsSD == nil && c.DaysSD == nil) || c.DF <= 0 {
		return sp
	}
	v := c.WithinSD * c.WithinSD
	var shared float64
	for i, x := range []*float64{c.RunsSD, c.StartsSD, c.DaysSD} {
		if x != nil {
			v += *x * *x
			if i > 0 {
				shared += *x * *x
			}
		}
	}
	// What moves between starts and days is shared by the runs of one start: a
	// candidate's repeats on one start meet it once (stats.Spread.SharedSD). Below it,
	// in the starts' means it was taken out of, lie the runs' noise over their count:
	// the spread of those means less the starts' part (when the days' level is the top,
	// the starts' means' whole spread bounds what it holds of them).
	var below float64
	if c.StartMeansSD != nil && c.StartsSD != nil {
		below = max(*c.StartMeansSD**c.StartMeansSD-*c.StartsSD**c.StartsSD, 0)
		if c.DaysSD != nil {
			below = *c.StartMeansSD * *c.StartMeansSD
		}
	}
	return stats.Spread{RunSD: math.Sqrt(v), WithinSD: c.WithinSD, DF: c.DF, SharedSD: math.Sqrt(shared), SharedBelow: below}
}

// groupBy groups 0..n-1 by key, groups in order of first appearance.
func groupBy(n int, key func(int) string) [][]int {
	var keys []string
	at := map[string]int{}
	var out [][]int
	for i := range n {
		k := key(i)
		j, ok := at[k]
		if !ok {
			j = len(keys)
			at[k] = j
			keys = append(keys, k)
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}

// pooled is the pooled sample variance of xs within groups and its degrees of freedom.
func pooled(xs []float64, groups [][]int) (float64, int) {
	var ss float64
	df := 0
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		var m float64
		for _, i := range g {
			m += xs[i]
		}
		m /= float64(len(g))
		for _, i := range g {
			ss += (xs[i] - m) * (xs[i] - m)
		}
		df += len(g) - 1
	}
	if df == 0 {
		return 0, 0
	}
	return ss / float64(df), df
}

// means are the group means of xs, each group's label (of its first member) and size.
func means(xs []float64, groups [][]int, label func(int) string) ([]float64, []string, []int) {
	ms := make([]float64, len(groups))
	ls := make([]string, len(groups))
	ns := make([]int, len(groups))
	for j, g := range groups {
		for _, i := range g {
			ms[j] += xs[i]
		}
		ms[j] /= float64(len(g))
		ls[j], ns[j] = label(g[0]), len(g)
	}
	return ms, ls, ns
}

// harmonic is the harmonic mean of group sizes: the size whose mean has the groups'
// average variance.
func harmonic(ns []int) float64 {
	var s float64
	for _, n := range ns {
		s += 1 / float64(n)
	}
	return float64(len(ns)) / s
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func sqrtp(v float64) *float64 {
	x := math.Round(math.Sqrt(v)*1e6) / 1e6
	return &x
}

// trialRuns are the baseline's trials as the gate computes on them.
func (b *Baseline) trialRuns() ([]*run, error) {
	if len(b.runs) == len(b.Trials) {
		return b.runs, nil
	}
	var out []*run
	for i := range b.Trials {
		r, err := b.Trials[i].decode()
		if err != nil {
			return nil, fmt.Errorf("trial %d: %v", i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// lacksText is the gate's warning on a calibration that did not sample every source.
func lacksText(c *Components) string {
	if c == nil || len(c.Lacks) == 0 {
		return ""
	}
	return fmt.Sprintf("the calibration did not measure the spread %s: a candidate run on a fresh engine start on another day meets it; spread the calibration's runs (slogate calibrate --restart-every K, --append on other days)", joinAnd(slices.Clone(c.Lacks)))
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	s := xs[0]
	for _, x := range xs[1 : len(xs)-1] {
		s += ", " + x
	}
	return s + " or " + xs[len(xs)-1]
}
