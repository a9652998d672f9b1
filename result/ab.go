package result

// A/B sides of ABBlock.Side.
const (
	SideBaseline  = "baseline"
	SideCandidate = "candidate"
)

// ABBlock is a run's place in an A/B job: the baseline engine and the candidate engine
// measured in alternating blocks on the same machine (slogate ab, docs/noise.md).
type ABBlock struct {
	Side   string `json:"side"`   // baseline | candidate
	Block  int    `json:"block"`  // 1-based position in the layout
	Blocks int    `json:"blocks"` // blocks in the job at most
	// MinBlocks is the fewest blocks after which the job may stop, its answer known (a
	// sequential job); 0 or Blocks: every block runs.
	MinBlocks int `json:"min_blocks,omitempty"`
	// Layout is the job's order of blocks, A for the baseline, B for the candidate:
	// "ABBAABBA".
	Layout string `json:"layout"`
	// Restarted is true when the block started its engine afresh (target.start).
	Restarted bool `json:"restarted,omitempty"`
}
