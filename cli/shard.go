package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/slogate/slogate/loadgen"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// shardSource sends shard i (1-based) of n of a generator's open-loop schedule: every
// n-th arrival from the (i−1)-th, with the request that has that global index. Shards on
// different machines together send the whole schedule exactly once.
type shardSource struct {
	*workload.Generator
	arrivals []time.Duration // this shard's
	global   []int           // this shard's request j is global request global[j]
}

func newShardSource(g *workload.Generator, i, n int) *shardSource {
	s := &shardSource{Generator: g}
	for k, a := range g.Arrivals() {
		if k%n == i-1 {
			s.arrivals = append(s.arrivals, a)
			s.global = append(s.global, k)
		}
	}
	return s
}

func (s *shardSource) Arrivals() []time.Duration { return s.arrivals }

func (s *shardSource) Request(j int) workload.Item {
	it := s.Generator.Request(s.global[j])
	it.Index = s.global[j]
	return it
}

var _ loadgen.Source = (*shardSource)(nil)

// toSchedule renumbers a shard's requests with their global indices and moves every time
// so that 0 is the start of the common schedule (the first arrival of the whole run would
// be due at 0 + its offset): shards started at different moments on different machines
// then line up, and result.Merge can concatenate them.
// It returns the shift, for series sampled later against the same epoch.
func (s *shardSource) toSchedule(out *loadgen.Outcome) int64 {
	if len(out.Measured) == 0 || len(s.arrivals) == 0 {
		return 0
	}
	start := out.Window.StartUS - s.arrivals[0].Microseconds()
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

const mergeUsage = `slogate merge -o FILE SHARD.json...

Merges the run records of one sharded run ('slogate run --shard i/n' on n machines, each
with its own -o) into the record of the whole run, exactly: the shards must be one
complete set of the same workload, and the summary is recomputed from all their requests.
Exit codes: 0 merged, 2 bad input (records that are not one complete set of shards).`

func (a *app) cmdMerge(ctx context.Context, args []string) int {
	fs := a.flagSet("merge", mergeUsage)
	out := fs.String("o", "", "merged record `file` (required)")
	if err := fs.Parse(args); err != nil {
		return ExitBadInput
	}
	if *out == "" || fs.NArg() == 0 {
		a.errorf("merge: need -o FILE and the shard records\n\n%s", mergeUsage)
		return ExitBadInput
	}
	var recs []*result.Record
	for _, p := range fs.Args() {
		r, err := result.Read(p)
		if err != nil {
			a.errorf("%v", err)
			return ExitBadInput
		}
		recs = append(recs, r)
	}
	m, err := result.Merge(recs...)
	if err != nil {
		a.errorf("%v", err)
		return ExitBadInput
	}
	if err := result.Write(*out, m); err != nil {
		a.errorf("writing %s: %v", *out, err)
		return ExitFailure
	}
	report.RunTable(a.stdout, m, *out)
	return ExitOK
}

// parseShardFlag checks --shard against the workloads: shards split an open-loop schedule.
func parseShardFlag(s string, ws []*workload.Workload) (i, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if i, n, err = result.ParseShard(s); err != nil {
		return 0, 0, err
	}
	if i == 0 {
		return 0, 0, fmt.Errorf("shard %q: shards are numbered 1 to n", s)
	}
	for _, w := range ws {
		if w.Arrival.Process == workload.ArrivalClosed {
			return 0, 0, fmt.Errorf("--shard splits an open-loop schedule; workload %q is closed-loop (give each machine its own users instead)", w.Name)
		}
	}
	return i, n, nil
}
