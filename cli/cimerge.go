package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
)

// mergeShards reads every shard record under the input shards (the shard jobs'
// downloaded artifacts, one directory each), merges each workload's (and trial's) set,
// and writes the merged records to the results directory.
func (c *ci) mergeShards() ([]*result.Record, int) {
	dir := c.in.Shards
	if !filepath.IsAbs(dir) && c.in.WorkingDirectory != "" {
		dir = filepath.Join(c.in.WorkingDirectory, dir)
	}
	sets := map[string][]*result.Record{}
	var keys []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if schema, err := result.SchemaOf(p, data); err != nil || schema != result.Schema {
			return nil // gate.json, sweeps and other files beside the records
		}
		r, err := result.Read(p)
		if err != nil {
			return err
		}
		if r.Shard == "" {
			return fmt.Errorf("%s is not a shard record (no shard field): mode merge merges the records of mode run with the input shard", p)
		}
		k := fmt.Sprintf("%s\x00%d", r.Workload, r.Trial)
		if _, ok := sets[k]; !ok {
			keys = append(keys, k)
		}
		sets[k] = append(sets[k], r)
		return nil
	})
	if err != nil {
		c.errorf("input shards: %v", err)
		return nil, ExitBadInput
	}
	if len(keys) == 0 {
		c.errorf("input shards: no shard records under %s", dir)
		return nil, ExitBadInput
	}
	slices.Sort(keys)
	var recs []*result.Record
	for _, k := range keys {
		m, err := measure.Merge(sets[k]...)
		if err != nil {
			c.errorf("%v", err)
			return nil, ExitBadInput
		}
		path := recordPath(c.outDir, m.Workload, m.Trial, max(m.Trial, 1))
		if err := result.Write(path, m); err != nil {
			c.errorf("writing %s: %v", path, err)
			return recs, ExitFailure
		}
		fmt.Fprintf(c.stderr, "slogate: merged %d shards of %s into %s\n", len(sets[k]), m.Workload, path)
		recs = append(recs, m)
	}
	return recs, ExitOK
}
