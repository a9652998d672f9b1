package loadgen

import (
	"context"
	"runtime"
	"time"
)

// pacing is how the open-loop dispatcher waits for a due time.
//
// Go timers on Linux wake late by up to about a millisecond (the scheduler sleeps in
// epoll_wait, whose timeout is in whole milliseconds); measured on a 2-core VM a plain
// timer dispatched at p50 0.6 ms and p99 1.1 ms late, which alone would breach the 1 ms
// client-saturation bound. A yield-spin over the last 1.5 ms is exact but burns a core
// from about 700 req/s, and on a shared machine the kernel then ranks the spinning
// thread behind sleepers, so the spin ends up adding lag. A thread-level nanosleep with a
// 1 ns timer slack wakes 50-150 µs late; aiming it that much early leaves a spin of only
// the wake-up jitter.
type pacing int

const (
	// pacePrecise: a Go timer while far from due (it can be canceled), then nanosleep
	// aimed early by the typical wake-up delay, then a yield-spin for what is left (the
	// jitter). Falls back to paceSpin where the platform has no such sleep.
	pacePrecise pacing = iota
	// paceSpin: a Go timer, then a yield-spin for the last spinSlack.
	paceSpin
	// paceTimer: a Go timer only (kept to measure against).
	paceTimer
)

const (
	// coarseSlack is how early the cancellable Go timer of pacePrecise stops, leaving
	// the rest to nanosleep: more than a Go timer's usual overshoot.
	coarseSlack = 3 * time.Millisecond
	// spinSlack is the yield-spin of paceSpin: more than a Go timer's usual overshoot.
	spinSlack = 1500 * time.Microsecond
	// minSpin: below this a nanosleep costs more than it saves.
	minSpin = 20 * time.Microsecond
	// maxBias bounds how early nanosleep is aimed, so that one descheduled wake-up on
	// a loaded machine does not turn the pacer into a spinner.
	maxBias = 300 * time.Microsecond
)

// pacer waits for absolute due times, measured from epoch on the monotonic clock. It is
// used by one goroutine.
type pacer struct {
	epoch time.Time
	mode  pacing
	timer *time.Timer
	// bias is the typical lateness of nanosleep (a moving average): a sleep is aimed
	// that much before due. Waking early costs a short spin; waking late, a lag of the
	// jitter, tens of µs, far below the 1 ms saturation bound.
	bias time.Duration
}

func newPacer(epoch time.Time, mode pacing) *pacer {
	p := &pacer{epoch: epoch, mode: mode, timer: time.NewTimer(time.Hour), bias: 60 * time.Microsecond}
	p.timer.Stop()
	if p.mode == pacePrecise && !havePreciseSleep {
		p.mode = paceSpin
	}
	return p
}

func (p *pacer) now() time.Duration { return time.Since(p.epoch) }

// wait returns true once due has come, false if ctx was canceled first.
func (p *pacer) wait(ctx context.Context, due time.Duration) bool {
	if p.now() >= due {
		// Behind schedule: no yield, so that requests already due go out back to back.
		return ctx.Err() == nil
	}
	// The request goroutine just started sits on this P; run it before this thread
	// blocks in nanosleep, or it waits until the runtime takes the P back.
	runtime.Gosched()
	for {
		if ctx.Err() != nil {
			return false
		}
		rem := due - p.now()
		switch {
		case rem <= 0:
			return true
		case p.mode == paceTimer:
			if !p.sleep(ctx, rem) {
				return false
			}
		case p.mode == paceSpin && rem > spinSlack:
			if !p.sleep(ctx, rem-spinSlack) {
				return false
			}
		case p.mode == pacePrecise && rem > coarseSlack:
			if !p.sleep(ctx, rem-coarseSlack) {
				return false
			}
		case p.mode == pacePrecise && rem > p.bias+minSpin:
			d := rem - p.bias
			start := p.now()
			fineSleep(d)
			p.observe(p.now() - start - d)
		default:
			// The spin is short (bounded by the slacks above); Gosched lets other
			// goroutines run on this P meanwhile.
			for p.now() < due {
				runtime.Gosched()
			}
			return true
		}
	}
}

func (p *pacer) sleep(ctx context.Context, d time.Duration) bool {
	p.timer.Reset(d)
	select {
	case <-p.timer.C:
		return true
	case <-ctx.Done():
		p.timer.Stop()
		return false
	}
}

func (p *pacer) observe(late time.Duration) {
	p.bias += (min(max(late, 0), maxBias) - p.bias) / 16
}

func (p pacing) String() string {
	switch p {
	case pacePrecise:
		return "precise"
	case paceSpin:
		return "spin"
	case paceTimer:
		return "timer"
	}
	return "unknown"
}
