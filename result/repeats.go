package result

// Reasons of RepeatStop.
const (
	RepeatsDecided = "decided"     // the answer was known before the workload's repeats
	RepeatsMax     = "max_repeats" // every repeat ran
)

// RepeatStop is how a candidate's sequential repeats ended (run --min-repeats): from
// MinRepeats on, after each run, every gated rule was looked at against the committed
// baseline, and the runs stopped as soon as one was decided fail or every one was
// decided. It is written on the record of the last trial run.
type RepeatStop struct {
	// MinRepeats is the fewest runs after which the candidate may stop; Repeats the
	// workload's repeats, the most.
	MinRepeats int `json:"min_repeats"`
	Repeats    int `json:"repeats"`
	// Run is how many trials ran.
	Run int `json:"run"`
	// Reason is RepeatsDecided or RepeatsMax; Why says it in words.
	Reason string `json:"reason"`
	Why    string `json:"why"`
}

// RepeatStopOf is the stop recorded on a workload's trials (on the last one run); nil
// when its repeats were not sequential.
func RepeatStopOf(trials []*Record) *RepeatStop {
	for _, r := range trials {
		if r.RepeatStop != nil {
			return r.RepeatStop
		}
	}
	return nil
}
