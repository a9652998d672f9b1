package sim

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Noise is between-run noise: what makes one run of an unchanged engine differ from the
// next on a real machine (a GPU's clock and thermals, the neighbours on a host, the
// engine's warm state). Everything is drawn once per process start (per New) from Seed,
// so two starts with different seeds are two runs of the same engine, and one seed
// replays one run. docs/noise.md says where the levels of the presets come from.
//
// The zero Noise is none: every run of the simulator is then the same up to its
// step jitter.
type Noise struct {
	// Seed draws this start's speed factor, drift and stalls. Zero draws a seed from the
	// clock at New (a new run at every start); RunNoise.Seed says which.
	Seed int64
	// SpeedSD is the log-standard-deviation of the per-start speed factor: every step
	// time of this start is multiplied by exp(SpeedSD·z), z standard normal. 0.03 is a
	// 3% run-to-run spread.
	SpeedSD float64
	// SpeedDF, when above 2, draws the speed factor's z from a Student t with this many
	// degrees of freedom, scaled to unit variance: the same spread with heavier tails (a
	// start now and then far slower than the rest). 0: normal.
	SpeedDF int
	// Drift is a fixed change of the step time over DriftOver (0.10: steps grow 10%
	// slower, linearly, over that time); DriftSD adds a drawn one, normal with this
	// standard deviation. The drift runs from the process start, as a GPU warms.
	Drift, DriftSD float64
	// DriftOver is the time the drift is stated over; 0 means 10 minutes.
	DriftOver time.Duration
	// StallEvery is the mean interval between engine-wide stalls (a clock throttle, a
	// host preemption, a garbage collection): exponential intervals, each stall lasts
	// StallFor and delays every running sequence. 0: none.
	StallEvery time.Duration
	StallFor   time.Duration
}

// NoisePresets are named levels of Noise (docs/noise.md gives their sources).
var NoisePresets = map[string]Noise{
	"none": {},
	// A GPU runner: a few percent between runs, a slow drift of a few percent over ten
	// minutes, a rare short stall.
	"gpu": {SpeedSD: 0.03, DriftSD: 0.02, StallEvery: 30 * time.Second, StallFor: 20 * time.Millisecond},
	// A loaded shared CPU host, as the llama.cpp reruns that moved ITL p99 ×1.92 and
	// ×0.57: tens of percent between runs and frequent stalls.
	"shared-cpu": {SpeedSD: 0.45, DriftSD: 0.10, StallEvery: 2 * time.Second, StallFor: 10 * time.Millisecond},
}

