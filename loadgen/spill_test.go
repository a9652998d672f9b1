package loadgen

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/result"
)

// spillBox stands for measure's journal: Finished copies each measured request into
// it, and Spill hands them back last first (Run must restore the order), marked so that
// a test can tell they came from the box and not from memory Run kept.
type spillBox struct {
	mu   sync.Mutex
	reqs []result.Request
}

const spilledMark = "spilled"

func spillTo(cfg *Config) *spillBox {
	b := &spillBox{}
	cfg.Finished = func(warm bool, q *result.Request) {
		if warm {
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		c := *q
		c.Finish = spilledMark
		b.reqs = append(b.reqs, c)
	}
	cfg.Spill = func() ([]result.Request, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		out := slices.Clone(b.reqs)
		slices.Reverse(out)
		return out, nil
	}
	return b
}

// check: every measured request came back from the box, none from memory Run kept.
func (b *spillBox) check(t *testing.T, out *Outcome) {
	t.Helper()
	if len(out.Measured) != len(b.reqs) {
		t.Fatalf("%d measured requests, %d spilled", len(out.Measured), len(b.reqs))
	}
	for k, q := range out.Measured {
		if q.Finish != spilledMark {
			t.Fatalf("measured request %d (index %d) did not come back from the spill: finish %q", k, q.I, q.Finish)
		}
	}
}

// With Spill, the measured requests are read back once the window has closed, in index
// order, for the open and the closed loop alike: every one the Outcome holds came back
// from the spill (spillBox.check), none from memory Run kept.
func TestSpill(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	for _, closed := range []bool{false, true} {
		name := map[bool]string{false: "open", true: "closed"}[closed]
		t.Run(name, func(t *testing.T) {
			f := newFake(epoch, 2*time.Millisecond, 3, time.Millisecond, false)
			cfg := baseConfig(f, &fakeSource{arrivals: constant(500, 40)}, epoch)
			cfg.Warmup, cfg.WarmupConcurrency = 3, 1
			if closed {
				cfg.Closed, cfg.Users, cfg.Requests = true, 4, 40
			}
			box := spillTo(&cfg)
			out := run(t, cfg)
			box.check(t, out)
			if len(out.Measured) != 40 {
				t.Fatalf("%d measured requests, want 40", len(out.Measured))
			}
			for k, q := range out.Measured {
				if q.I != k {
					t.Fatalf("measured request %d has index %d: the spill's order was not restored", k, q.I)
				}
				if q.Error != "" || q.Chunks != 3 || len(q.ITLUS) != 2 {
					t.Errorf("request %d: error %q, %d chunks, %d gaps", k, q.Error, q.Chunks, len(q.ITLUS))
				}
			}
			if len(out.Warmup) != 3 {
				t.Errorf("%d warm-up requests kept, want 3 (the warm-up is not spilled)", len(out.Warmup))
			}
			if out.Window.EndUS <= out.Window.StartUS {
				t.Errorf("window %+v from the spilled requests", out.Window)
			}
		})
	}
}

// A spill that cannot be read back stops the run as incomplete, saying why; a Spill
// with no Finished to keep the requests is a bad Config.
func TestSpillErrors(t *testing.T) {
	t.Parallel()
	epoch := time.Now()
	f := newFake(epoch, time.Millisecond, 1, time.Millisecond, false)
	cfg := baseConfig(f, &fakeSource{arrivals: constant(500, 5)}, epoch)
	spillTo(&cfg)
	cfg.Spill = func() ([]result.Request, error) { return nil, errors.New("journal.jsonl: no such file") }
	out := run(t, cfg)
	if !strings.Contains(out.Stopped, "could not be read back") || !strings.Contains(out.Stopped, "journal.jsonl: no such file") {
		t.Errorf("Stopped %q: want the failed read-back and its cause", out.Stopped)
	}

	cfg.Finished = nil
	if _, err := Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "Spill without Finished") {
		t.Errorf("Run with Spill and no Finished: %v", err)
	}
}
