package result

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParseShard parses "i/n". Shards are numbered 1…n; 0…n−1 is accepted too, as long as
// one set of shards uses one numbering (Merge checks).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i > n {
		return 0, 0, fmt.Errorf("shard %q: expected i/n with 1 <= i <= n (for example 2/4)", s)
	}
	return i, n, nil
}

// Merge merges the shard records of one sharded run into the record of the whole run.
//
// The shards must be one complete set (each i of n exactly once) of the same workload
// (hash), mode, trial and SLO, and no request index may appear twice. Their request times
// are offsets from each shard's own epoch, which is the start of the common schedule, so
// they are merged as they are: the merged record is the run as if every shard had started
// at once. Requests are concatenated in index order, the window is the union, and the
// summary is recomputed from the merged requests (Summarize is a pure function of them,
// so this is exact). Metadata comes from the lowest shard; the warm-up summary too (each
// shard warmed up on its own, and the first is the one that met cold caches), and the
// engine's time series (every shard scraped the same engine). The client in-flight series
// is not merged: the summary's in-flight figures are recomputed exactly instead.
func Merge(recs ...*Record) (*Record, error) {
	if len(recs) == 0 {
		return nil, errors.New("merge: no shard records")
	}
	shards := make([]shard, 0, len(recs))
	n := 0
	for k, r := range recs {
		if r.Shard == "" {
			return nil, fmt.Errorf("merge: record %d (%s) is not a shard (no shard field)", k+1, r.Workload)
		}
		i, rn, err := ParseShard(r.Shard)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if k == 0 {
			n = rn
		} else if rn != n {
			return nil, fmt.Errorf("merge: shard %s is one of %d, shard %s one of %d", r.Shard, rn, recs[0].Shard, n)
		}
		shards = append(shards, shard{i, r})
	}
	slices.SortFunc(shards, func(a, b shard) int { return a.i - b.i })
	for k := 1; k < len(shards); k++ {
		if shards[k].i == shards[k-1].i {
			return nil, fmt.Errorf("merge: shard %s appears twice", shards[k].rec.Shard)
		}
	}
	first := 1
	if shards[0].i == 0 {
		first = 0 // numbered from 0
	}
	var missing []string
	have := map[int]bool{}
	for _, s := range shards {
		have[s.i] = true
	}
	for i := first; i < first+n; i++ {
		if !have[i] {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: incomplete set of shards: missing %s", strings.Join(missing, ", "))
	}
	if len(shards) != n {
		return nil, fmt.Errorf("merge: %d shard records for %d shards (numbered from both 0 and 1?)", len(shards), n)
	}

	base := shards[0].rec
	for _, s := range shards[1:] {
		r := s.rec
		differ := func(what, a, b string) error {
			return fmt.Errorf("merge: shard %s has %s %s, shard %s has %s: shards of different runs cannot be merged", r.Shard, what, a, base.Shard, b)
		}
		switch {
		case r.WorkloadHash != base.WorkloadHash:
			return nil, differ("workload hash", r.WorkloadHash, base.WorkloadHash)
		case r.Mode != base.Mode:
			return nil, differ("mode", r.Mode, base.Mode)
		case r.Trial != base.Trial:
			return nil, differ("trial", strconv.Itoa(r.Trial), strconv.Itoa(base.Trial))
		case !slices.Equal(r.SLO, base.SLO) || r.SLOAttainmentTarget != base.SLOAttainmentTarget:
			return nil, differ("SLO", fmt.Sprint(r.SLO, r.SLOAttainmentTarget), fmt.Sprint(base.SLO, base.SLOAttainmentTarget))
		case r.MaxDispatchLagMS != base.MaxDispatchLagMS:
			return nil, differ("max dispatch lag", fmt.Sprint(r.MaxDispatchLagMS, " ms"), fmt.Sprint(base.MaxDispatchLagMS, " ms"))
		case (r.Sync == nil) != (base.Sync == nil):
			return nil, differ("start time", startAtText(r.Sync), startAtText(base.Sync))
		case r.Sync != nil && !r.Sync.StartAt.Equal(base.Sync.StartAt):
			return nil, differ("start time", startAtText(r.Sync), startAtText(base.Sync))
		}
	}

	m := *base
	m.Shard = ""
	m.SLO = slices.Clone(base.SLO)
	m.ClassSLO = maps.Clone(base.ClassSLO)
	m.Environment = maps.Clone(base.Environment)
	m.Series = Series{Engine: base.Series.Engine}
	m.Notes = nil
	m.Incomplete, m.IncompleteReason = false, ""
	var reasons []string
	total := 0
	for _, s := range shards {
		total += len(s.rec.Requests)
	}
	m.Requests = make([]Request, 0, total)
	for k, s := range shards {
		r := s.rec
		m.Requests = append(m.Requests, r.Requests...)
		if r.Start.Before(m.Start) {
			m.Start = r.Start
		}
		if k > 0 {
			m.Window = unionWindow(m.Window, r.Window)
		}
		if r.Incomplete {
			m.Incomplete = true
			reasons = append(reasons, fmt.Sprintf("shard %s: %s", r.Shard, r.IncompleteReason))
		}
		for _, note := range r.Notes {
			if derivedNote(note) {
				continue // recomputed below over the merged requests
			}
			if !inEvery(shards, note) {
				note = "shard " + r.Shard + ": " + note
			}
			if !slices.Contains(m.Notes, note) {
				m.Notes = append(m.Notes, note)
			}
		}
		m.Shards = append(m.Shards, ShardInfo{
			Shard: r.Shard, Start: r.Start, Requests: len(r.Requests), Hardware: r.Hardware,
			ToolVersion: r.ToolVersion, Sync: r.Sync, Scraped: scrapedEngine(r),
			Environment: maps.Clone(r.Environment), Incomplete: r.IncompleteReason,
		})
		for _, key := range slices.Sorted(maps.Keys(r.Environment)) {
			if v, ok := base.Environment[key]; !ok || v != r.Environment[key] {
				m.Notes = append(m.Notes, fmt.Sprintf("shard %s ran with %s = %q (shard %s: %q); the merged record keeps the latter", r.Shard, key, r.Environment[key], base.Shard, v))
			}
		}
	}
	m.IncompleteReason = strings.Join(reasons, "; ")
	m.Priming = mergePriming(shards2recs(shards))
	slices.SortFunc(m.Requests, func(a, b Request) int { return a.I - b.I })
	for k := 1; k < len(m.Requests); k++ {
		if m.Requests[k].I == m.Requests[k-1].I {
			return nil, fmt.Errorf("merge: request %d appears in more than one shard: the shards did not split one schedule", m.Requests[k].I)
		}
	}
	// The engine's gauges come from the one shard that scraped them (measure has shard 1
	// scrape): summing n scrapes of one engine would count it n times.
	var scraper *Record
	for _, s := range shards {
		if scrapedEngine(s.rec) {
			if scraper == nil {
				scraper = s.rec
			} else {
				m.Notes = append(m.Notes, fmt.Sprintf("shards %s and %s both scraped the engine's metrics; the merged record keeps %s's", scraper.Shard, s.rec.Shard, scraper.Shard))
			}
		}
	}
	how := fmt.Sprintf("merged from %d shards; the warm-up summary is shard %s's", n, base.Shard)
	if scraper != nil {
		m.Series.Engine = scraper.Series.Engine
		how += fmt.Sprintf(", the engine's metrics shard %s's", scraper.Shard)
	}
	m.Notes = append(m.Notes, how)
	m.Series.InFlight = sumSeries(shards2recs(shards))
	if base.Sync != nil {
		m.Sync = mergeSync(shards2recs(shards))
	}

	var scratch []int64
	for k := range m.Requests {
		m.Requests[k].SLOMet = meets(&m.Requests[k], SLOFor(m.Requests[k].Class, m.SLO, m.ClassSLO), &scratch)
	}
	m.Summary = Summarize(m.Requests, SummaryInput{
		Window:           m.Window,
		SLO:              m.SLO,
		ClassSLO:         m.ClassSLO,
		AttainmentTarget: m.SLOAttainmentTarget,
		MaxDispatchLag:   time.Duration(m.MaxDispatchLagMS * float64(time.Millisecond)),
		OpenLoop:         m.Mode != "closed",
		Tasks:            m.Tasks,
	})
	if scraper != nil {
		copyEngineSummary(&m.Summary, &scraper.Summary)
	}
	// Each shard's client is judged by its own reader lateness: the merged run keeps the
	// worst shard's.
	for _, s := range shards {
		if l := s.rec.Summary.ReaderLagms; l != nil && (m.Summary.ReaderLagms == nil || l.P99 > m.Summary.ReaderLagms.P99) {
			m.Summary.ReaderLagms = l
		}
		m.MaxReaderLagMS = max(m.MaxReaderLagMS, s.rec.MaxReaderLagMS)
	}
	JudgeReader(&m)
	if m.Summary.ClientSaturated {
		m.Notes = append(m.Notes, NoteClientSaturated)
	}
	noUsage := 0
	for _, r := range m.Requests {
		if r.Error == "" && r.NoUsage {
			noUsage++
		}
	}
	if noUsage > 0 {
		m.Notes = append(m.Notes, NoUsageNote(noUsage))
	}
	return &m, nil
}

// JudgeReader sets summary.reader_saturated (and client_saturated with it) when the
// client's goroutines ran later, at p99, than the record's bound.
func JudgeReader(rec *Record) {
	l := rec.Summary.ReaderLagms
	if l != nil && rec.MaxReaderLagMS > 0 && l.P99 > rec.MaxReaderLagMS {
		rec.Summary.ReaderSaturated = true
		rec.Summary.ClientSaturated = true
	}
}

// Notes a record's requests imply: a merge recomputes them over all the shards'
// requests rather than keep each shard's (one shard's Little's law contradicts the
// merged numbers).
const (
	NoteLittleLaw       = "Little's law: "
	NoteClientSaturated = "client-saturated: the load generator could not keep the schedule; the gate refuses this run"
	noteNoUsage         = "the server reported no usage for "
)

// NoUsageNote says that n successful requests came without usage.
func NoUsageNote(n int) string {
	return fmt.Sprintf("%s%d requests: their output tokens are chunk counts", noteNoUsage, n)
}

func derivedNote(n string) bool {
	return strings.HasPrefix(n, NoteLittleLaw) || n == NoteClientSaturated || strings.HasPrefix(n, noteNoUsage)
}

func inEvery(shards []shard, note string) bool {
	for _, s := range shards2recs(shards) {
		if !slices.Contains(s.Notes, note) {
			return false
		}
	}
	return true
}

// shards2recs returns the records of Merge's sorted shards.
func shards2recs(shards []shard) []*Record {
	out := make([]*Record, 0, len(shards))
	for _, s := range shards {
		out = append(out, s.rec)
	}
	return out
}

// scrapedEngine reports whether r holds the engine's scraped metrics.
func scrapedEngine(r *Record) bool {
	s := r.Summary
	return len(r.Series.Engine) > 0 || s.QueueDepth != nil || s.KVUsage != nil || s.Running != nil || s.Preemptions != nil ||
		s.PrefixCacheHitRate != nil || s.PrefixCache != nil || s.EngineTokens != nil
}

// copyEngineSummary copies the summary figures that come from the engine's metrics
// (not from the requests) from src to dst.
func copyEngineSummary(dst, src *Summary) {
	dst.QueueDepth, dst.KVUsage, dst.Running = src.QueueDepth, src.KVUsage, src.Running
	dst.Preemptions, dst.PrefixCacheHitRate = src.Preemptions, src.PrefixCacheHitRate
	dst.PrefixCache, dst.EngineTokens = src.PrefixCache, src.EngineTokens
}

// sumSeries adds the shards' client in-flight series: each is a step function (its
// last sample holds until the next), and the sum is taken at every sample time of any
// shard. Times are already offsets from the common schedule.
func sumSeries(recs []*Record) []Sample {
	var times []int64
	for _, r := range recs {
		for _, s := range r.Series.InFlight {
			times = append(times, s.TUS)
		}
	}
	if len(times) == 0 {
		return nil
	}
	slices.Sort(times)
	times = slices.Compact(times)
	out := make([]Sample, len(times))
	next := make([]int, len(recs)) // per shard: index of its first sample after t
	for k, t := range times {
		out[k].TUS = t
		for j, r := range recs {
			ss := r.Series.InFlight
			for next[j] < len(ss) && ss[next[j]].TUS <= t {
				next[j]++
			}
			if next[j] > 0 {
				out[k].V += ss[next[j]-1].V
			}
		}
	}
	return out
}

// mergeSync is the start of a synchronized merged run: the common start time, the
// earliest opening and the latest shard's lateness (the start skew the gate judges).
func mergeSync(recs []*Record) *StartSync {
	m := *recs[0].Sync
	for _, r := range recs[1:] {
		if r.Sync.OpenedAt.Before(m.OpenedAt) {
			m.OpenedAt = r.Sync.OpenedAt
		}
		m.MaxLateMS = max(m.MaxLateMS, r.Sync.MaxLateMS)
	}
	m.LateMS = -1
	for _, r := range recs {
		if r.Sync.LateMS > m.LateMS {
			m.LateMS, m.WorstShard = r.Sync.LateMS, r.Shard
		}
	}
	return &m
}

func startAtText(s *StartSync) string {
	if s == nil {
		return "none (no --start-at)"
	}
	return s.StartAt.Format(time.RFC3339Nano)
}

type shard struct {
	i   int
	rec *Record
}

// unionWindow is the smallest window covering both; an empty window covers nothing.
func unionWindow(a, b Window) Window {
	switch {
	case a.EndUS <= a.StartUS:
		return b
	case b.EndUS <= b.StartUS:
		return a
	}
	return Window{StartUS: min(a.StartUS, b.StartUS), EndUS: max(a.EndUS, b.EndUS)}
}

// mergePriming adds up the shards' priming passes (each primed its own slice of the
// schedule against the one engine): requests, errors and tokens summed, the longest
// duration. Nil when no shard primed.
func mergePriming(recs []*Record) *PrimingSummary {
	var m *PrimingSummary
	for _, r := range recs {
		p := r.Priming
		if p == nil {
			continue
		}
		if m == nil {
			m = &PrimingSummary{}
		}
		m.Requests += p.Requests
		m.PromptTokens += p.PromptTokens
		m.Concurrency = max(m.Concurrency, p.Concurrency)
		m.DurationS = max(m.DurationS, p.DurationS)
		for k, v := range p.Errors {
			if m.Errors == nil {
				m.Errors = map[string]int{}
			}
			m.Errors[k] += v
		}
	}
	return m
}