// NoisePresetNames are the preset names, sorted.
func NoisePresetNames() []string {
	var ns []string
	for n := range NoisePresets {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Enabled says whether n adds any noise.
func (n Noise) Enabled() bool {
	return n.SpeedSD > 0 || n.Drift != 0 || n.DriftSD > 0 || n.StallEvery > 0
}

// Validate reports every bad setting at once.
func (n Noise) Validate() error {
	var errs []string
	if !(n.SpeedSD >= 0 && n.SpeedSD <= 2) {
		errs = append(errs, fmt.Sprintf("speed sd %v outside [0, 2]", n.SpeedSD))
	}
	if n.SpeedDF != 0 && !(n.SpeedDF > 2 && n.SpeedDF <= 1000) {
		errs = append(errs, fmt.Sprintf("speed degrees of freedom %d outside (2, 1000] (0: normal)", n.SpeedDF))
	}
	if !(n.DriftSD >= 0 && n.DriftSD <= 1) {
		errs = append(errs, fmt.Sprintf("drift sd %v outside [0, 1]", n.DriftSD))
	}
	if !(n.Drift > -0.9 && n.Drift <= 10) {
		errs = append(errs, fmt.Sprintf("drift %v outside (-0.9, 10]", n.Drift))
	}
	if n.DriftOver < 0 || n.StallEvery < 0 || n.StallFor < 0 {
		errs = append(errs, "negative drift period, stall interval or stall length")
	}
	if n.StallEvery > 0 && n.StallFor == 0 {
		errs = append(errs, "stall interval set without a stall length")
	}
	if len(errs) > 0 {
		return fmt.Errorf("noise: %s", strings.Join(errs, "; "))
	}
	return nil
}

// RunNoise is one start's draw of a Noise: a pure function of the time since the start,
// which the step loop applies and which a statistical model of runs can apply the same
// way.
type RunNoise struct {
	Seed  int64
	Speed float64 // step-time factor of this start (1.05: 5% slower)
	// Drift is this start's change of step time per DriftOver.
	Drift     float64
	DriftOver time.Duration
	stallMean time.Duration
	stallFor  time.Duration
	rng       *rand.Rand
	nextStall time.Duration // since start
}

// Draw is this start's noise. seed replaces n.Seed when n.Seed is 0.
func (n Noise) Draw(seed int64) *RunNoise {
	if n.Seed != 0 {
		seed = n.Seed
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x9015e))
	rn := &RunNoise{Seed: seed, Speed: 1, DriftOver: n.DriftOver, stallMean: n.StallEvery, stallFor: n.StallFor, rng: r}
	if rn.DriftOver == 0 {
		rn.DriftOver = 10 * time.Minute
	}
	// Fixed order of draws, so that a preset's level does not change another's values.
	z, zd := r.NormFloat64(), r.NormFloat64()
	rn.Drift = n.Drift + n.DriftSD*zd
	if n.SpeedDF > 2 {
		// Drawn after the fixed draws, so that the normal model's values do not move.
		var chi2 float64
		for range n.SpeedDF {
			x := r.NormFloat64()
			chi2 += x * x
		}
		df := float64(n.SpeedDF)
		z *= math.Sqrt((df-2)/df) / math.Sqrt(chi2/df)
	}
	rn.Speed = math.Exp(n.SpeedSD * z)
	rn.nextStall = -1
	if n.StallEvery > 0 {
		rn.nextStall = rn.interval()
	}
	return rn
}

func (rn *RunNoise) interval() time.Duration {
	return time.Duration(rn.rng.ExpFloat64() * float64(rn.stallMean))
}

// Factor is the step-time factor at elapsed since the start: the speed times the drift so
// far, never below 0.1.
func (rn *RunNoise) Factor(elapsed time.Duration) float64 {
	if rn == nil {
		return 1
	}
	f := rn.Speed * (1 + rn.Drift*float64(elapsed)/float64(rn.DriftOver))
	return max(f, 0.1)
}

// StallsUntil is the total length of the stalls that begin before elapsed and were not
// yet taken: the step that ends at elapsed is delayed by it. Calls must come with
// non-decreasing elapsed (the step loop's clock).
func (rn *RunNoise) StallsUntil(elapsed time.Duration) time.Duration {
	if rn == nil || rn.nextStall < 0 {
		return 0
	}
	var d time.Duration
	for rn.nextStall <= elapsed {
		d += rn.stallFor
		rn.nextStall += rn.stallFor + rn.interval()
	}
	return d
}

// noiseFlag applies a preset while flags are parsed; later noise flags override it.
type noiseFlag struct {
	n    *Noise
	name *string
}

func (f noiseFlag) String() string {
	if f.name == nil || *f.name == "" {
		return "none"
	}
	return *f.name
}

func (f noiseFlag) Set(s string) error {
	p, ok := NoisePresets[s]
	if !ok {
		return fmt.Errorf("unknown noise level %q; valid: %s", s, strings.Join(NoisePresetNames(), ", "))
	}
	seed := f.n.Seed
	*f.n = p
	f.n.Seed = seed
	*f.name = s
	return nil
}

// bindNoise registers the noise flags on fs.
func (o *Options) bindNoise(fs *flag.FlagSet) {
	name := ""
	fs.Var(noiseFlag{&o.Noise, &name}, "noise", "between-run noise `level`: one of "+strings.Join(NoisePresetNames(), ", ")+"; the flags below override its parts (see docs/noise.md)")
	fs.Int64Var(&o.Noise.Seed, "noise-seed", o.Noise.Seed, "seed of this start's speed factor, drift and stalls (0: drawn from the clock, printed at start)")
	fs.Float64Var(&o.Noise.SpeedSD, "noise-speed-sd", o.Noise.SpeedSD, "log-sd of the per-start speed factor (0.03: 3% between runs)")
	fs.IntVar(&o.Noise.SpeedDF, "noise-speed-df", o.Noise.SpeedDF, "draw the speed factor's log from a Student t with this many degrees of freedom (> 2), scaled to the same spread: heavier tails (0: normal)")
	fs.Float64Var(&o.Noise.Drift, "noise-drift", o.Noise.Drift, "fixed change of step time over --noise-drift-over (0.1: 10% slower)")
	fs.Float64Var(&o.Noise.DriftSD, "noise-drift-sd", o.Noise.DriftSD, "sd of a drawn drift over --noise-drift-over")
	fs.DurationVar(&o.Noise.DriftOver, "noise-drift-over", o.Noise.DriftOver, "the time a drift is stated over (default 10m)")
	fs.DurationVar(&o.Noise.StallEvery, "noise-stall-every", o.Noise.StallEvery, "mean interval between engine-wide stalls (0: none)")
	fs.DurationVar(&o.Noise.StallFor, "noise-stall-for", o.Noise.StallFor, "length of an engine-wide stall")
}

// drawNoise is this start's draw of n, nil when n adds none; a zero seed comes from the
// clock, so every start is a new run.
func drawNoise(n Noise, now func() time.Time) *RunNoise {
	if !n.Enabled() {
		return nil
	}
	return n.Draw(now().UnixNano())
}

// Noise is this start's draw of between-run noise; nil when there is none.
func (s *Server) Noise() *RunNoise { return s.eng.noise }
