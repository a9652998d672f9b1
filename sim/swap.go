package sim

import (
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The simulator puts itself aside and comes back as the engines do between the blocks of
// an A/B job (docs/swap.md has the engines' endpoints, read from their source):
//
//   - vLLM's sleep mode: POST /sleep?level=N, POST /wake_up[?tags=...], GET /is_sleeping
//     answering {"is_sleeping": bool}. vLLM registers these routes only with
//     VLLM_SERVER_DEV_MODE=1 (Swap.DevMode; without it they are 404, as on a server
//     started without it), and sleeps only with --enable-sleep-mode (Swap.SleepMode;
//     without it the simulator refuses the sleep with 400 and says which flag is missing).
//     /sleep and /wake_up answer 200 with an empty body once done, as vLLM's do.
//   - SGLang's POST /release_memory_occupation and /resume_memory_occupation, always
//     served, answering 200 with the JSON null FastAPI writes for a handler that returns
//     nothing. Without --enable-memory-saver (Swap.MemorySaver) SGLang's memory saver is a
//     no-op: the release "succeeds" and frees nothing, and the engine keeps serving; the
//     simulator does the same, and says enable_memory_saver: false in GET /server_info,
//     which is where a caller must look.
//
// Putting aside takes SleepTime and bringing back WakeTime. From the start of a sleep (or
// release) to the end of the wake (or resume) a generation request is refused with 503 and
// the engine's error object; /v1/models, /version, /tokenize and /metrics keep answering,
// as on vLLM, whose sleep keeps the API server up. Waking empties the prefix cache: a
// level-1 sleep discards the KV cache and SGLang's release flushes it. Requests already
// running when the sleep begins run to their end (vLLM aborts them; an A/B job puts an
// engine aside only after its block has finished, so it never sends any).

// Swap configures the endpoints that put the simulated engine aside and bring it back.
type Swap struct {
	SleepMode   bool          // vLLM's --enable-sleep-mode
	DevMode     bool          // VLLM_SERVER_DEV_MODE=1: serve /sleep, /wake_up, /is_sleeping
	MemorySaver bool          // SGLang's --enable-memory-saver: a release takes effect
	SleepTime   time.Duration // how long a sleep or a release takes
	WakeTime    time.Duration // how long a wake or a resume takes
}

func (o *Options) bindSwap(fs *flag.FlagSet) {
	fs.BoolVar(&o.Swap.SleepMode, "sleep-mode", o.Swap.SleepMode, "allow vLLM's sleep (its --enable-sleep-mode); the endpoints also need --dev-mode")
	fs.BoolVar(&o.Swap.DevMode, "dev-mode", o.Swap.DevMode, "serve POST /sleep, POST /wake_up and GET /is_sleeping, as vLLM does with VLLM_SERVER_DEV_MODE=1 (404 without)")
	fs.BoolVar(&o.Swap.MemorySaver, "memory-saver", o.Swap.MemorySaver, "make SGLang's POST /release_memory_occupation take effect (its --enable-memory-saver; without it the release is a no-op)")
	fs.DurationVar(&o.Swap.SleepTime, "sleep-time", o.Swap.SleepTime, "how long a sleep or a memory release takes")
	fs.DurationVar(&o.Swap.WakeTime, "wake-time", o.Swap.WakeTime, "how long a wake or a memory resume takes")
}

func (s Swap) validate() error {
	if s.SleepTime < 0 || s.WakeTime < 0 {
		return fmt.Errorf("negative sleep or wake time")
	}
	return nil
}

// swapState is the engine's sleep state.
type swapState struct {
	o    Swap
	quit <-chan struct{} // closed when the engine stops

	mu sync.Mutex
	// aside is true from the start of a sleep or release to the end of the wake or
	// resume: generation is refused.
	aside bool
	// asleep is what GET /is_sleeping says: true from the end of a sleep to the end of
	// the wake.
	asleep  bool
	how     string     // "sleeping" or "memory released", for the refusal
	changes sync.Mutex // one sleep or wake at a time, as the engine runs them in turn
}

func (s *Server) registerSwap() {
	s.swap = &swapState{o: s.o.Swap, quit: s.eng.quit}
	if s.o.Swap.DevMode {
		s.mux.HandleFunc("POST /sleep", s.sleep)
		s.mux.HandleFunc("POST /wake_up", s.wakeUp)
		s.mux.HandleFunc("GET /is_sleeping", s.isSleeping)
	}
	s.mux.HandleFunc("POST /release_memory_occupation", s.releaseMemory)
	s.mux.HandleFunc("POST /resume_memory_occupation", s.resumeMemory)
	s.mux.HandleFunc("GET /server_info", s.serverInfo)
}

// refuse answers a generation request while the engine is aside; false lets it through.
func (st *swapState) refuse(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/v1/completions" && r.URL.Path != "/v1/chat/completions" {
		return false
	}
	st.mu.Lock()
	aside, how := st.aside, st.how
	st.mu.Unlock()
	if !aside {
		return false
	}
	writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "The engine is "+how+": wake it up (POST /wake_up, POST /resume_memory_occupation) before sending requests")
	return true
}

