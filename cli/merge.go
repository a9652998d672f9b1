package cli

import (
	"context"
	"errors"
	"flag"
	"os"

	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/report"
	"github.com/slogate/slogate/result"
)

const mergeUsage = `slogate merge -o FILE SHARD.json...
slogate merge -o DIR PATH...

Merges the run records of one sharded run ('slogate run --shard i/n' on n machines, each
with its own -o) into the record of the whole run, exactly: the shards must be one
complete set of the same workload, and the summary is recomputed from all their requests.
With directories among the PATHs (the shards' output directories, or one volume holding
them all), every shard record under them is found, each workload's set is merged, and
the merged records are written into DIR as 'slogate run' names them, for 'slogate gate -r DIR'.
Exit codes: 0 merged, 2 bad input (records that are not one complete set of shards).`

func (a *app) cmdMerge(ctx context.Context, args []string) int {
	fs := a.flagSet("merge", mergeUsage)
	out := fs.String("o", "", "merged record `file`, or the directory of merged records when a PATH is a directory (required)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK // help was asked for, as with every other command
		}
		return ExitBadInput
	}
	if *out == "" || fs.NArg() == 0 {
		a.errorf("merge: need -o FILE and the shard records\n\n%s", mergeUsage)
		return ExitBadInput
	}
	dirs := false
	for _, p := range fs.Args() {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			dirs = true
		}
	}
	if !dirs {
		if code := a.checkOutputFile("-o", *out); code != ExitOK {
			return code
		}
	} else if code := a.checkOutputs(*out); code != ExitOK {
		return code
	}
	sets, err := shardSets(fs.Args())
	if err != nil {
		a.errorf("merge: %v", err)
		return ExitBadInput
	}
	if dirs {
		recs, code := a.mergeSets(sets, *out)
		for _, m := range recs {
			report.RunTable(a.stdout, m, recordPath(*out, m.Workload, m.Trial, max(m.Trial, 1)))
		}
		return code
	}
	if len(sets) > 1 {
		a.errorf("merge: the records are shards of %d different runs (workloads or trials); merge one run at a time, or give directories and -o DIR", len(sets))
		return ExitBadInput
	}
	m, err := measure.Merge(sets[0]...)
	if err != nil {
		a.errorf("%v", err)
		return ExitBadInput
	}
	if err := result.Write(*out, m); err != nil {
		a.errorf("writing %s: %v", *out, err)
		return writeExit(err)
	}
	report.RunTable(a.stdout, m, *out)
	return ExitOK
}
