package measure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// An A/B job measures two engines in turn on one machine. Between blocks the engine of
// the next block is brought up and the other put aside, as its target.swap says:
//
//   - sleep (vLLM) and memory_release (SGLang): both engines stay loaded; the idle one
//     sleeps or has released its memory. Before any block each engine is started (where
//     target.start says how), identified, checked for the endpoints and put aside once,
//     so a server that refuses them fails the job before anything is measured. Each wake
//     is bounded by wake_timeout and followed by a check that the woken engine is the one
//     put aside (engine, version, model, revision); for a cold workload its prefix cache
//     is then emptied, and the run's own prefix-cache hits show that it stayed empty.
//   - resident: both engines stay up and nothing is done; the idle one gets no traffic.
//   - restart (and a side with target.start but no target.swap): the block starts its
//     engine and stops it after, as the caller does for every run (measureOnce), so the
//     Swapper leaves that side alone.
//
// A side without target.swap and without target.start is an engine someone else runs:
// resident.

// ABSide is one engine of an A/B job.
type ABSide struct {
	Name     string // result.SideBaseline or result.SideCandidate
	File     *workload.File
	Override string // the engine URL given on the command line, else target.url
}

// Mode is how the side is brought up between blocks: target.swap.mode, else restart
// with target.start, else resident.
func (s ABSide) Mode() string {
	switch {
	case s.File.Target.Swap != nil:
		return s.File.Target.Swap.Mode
	case s.File.Target.Start != nil:
		return workload.SwapRestart
	}
	return workload.SwapResident
}

// Managed reports whether the Swapper brings this side up (it started its engine once,
// if at all): the caller must then not start it for each block.
func (s ABSide) Managed() bool { return s.Mode() != workload.SwapRestart }

// LaunchFunc starts the engine of a side's target.start once for the whole job; it
// returns how long the start took and how to stop the engine.
type LaunchFunc func(ctx context.Context, side ABSide) (started time.Duration, stop func(), err error)

// Swapper brings the engines of an A/B job up for their blocks and puts them aside.
type Swapper struct {
	r      *Runner
	sides  []*swapSide
	active int // the side last brought up; -1 before the first block
	// ready is set once every side has been checked and put aside: a refusal after
	// that, of an endpoint that worked before, is the engine's failure, not bad input.
	ready bool
}

type swapSide struct {
	ABSide
	mode    string
	spec    workload.SwapSpec
	url     string
	apiKey  string
	client  engine.SwapClient
	id      *engine.Identity // identified before the first block
	stop    func()           // stops an engine the job started; nil otherwise
	aside   bool
	broken  bool          // a wake failed: leave the engine alone
	pending result.ABSwap // what this side cost since its last block
}

// NewSwapper starts, identifies, checks and puts aside every managed side, one after
// the other (so that two engines that fit one GPU only when one is aside can both
// start). A side the server cannot put aside as declared is a BadInputError naming the
// endpoint and the flags the server needs, before anything is measured. On error the
// engines started so far are stopped.
func (r *Runner) NewSwapper(ctx context.Context, sides []ABSide, launch LaunchFunc) (sw *Swapper, err error) {
	sw = &Swapper{r: r, active: -1}
	defer func() {
		if err != nil {
			sw.Close()
			sw = nil
		}
	}()
	for _, side := range sides {
		s := &swapSide{ABSide: side, mode: side.Mode(), url: TargetURL(side.File, side.Override)}
		s.pending.Mode = s.mode
		sw.sides = append(sw.sides, s)
		if side.File.Target.Swap != nil {
			s.spec = *side.File.Target.Swap
		}
		if !side.Managed() {
			continue
		}
		if s.url == "" {
			return sw, badInput("%s: no engine URL for the %s side: set target.url or pass its target flag", side.File.Path, side.Name)
		}
		if k := side.File.Target.APIKeyEnv; k != "" {
			if s.apiKey = r.getenv(k); s.apiKey == "" {
				return sw, badInput("%s: target.api_key_env names %q, which is not set in the environment", side.File.Path, k)
			}
		}
		s.client = engine.SwapClient{BaseURL: s.url, APIKey: s.apiKey}
		if side.File.Target.Start != nil {
			started, stop, err := launch(ctx, side)
			if err != nil {
				return sw, err
			}
			s.stop = stop
			s.pending.Starts++
			s.pending.StartS += started.Seconds()
		}
		if s.mode == workload.SwapResident {
			// Never put aside, so never woken: each block's own identification is
			// enough.
			continue
		}
		if s.id, err = sw.identify(ctx, s); err != nil {
			return sw, err
		}
		if err := sw.probe(ctx, s); err != nil {
			return sw, err
		}
		if err := sw.putAside(ctx, s); err != nil {
			return sw, err
		}
	}
	sw.ready = true
	return sw, nil
}

