package sim

import (
	"testing"
	"time"
)

// stepper drives the scheduler without a clock: plan, deliver, repeat.
type stepper struct {
	e     *scheduler
	steps int
	time  time.Duration // Σ modelled step times (no jitter)
}

func newStepper(p Profile) *stepper {
	p.Jitter = 0
	return &stepper{e: newScheduler(p, 1, 1)}
}

func (s *stepper) add(prompt, stopAt int) *seq {
	q := newSeq(prompt, stopAt, finLength)
	s.e.submit(q)
	s.e.drain()
	return q
}

func (s *stepper) step() (decodes, prefill int) {
	s.e.drain()
	decodes, prefill = s.e.plan()
	s.steps++
	s.time += s.e.stepDuration(decodes, prefill)
	s.e.deliver()
	s.e.publish()
	return decodes, prefill
}

func (s *stepper) runAll(t *testing.T, limit int) {
	t.Helper()
	for len(s.e.running)+s.e.waiting.len() > 0 {
		if s.steps >= limit {
			t.Fatalf("not finished after %d steps: running %d waiting %d", limit, len(s.e.running), s.e.waiting.len())
		}
		s.step()
	}
}

func testProfile() Profile {
	p, _ := LookupProfile("tiny")
	return p
}

func TestPlanChunkedPrefillThenDecode(t *testing.T) {
	t.Parallel()
	p := testProfile() // budget 512
	s := newStepper(p)
	q := s.add(1000, 3)
	// 1000 prompt tokens take two chunks (512 + 488); the second completes the prefill
	// and samples the first token.
	if d, pf := s.step(); d != 0 || pf != 512 {
		t.Fatalf("step 1: decodes %d prefill %d, want 0, 512", d, pf)
	}
	if q.tokens.Load() != 0 {
		t.Fatal("a token after a partial prefill")
	}
	if d, pf := s.step(); d != 0 || pf != 488 {
		t.Fatalf("step 2: decodes %d prefill %d, want 0, 488", d, pf)
	}
	if q.tokens.Load() != 1 {
		t.Fatalf("tokens after prefill = %d, want 1", q.tokens.Load())
	}
	if d, pf := s.step(); d != 1 || pf != 0 {
		t.Fatalf("step 3: decodes %d prefill %d, want 1, 0", d, pf)
	}
	s.step()
	if got := q.tokens.Load(); got != 3 || q.finish.Load() != finLength {
		t.Fatalf("tokens %d finish %d, want 3 and length", got, q.finish.Load())
	}
	if st := s.e.stats(); st.UsedBlocks != 0 || st.PromptTokens != 1000 || st.GenerationTokens != 3 {
		t.Fatalf("stats after finish: %+v", st)
	}
}

func TestPlanDecodesCountAgainstBudgetFirst(t *testing.T) {
	t.Parallel()
	p := testProfile()
	p.MaxNumBatchedTokens = 20
	p.NumBlocks = 1000
	s := newStepper(p)
	for range 4 {
		s.add(4, 100)
	}
	s.step() // 4 prefills of 4 tokens
	s.add(100, 10)
	// 4 decodes take 4 of the 20 tokens; the newcomer gets the other 16.
	if d, pf := s.step(); d != 4 || pf != 16 {
		t.Fatalf("decodes %d prefill %d, want 4, 16", d, pf)
	}
}

func TestPlanAdmissionLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		blocks      int
		maxSeqs     int
		prompt      int
		wantRunning int
	}{
		// max_num_seqs binds: plenty of blocks.
		{"max_num_seqs", 1000, 16, 10, 16},
		// KV binds: prompt 31 (+1) = 2 blocks each, 64 blocks ⇒ 32 < max_num_seqs 40.
		{"kv blocks", 64, 40, 31, 32},
		// prompt 32 (+1) needs 3 blocks: the boundary rounds up ⇒ ⌊64/3⌋ = 21.
		{"block boundary", 64, 40, 32, 21},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			p.NumBlocks, p.MaxNumSeqs, p.MaxNumBatchedTokens = tc.blocks, tc.maxSeqs, 4096
			s := newStepper(p)
			for range 50 {
				s.add(tc.prompt, 1000)
			}
			s.step()
			st := s.e.stats()
			if st.Running != tc.wantRunning || st.Waiting != 50-tc.wantRunning {
				t.Fatalf("running %d waiting %d, want %d and %d", st.Running, st.Waiting, tc.wantRunning, 50-tc.wantRunning)
			}
		})
	}
}

