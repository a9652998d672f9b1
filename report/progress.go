package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/slogate/slogate/loadgen"
)

// DefaultProgressEvery is how often a progress line is printed when the output is not a
// terminal (a CI log): often enough that a 20-minute job is not silent, rarely enough
// that the log stays readable.
const DefaultProgressEvery = 10 * time.Second

// barWidth is the width of the bar on a terminal, in cells.
const barWidth = 24

// Progress renders the progress of one workload's run. On a terminal it redraws one line
// (a bar, done/total, the achieved rate against the target, errors, in flight, the ETA);
// elsewhere it prints a plain line, without escape codes, at most every Every and once at
// the end of each phase, so a CI log shows a long run moving.
type Progress struct {
	w   io.Writer
	now func() time.Time
	tty bool
	// Name is the workload; TargetRPS the rate the schedule sends at (0: not a fixed
	// rate, as in a closed loop or a rate profile, and not shown).
	Name      string
	TargetRPS float64
	// Every is the interval of plain lines; 0 means DefaultProgressEvery.
	Every time.Duration

	last      loadgen.Progress
	have      bool
	printed   time.Time
	printedAt loadgen.Progress // what the last plain line showed
	drawn     bool             // a terminal line is on screen
}

// NewProgress renders onto w; now is the clock that paces the plain lines.
func NewProgress(w io.Writer, now func() time.Time, tty bool, name string, targetRPS float64) *Progress {
	return &Progress{w: w, now: now, tty: tty, Name: name, TargetRPS: targetRPS}
}

// Update takes one snapshot from the load generator (loadgen.Config.Progress).
func (p *Progress) Update(s loadgen.Progress) {
	phaseEnd := p.have && s.Warmup != p.last.Warmup
	if phaseEnd && !p.tty && p.last != p.printedAt {
		// The warm-up ended: its last state, once.
		p.line(p.last)
	}
	p.last, p.have = s, true
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", p.text(s, true))
		p.drawn = true
		return
	}
	every := p.Every
	if every <= 0 {
		every = DefaultProgressEvery
	}
	now := p.now()
	if p.printed.IsZero() || phaseEnd || now.Sub(p.printed) >= every || (s.Total > 0 && s.Done == s.Total && s != p.printedAt) {
		p.line(s)
	}
}

func (p *Progress) line(s loadgen.Progress) {
	fmt.Fprintln(p.w, p.text(s, false))
	p.printed, p.printedAt = p.now(), s
}

// Finish ends the run's progress: a terminal line is cleared (the result follows); a
// plain log gets the last state if it has not shown it.
func (p *Progress) Finish() {
	switch {
	case p.tty && p.drawn:
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	case !p.tty && p.have && p.last != p.printedAt:
		p.line(p.last)
	}
}

// text is one progress line. Figures come from the snapshot: the achieved rate is the
// requests started (done and in flight) over the phase's elapsed time.
func (p *Progress) text(s loadgen.Progress, bar bool) string {
	var b strings.Builder
	phase := "measured"
	if s.Warmup {
		phase = "warm-up"
	}
	fmt.Fprintf(&b, "[%s] %s", p.Name, phase)
	if bar && s.Total > 0 {
		filled := int(math.Round(barWidth * float64(min(s.Done, s.Total)) / float64(s.Total)))
		b.WriteString(" " + strings.Repeat("█", filled) + strings.Repeat("░", barWidth-filled))
	}
	if s.Total > 0 {
		fmt.Fprintf(&b, " %d/%d (%d%%)", s.Done, s.Total, 100*s.Done/s.Total)
	} else {
		fmt.Fprintf(&b, " %d done", s.Done)
	}
	el := s.Elapsed.Seconds()
	if el > 0 && !s.Warmup {
		fmt.Fprintf(&b, ", %.2f req/s", float64(s.Done+s.InFlight)/el)
		if p.TargetRPS > 0 {
			fmt.Fprintf(&b, " of %.2f target", p.TargetRPS)
		}
	}
	fmt.Fprintf(&b, ", %d errors, %d in flight, %s elapsed", s.Errors, s.InFlight, s.Elapsed.Round(time.Second))
	if eta, ok := etaOf(s); ok {
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	return b.String()
}

// etaOf extrapolates the time left from the rate requests finished at so far.
func etaOf(s loadgen.Progress) (time.Duration, bool) {
	if s.Total <= 0 || s.Done <= 0 || s.Elapsed <= 0 || s.Done >= s.Total {
		return 0, false
	}
	per := float64(s.Elapsed) / float64(s.Done)
	return time.Duration(per * float64(s.Total-s.Done)), true
}