func (sw *Swapper) identify(ctx context.Context, s *swapSide) (*engine.Identity, error) {
	pctx, cancel := sw.r.preflight(ctx)
	defer cancel()
	return engine.Identify(pctx, engine.IdentifyOptions{BaseURL: s.url, APIKey: s.apiKey, Engine: s.File.Target.Engine, Model: s.File.Model.Name, Timeout: sw.r.ProbeTimeout, KVUnified: s.File.Target.KVUnified})
}

// probe checks that the server offers the declared way of putting it aside.
func (sw *Swapper) probe(ctx context.Context, s *swapSide) error {
	var err error
	switch s.mode {
	case workload.SwapSleep:
		var asleep bool
		if asleep, err = s.client.IsSleeping(ctx); err == nil && asleep {
			// Put aside already (a job before this one left it so): that is the state
			// the job wants before its first block.
			s.aside = true
		}
	case workload.SwapMemoryRelease:
		err = s.client.MemorySaver(ctx)
	}
	return sw.classify(s, err)
}

// classify makes a refusal of the declared endpoints before any block bad input, naming
// the config.
func (sw *Swapper) classify(s *swapSide, err error) error {
	var un *engine.SwapUnsupportedError
	if !sw.ready && errors.As(err, &un) {
		return &BadInputError{Err: fmt.Errorf("%s: target.swap.mode %s for the %s side: %w", s.File.Path, s.mode, s.Name, err)}
	}
	return err
}

// putAside sleeps or releases the side's engine, within sleep_timeout.
func (sw *Swapper) putAside(ctx context.Context, s *swapSide) error {
	if s.aside || (s.mode != workload.SwapSleep && s.mode != workload.SwapMemoryRelease) {
		return nil
	}
	t0 := sw.r.now()
	var err error
	if s.mode == workload.SwapSleep {
		err = s.client.Sleep(ctx, s.spec.Level, s.spec.SleepTimeout)
		if err == nil {
			err = sw.waitSleeping(ctx, s, true, t0.Add(s.spec.SleepTimeout))
		}
	} else {
		err = s.client.ReleaseMemory(ctx, s.spec.SleepTimeout)
	}
	if err != nil {
		return fmt.Errorf("putting the %s engine aside (%s): %w", s.Name, s.mode, sw.classify(s, err))
	}
	s.aside = true
	s.pending.Sleeps++
	s.pending.SleepS += sw.r.now().Sub(t0).Seconds()
	return nil
}

