package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartLogFixtures reads each engine's startup log and checks the phases found, in
// order, with their durations.
func TestStartLogFixtures(t *testing.T) {
	t.Parallel()
	type phase struct {
		name    string
		seconds float64
		source  string
	}
	for _, c := range []struct {
		file string
		want []phase
	}{
		// V0: the weights line gives memory only (no phase); memory profiling is its own.
		{"vllm-0.7-v0.log", []phase{{PhaseCompile, 5.96, PhaseFromLog}, {PhaseMemProfile, 11.94, PhaseFromLog},
			{PhaseGraphCapture, 18, PhaseFromLog}, {PhaseEngineInit, 31.04, PhaseFromLog}}},
		// V1 as of 0.9: "GiB and", "takes ... in total".
		{"vllm-0.9-v1.log", []phase{{PhaseWeights, 0.69, PhaseFromLog}, {PhaseModelLoad, 0.902026, PhaseFromLog},
			{PhaseCompile, 7.51, PhaseFromLog}, {PhaseGraphCapture, 17, PhaseFromLog}, {PhaseEngineInit, 34.11, PhaseFromLog}}},
		// Later V1: process prefixes, "GiB memory and".
		{"vllm-0.11-v1.log", []phase{{PhaseWeights, 24.84, PhaseFromLog}, {PhaseModelLoad, 26.657031, PhaseFromLog},
			{PhaseCompile, 16.88, PhaseFromLog}, {PhaseGraphCapture, 8, PhaseFromLog}, {PhaseEngineInit, 41.02, PhaseFromLog}}},
		// llama.cpp states no duration: the load is timed between its two lines, which
		// this test feeds at once (0 s apart).
		{"llamacpp-server.log", []phase{{PhaseModelLoad, 0, PhaseFromSeen}}},
		{"llamacpp-server-old.log", []phase{{PhaseModelLoad, 0, PhaseFromSeen}}},
		// Captured whole from the llama-server that scripts/llamacpp.sh builds.
		{"llamacpp-server-b-node-3.22.1.log", []phase{{PhaseModelLoad, 0, PhaseFromSeen}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "engines", "startlog", c.file))
			if err != nil {
				t.Fatal(err)
			}
			l := NewStartLog(time.Now(), nil)
			l.Write(b)
			got := l.Phases()
			if len(got) != len(c.want) {
				t.Fatalf("%d phases %+v, want %d", len(got), got, len(c.want))
			}
			for i, w := range c.want {
				g := got[i]
				if g.Name != w.name || g.Source != w.source || (w.source == PhaseFromLog && g.Seconds != w.seconds) || g.Line == "" {
					t.Errorf("phase %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestStartLogSeenTiming: llama.cpp's load is the time between reading its two lines,
// however the output was cut into writes; a line split over writes counts when it ends.
func TestStartLogSeenTiming(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	now := t0
	l := NewStartLog(t0, func() time.Time { return now })
	now = t0.Add(2 * time.Second)
	l.Write([]byte("main: HTTP server is listening, hostname: 127.0.0.1, port: 8080\nmain: load"))
	now = t0.Add(3 * time.Second)
	l.Write([]byte("ing model\nsrv    load_model: loading model 'x.gguf'\n"))
	now = t0.Add(10500 * time.Millisecond)
	l.Write([]byte("main: model loaded\r\n"))
	got := l.Phases()
	if len(got) != 1 || got[0].Name != PhaseModelLoad || got[0].Seconds != 7.5 || got[0].At != 10500*time.Millisecond {
		t.Fatalf("%+v", got)
	}
}

// TestStartLogIgnoresUnknown: lines of no known format, malformed numbers and endless
// lines are ignored, never an error, and keep no phase.
func TestStartLogIgnoresUnknown(t *testing.T) {
	t.Parallel()
	l := NewStartLog(time.Now(), nil)
	for _, s := range []string{
		"Loading weights took a while\n",             // no number
		"Model loading took 3 GiB and NaN seconds\n", // not a duration
		"torch.compile takes -1 s in total\n",        // no negative durations
		"main: model loaded\n",                       // an end without its beginning
		"random garbage \x00\x01\xff\n",              // binary
		strings.Repeat("x", 3*maxStartLine),          // no newline, longer than kept
		"\nINFO something else entirely\n",
	} {
		if n, err := l.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if p := l.Phases(); len(p) != 0 {
		t.Errorf("phases %+v from unknown lines", p)
	}
}
