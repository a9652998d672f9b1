package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slogate/slogate/loadgen"
)

// feed plays a run through p: a 2 s warm-up of 8 requests, then 352 requests over 44 s
// (8/s), one snapshot every 200 ms as the load generator sends them, on a fake clock.
func feed(p *Progress, clock *time.Time) {
	step := 200 * time.Millisecond
	for el := time.Duration(0); el <= 2*time.Second; el += step {
		*clock = clock.Add(step)
		done := int(el / (250 * time.Millisecond))
		p.Update(loadgen.Progress{Warmup: true, Done: min(done, 8), Total: 8, InFlight: 1, Elapsed: el})
	}
	for el := time.Duration(0); el <= 44*time.Second; el += step {
		*clock = clock.Add(step)
		done := int(el.Seconds() * 8)
		errs := 0
		if done > 100 {
			errs = 1
		}
		p.Update(loadgen.Progress{Done: min(done, 352), Total: 352, Errors: errs, InFlight: min(7, 352-min(done, 352)), Elapsed: el})
	}
	p.Finish()
}

// TestProgressPlainGolden: without a terminal, a plain line every 10 s and at the end of
// each phase, and not one escape code.
func TestProgressPlainGolden(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	p := NewProgress(&b, func() time.Time { return clock }, false, "chat-demo", 8)
	feed(p, &clock)
	if strings.ContainsRune(b.String(), '\x1b') || strings.ContainsRune(b.String(), '\r') {
		t.Errorf("plain progress has escape codes or carriage returns:\n%q", b.String())
	}
	checkGolden(t, filepath.Join("testdata", "progress-plain.golden"), b.Bytes())
}

// TestProgressTerminal: on a terminal, one redrawn line with a bar, the rate against the
// target and the ETA, cleared at the end.
func TestProgressTerminal(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	p := NewProgress(&b, func() time.Time { return clock }, true, "chat-demo", 8)
	feed(p, &clock)
	out := b.String()
	if strings.Count(out, "\n") != 0 || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("terminal progress is not one redrawn line cleared at the end: %q", out[max(0, len(out)-200):])
	}
	frames := strings.Split(out, "\r\033[K")
	mid := frames[len(frames)/2]
	for _, want := range []string{"[chat-demo] measured ", "█", "░", "/352 (", "req/s of 8.00 target", "errors", "in flight", "ETA "} {
		if !strings.Contains(mid, want) {
			t.Errorf("frame %q lacks %q", mid, want)
		}
	}
}
