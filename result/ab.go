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
	// FutilityFrom is the block from which the sequential job may also stop once no
	// rule can be decided by its maximum at the noise seen (ab --futility-from); 0: never.
	FutilityFrom int `json:"futility_from,omitempty"`
	// FinalShare is the share of the error rate kept for the blocks' fixed interval
	// that judges the sequential job at its maximum (ab --final-share); 0: the
	// sequences judge the maximum too.
	FinalShare float64 `json:"final_share,omitempty"`
	// Layout is the job's order of blocks, A for the baseline, B for the candidate:
	// "ABBAABBA".
	Layout string `json:"layout"`
	// Restarted is true when the block started its engine afresh (target.start).
	Restarted bool `json:"restarted,omitempty"`
	// Swap is what bringing this block's engine up cost, from the end of the previous
	// block (the first block: from the start of the job): the engine time spent outside
	// measured windows.
	Swap *ABSwap `json:"swap,omitempty"`
}

// ABSwap counts the starts, sleeps and wakes of an A/B job (or of one of its blocks)
// and the seconds they took, so that the engine time of a job can be told apart from
// its measured windows (target.swap, docs/swap.md). A sleep counts SGLang's memory
// releases too, a wake its resumes.
type ABSwap struct {
	// Mode is target.swap.mode of the block's side (of both sides, "baseline/candidate",
	// for a job whose sides differ): sleep | memory_release | resident | restart.
	Mode   string  `json:"mode"`
	Sleeps int     `json:"sleeps"`
	Wakes  int     `json:"wakes"`
	SleepS float64 `json:"sleep_s"`
	WakeS  float64 `json:"wake_s"`
	Starts int     `json:"starts"`
	StartS float64 `json:"start_s"`
}

// Add adds the counts and seconds of o to s (the mode is the caller's).
func (s *ABSwap) Add(o *ABSwap) {
	if o == nil {
		return
	}
	s.Sleeps += o.Sleeps
	s.Wakes += o.Wakes
	s.SleepS += o.SleepS
	s.WakeS += o.WakeS
	s.Starts += o.Starts
	s.StartS += o.StartS
}

// Seconds is the engine time the starts, sleeps and wakes took.
func (s *ABSwap) Seconds() float64 { return s.SleepS + s.WakeS + s.StartS }