func TestPlanPreemptionRecomputes(t *testing.T) {
	t.Parallel()
	p := testProfile()
	p.NumBlocks = 16
	s := newStepper(p)
	seqs := make([]*seq, 6)
	for i := range seqs {
		seqs[i] = s.add(30, 80) // 110 tokens = 7 blocks at the end, 2 at admission
	}
	maxUsed := 0
	for len(s.e.running)+s.e.waiting.len() > 0 {
		if s.steps > 10000 {
			t.Fatal("no progress")
		}
		s.step()
		maxUsed = max(maxUsed, s.e.stats().UsedBlocks)
		if s.e.free < 0 {
			t.Fatalf("free blocks %d < 0", s.e.free)
		}
	}
	st := s.e.stats()
	if st.Preemptions == 0 {
		t.Fatal("no preemption although 6 sequences of 7 blocks share 16 blocks")
	}
	if maxUsed > p.NumBlocks {
		t.Fatalf("used %d blocks of %d", maxUsed, p.NumBlocks)
	}
	for i, q := range seqs {
		if got := q.tokens.Load(); got != 80 || q.finish.Load() != finLength {
			t.Errorf("seq %d: %d tokens, finish %d; want 80, length", i, got, q.finish.Load())
		}
	}
	// Prompt tokens count once per request even when recomputed after preemption.
	if st.PromptTokens != 6*30 || st.GenerationTokens != 6*80 {
		t.Fatalf("prompt %d generation %d, want %d and %d", st.PromptTokens, st.GenerationTokens, 6*30, 6*80)
	}
}

func TestPlanAbortFreesBlocks(t *testing.T) {
	t.Parallel()
	s := newStepper(testProfile())
	a := s.add(100, 1000)
	s.add(100, 1000)
	s.step()
	s.e.abort(a)
	s.step()
	if st := s.e.stats(); st.Running != 1 || st.Aborted != 1 || st.UsedBlocks != s.e.p.BlocksFor(101) {
		t.Fatalf("after abort: %+v", st)
	}
	// Aborting a waiting sequence removes it from the queue.
	p := testProfile()
	p.NumBlocks = 8
	s = newStepper(p)
	s.add(100, 10) // 7 blocks
	w := s.add(100, 10)
	s.step()
	if s.e.waiting.len() != 1 {
		t.Fatalf("waiting %d, want 1", s.e.waiting.len())
	}
	s.e.abort(w)
	s.step()
	if s.e.waiting.len() != 0 || w.state != stateDone {
		t.Fatalf("aborted waiting sequence still queued")
	}

}

func TestDeque(t *testing.T) {
	t.Parallel()
	var d deque
	var all []*seq
	for i := range 40 {
		q := &seq{prompt: i}
		all = append(all, q)
		d.pushBack(q)
	}
	for range 30 {
		d.popFront()
	}
	d.pushFront(all[29])
	d.pushFront(all[28])
	d.pushBack(&seq{prompt: 40})
	want := []int{28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40}
	if d.len() != len(want) {
		t.Fatalf("len %d, want %d", d.len(), len(want))
	}
	for i, w := range want {
		if got := d.at(i).prompt; got != w {
			t.Fatalf("at(%d) = %d, want %d", i, got, w)
		}
	}
	if !d.remove(all[33]) || d.len() != len(want)-1 {
		t.Fatal("remove failed")
	}
}

// A lone request's modelled lifetime: chunked prefill steps, then one decode step per
// further token. The HTTP tests compare measurements with it.
func TestStepperLoneRequestTime(t *testing.T) {
	t.Parallel()
	p := testProfile()
	s := newStepper(p)
	s.add(100, 20)
	s.runAll(t, 100)
	want := p.StepTime(0, 100) + 19*p.StepTime(1, 0)
	if s.time != want || s.steps != 20 {
		t.Fatalf("lone request: %d steps, %v; want 20 steps, %v", s.steps, s.time, want)
	}
}
