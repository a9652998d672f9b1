package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/slogate/slogate/gate"
	"github.com/slogate/slogate/internal/fsafe"
	"github.com/slogate/slogate/workload"
)

// modeAB gates a pull request by an A/B job on this runner: the baseline side is the
// pull request's base commit (its config, so its engine start command and target), the
// candidate the head's; both are measured in alternating blocks in this job and the
// candidate is gated against the baseline measured here, without a committed baseline.
func (c *ci) modeAB(ctx context.Context) int {
	fail := func(code int) int {
		c.out.Verdict = "error"
		c.setOutputs()
		return code
	}
	base := c.gh.BaseSHA
	if base == "" {
		c.errorf("mode ab: no base commit: mode ab gates a pull request against its base (pull_request events)")
		return fail(ExitBadInput)
	}
	wd := c.in.WorkingDirectory
	if wd == "" {
		wd = "."
	}
	rel := filepath.ToSlash(filepath.Clean(c.in.Config))
	data, err := c.git(ctx, wd, "show", base+":./"+rel)
	if err != nil {
		c.errorf("mode ab: the base commit's config: %v (fetch the base commit: actions/checkout with fetch-depth: 0)", err)
		return fail(ExitBadInput)
	}
	// Beside the head's config, so that its relative paths (datasets, baselines) resolve
	// as they do in the base commit's tree.
	basePath := filepath.Join(filepath.Dir(c.f.Path), ".slogate-base-"+short(base)+".yaml")
	if err := fsafe.WriteFile(basePath, data); err != nil {
		c.errorf("mode ab: %v", err)
		return fail(writeExit(err))
	}
	defer os.Remove(basePath)
	bf, err := workload.Parse(basePath, data)
	if err != nil {
		c.errorf("mode ab: the base commit's config (%s at %s):\n%v", rel, short(base), err)
		return fail(ExitBadInput)
	}
	blocks := c.in.Blocks
	if blocks == 0 {
		blocks = 16
	}
	minBlocks := c.in.MinBlocks
	if minBlocks == 0 {
		minBlocks = blocks
	}
	res, recs, code := c.abJob(ctx, abParams{base: bf, cand: c.f, candTarget: c.in.Target, blocks: blocks, minBlocks: minBlocks, futilityFrom: c.in.FutilityFrom, finalShare: c.in.FinalShare, outDir: c.outDir})
	if res == nil {
		return fail(max(code, ExitFailure))
	}
	if len(recs) > 0 {
		c.headline(recs[0])
	}
	if rc := c.publish(ctx, res, recs, gate.Store{}); code == ExitOK {
		return rc
	}
	return code
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
