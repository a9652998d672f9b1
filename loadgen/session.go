package loadgen

import (
	"fmt"
	"sync"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/workload"
)

// SessionSource is what the session executor needs from a workload.Generator (which
// satisfies it) besides Source.
type SessionSource interface {
	Session(i int) workload.Session
	Turn(i, n int) workload.Turn
}

var _ SessionSource = (*workload.Generator)(nil)

// turnIO carries a turn's messages to doWith, and its answer back.
type turnIO struct {
	msgs []engine.Message
	text string        // the answer's text
	end  time.Duration // when the answer ended (or failed)
}

func (r *runner) sessionInfo(i int) workload.Session {
	r.srcMu.Lock()
	defer r.srcMu.Unlock()
	return r.cfg.Sessions.Session(i)
}

func (r *runner) sessionTurn(i, n int) workload.Turn {
	r.srcMu.Lock()
	defer r.srcMu.Unlock()
	return r.cfg.Sessions.Turn(i, n)
}

// sessionTurns is the number of turns n sessions send when none fails.
func (r *runner) sessionTurns(n int) int {
	total := 0
	for i := range n {
		total += r.sessionInfo(i).Turns
	}
	return total
}

// sessions starts session i at windowStart + arrivals[i], never waiting on another
// session (open loop), and returns every turn sent, session by session, and the notes
// the record must carry.
func (r *runner) sessions(ph *phase, windowStart time.Duration, arrivals []time.Duration) ([]result.Request, []string) {
	per := make([][]result.Request, len(arrivals))
	early := make([]bool, len(arrivals))
	sent := make([]int, len(arrivals))
	var wg sync.WaitGroup
	started := 0
	p := newPacer(r.cfg.Epoch, r.cfg.pacing)
	for i, a := range arrivals {
		due := windowStart + a
		if !p.wait(r.ctx, due) {
			break
		}
		wg.Go(func() {
			recs, n, e := r.session(ph, i, due)
			per[i], sent[i], early[i] = recs, n, e
		})
		started = i + 1
	}
	wg.Wait()
	var all []result.Request
	ended := 0
	turns := 0
	for i := range per[:started] {
		all = append(all, per[i]...)
		turns += sent[i]
		if early[i] {
			ended++
		}
	}
	for k := range all {
		all[k].I = k
	}
	notes := []string{fmt.Sprintf("sessions: %d started open-loop, their turns closed-loop (each sent when the previous answer ended and its think time passed, latency counted from then); %d turns sent", started, turns)}
	if ended > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d sessions ended early: a turn failed, which ends its session (its later turns were not sent)", ended, started))
	}
	return all, notes
}

// session sends the turns of session i, the first due at due, and returns them (none
// when the run spills them: Config.Spill), how many were sent, and whether a failed turn
// ended the session before its last turn.
func (r *runner) session(ph *phase, i int, due time.Duration) (recs []result.Request, sent int, early bool) {
	s := r.sessionInfo(i)
	var msgs []engine.Message
	hist := 0
	if s.System != "" {
		msgs = append(msgs, engine.Message{Role: "system", Content: s.System})
		hist = s.SystemTokens
	}
	p := newPacer(r.cfg.Epoch, r.cfg.pacing)
	var spilled result.Request
	for n := 1; n <= s.Turns; n++ {
		t := r.sessionTurn(i, n)
		if n > 1 {
			due += t.Think
			if !p.wait(r.ctx, due) {
				return recs, sent, false
			}
		}
		if r.ctx.Err() != nil {
			return recs, sent, false
		}
		// The history grows by the new message now and by the answer once it came; the
		// request sees a copy's length, never an append racing it.
		msgs = append(msgs, engine.Message{Role: "user", Content: t.Text})
		item := workload.Item{Index: i, PromptTokens: hist + t.Tokens, OutputTokens: t.OutputTokens}
		var rec *result.Request
		var tio *turnIO
		for attempt := 0; ; attempt++ {
			tio = &turnIO{msgs: msgs[:len(msgs):len(msgs)]}
			ph.inflight.Add(1)
			rec = &spilled
			if r.cfg.Spill == nil {
				recs = append(recs, result.Request{})
				rec = &recs[len(recs)-1]
			}
			r.doWith(ph, 0, item, due, rec, tio)
			rec.Session, rec.Turn, rec.HistoryTokens, rec.Attempt = i+1, n, hist, attempt
			r.finished(ph, rec)
			sent++
			if rec.Error == "" || rec.Error == engine.ErrCanceled || attempt >= r.cfg.TurnRetries || r.ctx.Err() != nil {
				break
			}
			// A retry is sent when the failure is seen, as an agent resends a failed
			// call: its latency counts from then.
			due = tio.end
		}
		if rec.Error != "" {
			if rec.Error == engine.ErrCanceled || !r.cfg.ContinueAfterFailure || n == s.Turns {
				return recs, sent, rec.Error != engine.ErrCanceled && n < s.Turns
			}
			// A task judged by its last call goes on without the failed turn.
			msgs = msgs[:len(msgs)-1]
			due = tio.end
			continue
		}
		msgs = append(msgs, engine.Message{Role: "assistant", Content: tio.text})
		// What the next turn carries: this prompt and its answer, as the engine counted
		// them where it said, else as estimated.
		if rec.PromptTokens > 0 && !rec.NoUsage {
			hist = rec.PromptTokens + rec.OutputTokens
		} else {
			hist += t.Tokens + rec.OutputTokens
		}
		due = tio.end
	}
	return recs, sent, false
}