// waitSleeping polls /is_sleeping until it says want or deadline passes: vLLM's own
// comment warns that with a multiprocessing front end the call may answer before the
// engine is done.
func (sw *Swapper) waitSleeping(ctx context.Context, s *swapSide, want bool, deadline time.Time) error {
	for {
		asleep, err := s.client.IsSleeping(ctx)
		if err != nil {
			return err
		}
		if asleep == want {
			return nil
		}
		if !sw.r.now().Before(deadline) {
			return fmt.Errorf("%w: %s/is_sleeping still says %v", engine.ErrStalled, s.url, asleep)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bringBack wakes or resumes the side's engine within wake_timeout and checks that the
// engine that answers is the one put aside.
func (sw *Swapper) bringBack(ctx context.Context, s *swapSide, cold bool) error {
	if !s.aside {
		return nil
	}
	t0 := sw.r.now()
	var err error
	if s.mode == workload.SwapSleep {
		err = s.client.WakeUp(ctx, s.spec.WakeTimeout)
		if err == nil {
			err = sw.waitSleeping(ctx, s, false, t0.Add(s.spec.WakeTimeout))
		}
	} else {
		err = s.client.ResumeMemory(ctx, s.spec.WakeTimeout)
	}
	if err != nil {
		s.broken = true
		return fmt.Errorf("bringing the %s engine back (%s, wake_timeout %s): %w", s.Name, s.mode, s.spec.WakeTimeout, err)
	}
	s.aside = false
	s.pending.Wakes++
	s.pending.WakeS += sw.r.now().Sub(t0).Seconds()
	id, err := sw.identify(ctx, s)
	if err != nil {
		return fmt.Errorf("the woken %s engine: %w", s.Name, err)
	}
	if diff := identityChange(s.id, id); diff != "" {
		return fmt.Errorf("the %s engine that woke at %s is not the one put aside: %s", s.Name, s.url, diff)
	}
	if cold {
		// A wake that kept the prefix index would let a block hit what the previous one
		// of this side computed; the reset makes the cache empty whatever the engine
		// kept, and the run's prefix-cache hits (a cold run with hits is not judged)
		// show it stayed so.
		if _, err := engine.ResetPrefixCache(ctx, s.url, s.apiKey, id.Engine, nil); err != nil {
			return fmt.Errorf("emptying the prefix cache of the woken %s engine for a cold workload: %w", s.Name, err)
		}
	}
	return nil
}

// identityChange says how the engine that answers now differs from the one identified
// before the first block, or "".
func identityChange(was, now *engine.Identity) string {
	for _, f := range []struct{ name, a, b string }{
		{"engine", was.Engine, now.Engine},
		{"version", was.Version, now.Version},
		{"model", was.ModelID, now.ModelID},
		{"model revision", was.ModelRevision, now.ModelRevision},
	} {
		if f.a != f.b {
			return fmt.Sprintf("%s %q, was %q", f.name, f.b, f.a)
		}
	}
	return ""
}

// Bring makes side k the engine that answers for the next block: it puts the other
// managed side aside and brings k back. It returns what the block's side cost since its
// last block (starts, sleeps, wakes; the other side's sleep is counted on the block that
// needed it). cold says the block's workload is cold, so the woken engine's prefix cache
// must be empty. A wake that fails or passes wake_timeout is the engine's failure.
func (sw *Swapper) Bring(ctx context.Context, k int, cold bool) (*result.ABSwap, error) {
	cost := &result.ABSwap{Mode: sw.sides[k].mode}
	if sw.active != k {
		for i, s := range sw.sides {
			if i == k {
				continue
			}
			if err := sw.putAside(ctx, s); err != nil {
				return nil, err
			}
			// Its sleep is paid for this block's sake.
			cost.Add(&s.pending)
			s.pending = result.ABSwap{Mode: s.mode}
		}
		if err := sw.bringBack(ctx, sw.sides[k], cold); err != nil {
			return nil, err
		}
		sw.active = k
	}
	s := sw.sides[k]
	cost.Add(&s.pending)
	s.pending = result.ABSwap{Mode: s.mode}
	return cost, nil
}

// Close stops the engines the job started. An engine someone else runs is woken, so
// that the job leaves it as it found it (a wake that failed is not tried again).
func (sw *Swapper) Close() {
	for _, s := range sw.sides {
		switch {
		case s.stop != nil:
			s.stop()
			s.stop = nil
		case s.aside && !s.broken:
			ctx, cancel := context.WithTimeout(context.Background(), s.spec.WakeTimeout)
			if err := sw.bringBack(ctx, s, false); err != nil {
				sw.r.logf("warning: the %s engine at %s was left aside: %v", s.Name, s.url, err)
			}
			cancel()
		}
	}
}
