package cli

import (
	"context"

	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
)

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
	m, err := measure.Merge(recs...)
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
