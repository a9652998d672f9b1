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
	type shard struct {
		i   int
		rec *Record
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
		}
	}

	m := *base
	m.Shard = ""
	m.SLO = slices.Clone(base.SLO)
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
			if !slices.Contains(m.Notes, note) {
				m.Notes = append(m.Notes, note)
			}
		}
		if m.Series.Engine == nil {
			m.Series.Engine = r.Series.Engine
		}
		for _, key := range slices.Sorted(maps.Keys(r.Environment)) {
			if v, ok := base.Environment[key]; !ok || v != r.Environment[key] {
				m.Notes = append(m.Notes, fmt.Sprintf("shard %s ran with %s = %q (shard %s: %q); the merged record keeps the latter", r.Shard, key, r.Environment[key], base.Shard, v))
			}
		}
	}
	m.IncompleteReason = strings.Join(reasons, "; ")
	slices.SortFunc(m.Requests, func(a, b Request) int { return a.I - b.I })
	for k := 1; k < len(m.Requests); k++ {
		if m.Requests[k].I == m.Requests[k-1].I {
			return nil, fmt.Errorf("merge: request %d appears in more than one shard: the shards did not split one schedule", m.Requests[k].I)
		}
	}
	m.Notes = append(m.Notes, fmt.Sprintf("merged from %d shards; the warm-up summary is shard %s's", n, base.Shard))

	var scratch []int64
	for k := range m.Requests {
		m.Requests[k].SLOMet = meets(&m.Requests[k], m.SLO, &scratch)
	}
	m.Summary = Summarize(m.Requests, SummaryInput{
		Window:           m.Window,
		SLO:              m.SLO,
		AttainmentTarget: m.SLOAttainmentTarget,
		MaxDispatchLag:   time.Duration(m.MaxDispatchLagMS * float64(time.Millisecond)),
		OpenLoop:         m.Mode != "closed",
	})
	return &m, nil
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