// change runs one transition that takes d: before runs at once, after once d has passed
// (or never, when the engine stops first). The handler waits for it, or for its client to
// go; a transition whose client went away still completes, as on the engines.
func (st *swapState) change(r *http.Request, d time.Duration, before, after func()) bool {
	done := make(chan bool, 1)
	go func() {
		st.changes.Lock()
		defer st.changes.Unlock()
		st.mu.Lock()
		before()
		st.mu.Unlock()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-st.quit:
			done <- false
			return
		}
		st.mu.Lock()
		after()
		st.mu.Unlock()
		done <- true
	}()
	select {
	case ok := <-done:
		return ok
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) sleep(w http.ResponseWriter, r *http.Request) {
	level := r.URL.Query().Get("level")
	if level == "" {
		level = "1"
	}
	if n, err := strconv.Atoi(level); err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("invalid sleep level %q: expected an integer (1: offload the weights, discard the KV cache)", level))
		return
	}
	if !s.o.Swap.SleepMode {
		writeError(w, http.StatusBadRequest, "BadRequestError", "Sleep mode is not enabled: start the engine with --enable-sleep-mode")
		return
	}
	st := s.swap
	if !st.change(r, st.o.SleepTime, func() { st.aside, st.how = true, "sleeping" }, func() { st.asleep = true }) {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the engine stopped")
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) wakeUp(w http.ResponseWriter, r *http.Request) {
	for _, t := range r.URL.Query()["tags"] {
		if t != "weights" && t != "kv_cache" {
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("invalid tag %q: expected weights or kv_cache", t))
			return
		}
	}
	s.bringBack(w, r, true)
}

// bringBack ends a sleep or a release: after the wake time the engine serves again, with
// an empty prefix cache.
func (s *Server) bringBack(w http.ResponseWriter, r *http.Request, empty bool) {
	st := s.swap
	st.mu.Lock()
	aside := st.aside
	st.mu.Unlock()
	d := st.o.WakeTime
	if !aside {
		d = 0 // waking an awake engine is a no-op
	}
	woke := func() {
		// The cache is emptied before the engine serves again, so that no request of
		// the next block finds what the last one left.
		if aside {
			s.eng.resetPrefixCache()
		}
		st.aside, st.asleep = false, false
	}
	if !st.change(r, d, func() {}, woke) {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the engine stopped")
		return
	}
	if empty {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, nil)
}

func (s *Server) isSleeping(w http.ResponseWriter, _ *http.Request) {
	s.swap.mu.Lock()
	asleep := s.swap.asleep
	s.swap.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]bool{"is_sleeping": asleep})
}

func (s *Server) releaseMemory(w http.ResponseWriter, r *http.Request) {
	if !s.o.Swap.MemorySaver {
		// SGLang's memory saver without --enable-memory-saver: pause() does nothing.
		writeJSON(w, http.StatusOK, nil)
		return
	}
	st := s.swap
	if !st.change(r, st.o.SleepTime, func() { st.aside, st.how = true, "memory released" }, func() {}) {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the engine stopped")
		return
	}
	writeJSON(w, http.StatusOK, nil)
}

func (s *Server) resumeMemory(w http.ResponseWriter, r *http.Request) {
	if !s.o.Swap.MemorySaver {
		writeJSON(w, http.StatusOK, nil)
		return
	}
	s.bringBack(w, r, false)
}

// serverInfo is the part of SGLang's GET /server_info (its server arguments) that says
// whether the memory saver is on.
func (s *Server) serverInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"enable_memory_saver": s.o.Swap.MemorySaver, "version": s.version})
}

// summary is a line for the simulator's start-up log, "" when nothing is on.
func (s Swap) summary() string {
	var on []string
	if s.SleepMode {
		on = append(on, "sleep mode")
	}
	if s.DevMode {
		on = append(on, "dev mode (/sleep, /wake_up, /is_sleeping)")
	}
	if s.MemorySaver {
		on = append(on, "memory saver")
	}
	if len(on) == 0 {
		return ""
	}
	return fmt.Sprintf("%s; sleep %s, wake %s", strings.Join(on, ", "), s.SleepTime, s.WakeTime)
}
