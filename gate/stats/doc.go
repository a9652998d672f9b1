// Package stats owns the gate's statistics: metrics that can be recomputed on a resample
// of whole requests, the bootstrap comparison of a candidate run with a baseline (ratio,
// percentile interval, verdict), the gate's own resolution, the rule for repeated trials,
// exact and absolute checks.
//
// It imports only the standard library and knows nothing of Markdown, files, run records
// or GitHub: the gate maps a run record to the inputs here (one value or one slice of
// values per request) and renders what comes back.
//
// The resampling unit is the request. The inter-token gaps of one request share its
// batch, its prompt length and its moment of the run, so they are correlated; resampling
// single gaps would treat 100 correlated gaps as 100 independent facts and give an
// interval that is too narrow, and a gate that flaps.
//
// The pieces:
//   - Metrics (Percentile, PooledPercentile, Mean, Fraction, PerSecond, Func) hold one
//     run's per-request data and recompute their statistic on a resample given as
//     per-request weights.
//   - Compare gives the candidate/baseline ratio, its bootstrap interval and a verdict;
//     CompareExact does the same for deterministic metrics; CheckAbsolute checks a value
//     against bounds; CompareTrials judges repeated trials by their spread.
//   - Resolution says, before anything is compared, how small a change a run of this
//     size can tell from noise.
package stats
