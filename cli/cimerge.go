package cli

import (
	"fmt"
	"github.com/slogate/slogate/internal/fsafe"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slogate/slogate/measure"
	"github.com/slogate/slogate/result"
)

// shardSets reads the shard records named by paths (files, or directories searched for
// them, as the shard jobs' downloaded artifacts or a Kubernetes volume hold them) and
// groups them by workload and trial: each group is one sharded run to merge.
func shardSets(paths []string) ([][]*result.Record, error) {
	sets := map[string][]*result.Record{}
	var keys []string
	add := func(p string, explicit bool) error {
		data, err := fsafe.ReadFile(p)
		if err != nil {
			return err
		}
		if schema, err := result.SchemaOf(p, data); err != nil || schema != result.Schema {
			if explicit {
				return fmt.Errorf("%s is not a run record (schema %q)", p, schema)
			}
			return nil // gate.json, sweeps and other files beside the records
		}
		r, err := result.Read(p)
		if err != nil {
			return err
		}
		if r.Shard == "" && len(r.Shards) > 0 && !explicit {
			return nil // a merged record from an earlier merge into the same volume
		}
		if r.Shard == "" {
			return fmt.Errorf("%s is not a shard record (no shard field): only the records of 'slogate run --shard' (or the Action's input shard) merge", p)
		}
		k := fmt.Sprintf("%s\x00%d", r.Workload, r.Trial)
		if _, ok := sets[k]; !ok {
			keys = append(keys, k)
		}
		sets[k] = append(sets[k], r)
		return nil
	}
	for _, root := range paths {
		st, err := os.Stat(root)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if err := add(root, true); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
				return err
			}
			return add(p, false)
		})
		if err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no shard records in %s", strings.Join(paths, ", "))
	}
	slices.Sort(keys)
	out := make([][]*result.Record, len(keys))
	for i, k := range keys {
		out[i] = sets[k]
	}
	return out, nil
}

// mergeSets merges each set and writes the merged records into dir, named as run names
// its records; it returns them with the exit code.
func (a *app) mergeSets(sets [][]*result.Record, dir string) ([]*result.Record, int) {
	var recs []*result.Record
	// The merge is the run whose records this directory holds now: its manifest lists
	// them, so that gate and report judge exactly these and pass over older records.
	manifest := &result.Manifest{Start: a.now().UTC(), Records: []result.ManifestEntry{}}
	for _, set := range sets {
		m, err := measure.Merge(set...)
		if err != nil {
			a.errorf("%v", err)
			return nil, ExitBadInput
		}
		path := recordPath(dir, m.Workload, m.Trial, max(m.Trial, 1))
		if err := result.Write(path, m); err != nil {
			a.errorf("writing %s: %v", path, err)
			return recs, writeExit(err)
		}
		fmt.Fprintf(a.stderr, "slogate: merged %d shards of %s into %s\n", len(set), m.Workload, path)
		recs = append(recs, m)
		manifest.Records = append(manifest.Records, result.ManifestEntry{File: filepath.Base(path), Workload: m.Workload, Trial: m.Trial})
	}
	if err := result.WriteManifest(dir, manifest); err != nil {
		a.errorf("writing the manifest of %s: %v", dir, err)
		return recs, ExitFailure
	}
	return recs, ExitOK
}

// mergeShards merges the shard records under the input shards (the shard jobs'
// downloaded artifacts, one directory each) into the results directory.
func (c *ci) mergeShards() ([]*result.Record, int) {
	dir := c.in.Shards
	if !filepath.IsAbs(dir) && c.in.WorkingDirectory != "" {
		dir = filepath.Join(c.in.WorkingDirectory, dir)
	}
	sets, err := shardSets([]string{dir})
	if err != nil {
		c.errorf("input shards: %v", err)
		return nil, ExitBadInput
	}
	return c.mergeSets(sets, c.outDir)
}
