package measure

import (
	"time"

	"github.com/slogate/slogate/loadgen"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// ShardSource sends shard i (1-based) of n of a generator's open-loop schedule: every
// n-th arrival from the (i−1)-th, with the request that has that global index. Shards on
// different machines together send the whole schedule exactly once.
type ShardSource struct {
	*workload.Generator
	arrivals []time.Duration // this shard's
	global   []int           // this shard's request j is global request global[j]
}

// NewShardSource is shard i (1-based) of n of g's schedule.
func NewShardSource(g *workload.Generator, i, n int) *ShardSource {
	s := &ShardSource{Generator: g}
	for k, a := range g.Arrivals() {
		if k%n == i-1 {
			s.arrivals = append(s.arrivals, a)
			s.global = append(s.global, k)
		}
	}
	return s
}

func (s *ShardSource) Arrivals() []time.Duration { return s.arrivals }

func (s *ShardSource) Request(j int) workload.Item {
	it := s.Generator.Request(s.global[j])
	it.Index = s.global[j]
	return it
}

var _ loadgen.Source = (*ShardSource)(nil)

// ToSchedule renumbers a shard's requests with their global indices and moves every time
// so that 0 is the start of the common schedule (the first arrival of the whole run would
// be due at 0 + its offset): shards started at different moments on different machines
// then line up, and result.Merge can concatenate them.
// It returns the shift, for series sampled later against the same epoch.
func (s *ShardSource) ToSchedule(out *loadgen.Outcome) int64 {
	if len(out.Measured) == 0 || len(s.arrivals) == 0 {
		return 0
	}
	start := out.ScheduleZeroUS
	shift := func(v *int64) {
		if *v != 0 {
			*v -= start
		}
	}
	for k := range out.Measured {
		r := &out.Measured[k]
		r.I = s.global[r.I]
		r.SchedUS -= start
		shift(&r.SendUS)
		shift(&r.FirstUS)
		shift(&r.LastUS)
		shift(&r.EndUS)
	}
	out.Window.StartUS -= start
	out.Window.EndUS -= start
	for k := range out.InFlight {
		out.InFlight[k].TUS -= start
	}
	return start
}

// ParseShard checks a shard flag ("i/n") against the workloads: shards split an
// open-loop schedule. An empty s is the whole schedule (0, 0).
func ParseShard(s string, ws []*workload.Workload) (i, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if i, n, err = result.ParseShard(s); err != nil {
		return 0, 0, &BadInputError{Err: err}
	}
	if i == 0 {
		return 0, 0, badInput("shard %q: shards are numbered 1 to n", s)
	}
	for _, w := range ws {
		if w.Arrival.Process == workload.ArrivalClosed {
			return 0, 0, badInput("--shard splits an open-loop schedule; workload %q is closed-loop (give each machine its own users instead)", w.Name)
		}
		if w.Sessions != nil {
			return 0, 0, badInput("--shard splits a schedule of requests; workload %q is a set of sessions, whose turns follow each other (run it whole)", w.Name)
		}
	}
	return i, n, nil
}
