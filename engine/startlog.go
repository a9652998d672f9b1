package engine

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StartPhase is one step of an engine's start that its own output names: loading the
// weights, compiling, capturing CUDA graphs, initializing the engine.
type StartPhase struct {
	Name string
	// Seconds is how long the phase took: stated by the line itself (Source "log"), or,
	// where the engine prints only a beginning and an end, the time between reading the
	// two lines (Source "seen").
	Seconds float64
	Source  string
	// At is when the line was read, from the start of the process.
	At   time.Duration
	Line string
}

// Sources of StartPhase.Seconds.
const (
	PhaseFromLog  = "log"
	PhaseFromSeen = "seen"
)

// Phase names, shared by the engines that report them.
const (
	PhaseWeights      = "weights_load"  // reading the weights (vLLM: Loading weights took)
	PhaseModelLoad    = "model_load"    // the whole model load (vLLM: Model loading took; llama.cpp: loading model → model loaded)
	PhaseCompile      = "torch_compile" // vLLM's torch.compile in total
	PhaseGraphCapture = "graph_capture" // CUDA graph capture
	PhaseEngineInit   = "engine_init"   // vLLM: init engine (profile, create kv cache, warmup model)
	PhaseMemProfile   = "memory_profile"
)

// vLLM's startup lines (vLLM 0.7 to 0.11 and later; testdata/engines/startlog/ holds one
// log of each generation). Each line may carry a prefix (the process name, the level, a
// date, the source file): only the message is matched.
var vllmPhases = []struct {
	name string
	re   *regexp.Regexp
}{
	{PhaseWeights, regexp.MustCompile(`Loading weights took ([0-9.]+) seconds`)},
	// "Model loading took 15.0 GiB and 16.2 seconds", later "... GiB memory and 16.2 seconds".
	{PhaseModelLoad, regexp.MustCompile(`Model loading took [0-9.]+ GiB (?:memory )?and ([0-9.]+) seconds`)},
	// "torch.compile takes 23.5 s in total", later "torch.compile took 14.85 s in total".
	{PhaseCompile, regexp.MustCompile(`torch\.compile (?:takes|took) ([0-9.]+) s in total`)},
	// "Graph capturing finished in 17 secs, took 0.48 GiB".
	{PhaseGraphCapture, regexp.MustCompile(`Graph capturing finished in ([0-9.]+) secs?\b`)},
	{PhaseEngineInit, regexp.MustCompile(`init engine \(profile, create kv cache, warmup model\) took ([0-9.]+) seconds`)},
	{PhaseMemProfile, regexp.MustCompile(`Memory profiling takes ([0-9.]+) seconds`)},
}

// llama.cpp's llama-server prints no durations while it starts, only the beginning and the
// end of the model load: "main: loading model" and "main: model loaded"; the server of
// node-llama-cpp 3.22.1's bundle "srv    load_model: loading model '...'" and
// "srv  llama_server: model loaded"; older servers "INFO [ main] loading model | ..." and
// "... model loaded | ...".
var (
	llamaLoadBegin = regexp.MustCompile(`(?:^|\s)(?:main(?::|\])|load_model:)\s+loading model(?:\s|$|\||')`)
	llamaLoadEnd   = regexp.MustCompile(`(?:^|\s)(?:main(?::|\])|llama_server:)\s+model loaded(?:\s|$|\|)`)
)

// StartLog reads an engine's output while it starts and keeps the phases its lines
// name. A line in no known format is ignored, never an error: engines change their
// logs, and a start is measured from outside whatever they print. It is safe for use by
// the process's output and the caller at once.
type StartLog struct {
	start time.Time
	now   func() time.Time

	mu        sync.Mutex
	partial   []byte
	phases    []StartPhase
	loadBegin time.Duration // when llama.cpp's "loading model" was read; -1: not yet
}

// maxStartLine bounds a line kept while it is incomplete: progress bars redraw with \r,
// and a line without end must not grow without bound.
const maxStartLine = 4096

// NewStartLog returns a StartLog whose times count from start.
func NewStartLog(start time.Time, now func() time.Time) *StartLog {
	if now == nil {
		now = time.Now
	}
	return &StartLog{start: start, now: now, loadBegin: -1}
}

// Write splits the output into lines (at \n or \r) and parses each.
func (l *StartLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.now().Sub(l.start)
	rest := b
	for len(rest) > 0 {
		i := strings.IndexAny(string(rest), "\r\n")
		if i < 0 {
			if len(l.partial) < maxStartLine {
				l.partial = append(l.partial, rest[:min(len(rest), maxStartLine-len(l.partial))]...)
			}
			break
		}
		line := string(append(l.partial, rest[:i]...))
		l.partial = l.partial[:0]
		l.line(line, at)
		rest = rest[i+1:]
	}
	return len(b), nil
}

// line parses one complete line read at the given time.
func (l *StartLog) line(line string, at time.Duration) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if name, s, ok := ParseStartLine(line); ok {
		l.phases = append(l.phases, StartPhase{Name: name, Seconds: s, Source: PhaseFromLog, At: at, Line: CleanText(line, 300)})
		return
	}
	switch {
	case llamaLoadBegin.MatchString(line):
		l.loadBegin = at
	case llamaLoadEnd.MatchString(line) && l.loadBegin >= 0:
		l.phases = append(l.phases, StartPhase{Name: PhaseModelLoad, Seconds: (at - l.loadBegin).Seconds(), Source: PhaseFromSeen, At: at, Line: CleanText(line, 300)})
		l.loadBegin = -1
	}
}

// Phases returns the phases read so far, in the order their lines came.
func (l *StartLog) Phases() []StartPhase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]StartPhase(nil), l.phases...)
}

// ParseStartLine recognizes one line of an engine's startup output that states how long
// a phase took; ok is false for any other line.
func ParseStartLine(line string) (name string, seconds float64, ok bool) {
	for _, p := range vllmPhases {
		m := p.re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || v < 0 {
			return "", 0, false
		}
		return p.name, v, true
	}
	return "", 0, false
}
