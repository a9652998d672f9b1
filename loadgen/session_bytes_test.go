package loadgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slogate/slogate/engine"
	"github.com/slogate/slogate/workload"
)

// saltRE matches the salt that opens a session (workload.appendSalt).
var saltRE = regexp.MustCompile(`\[[0-9a-f]{8} r[0-9]{6} slogate\] `)

// recordingEngine answers every chat request with a few words drawn from the hash of
// its body, the salt aside (as a deterministic engine answers the same history the same
// way), and keeps every body.
type recordingEngine struct {
	mu     sync.Mutex
	bodies []string
}

func (e *recordingEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.bodies = append(e.bodies, string(b))
	e.mu.Unlock()
	sum := sha256.Sum256([]byte(saltRE.ReplaceAllString(string(b), "[salt] ")))
	w.Header().Set("Content-Type", "text/event-stream")
	for k := range 3 {
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\" w%s\"}}]}\n\n", hex.EncodeToString(sum[2*k:2*k+2]))
	}
	fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
}

// sessionBodies runs the first workload of file (its sessions' timing shortened: times
// change no byte) with run id runID and returns every request body sent, sorted.
func sessionBodies(t *testing.T, file, runID string) []string {
	t.Helper()
	f, err := workload.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	w := &f.Workloads[0]
	w.Arrival = workload.Arrival{Process: workload.ArrivalConstant, Rate: 500}
	w.Sessions.Count = min(w.Sessions.Count, 12)
	w.Sessions.ThinkTime = workload.ThinkTime{}
	g, err := workload.NewGenerator(w)
	if err != nil {
		t.Fatal(err)
	}
	g.SetRunID(runID)
	rec := &recordingEngine{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	epoch := time.Now()
	cfg := Config{
		Streamer: engine.NewClient(engine.ClientOptions{BaseURL: srv.URL, Model: "m", Epoch: epoch}),
		Source:   g, Sessions: g, Epoch: epoch, API: engine.APIChat, Model: "m", Timeout: 10 * time.Second,
		IgnoreEOS: true,
	}
	out := run(t, cfg)
	for _, q := range out.Measured {
		if q.Error != "" {
			t.Fatalf("session %d turn %d: %s %s", q.Session, q.Turn, q.Error, q.ErrorDetail)
		}
	}
	if len(rec.bodies) != len(out.Measured) || len(out.Measured) <= w.Sessions.Count {
		t.Fatalf("%d bodies, %d turns of %d sessions", len(rec.bodies), len(out.Measured), w.Sessions.Count)
	}
	slices.Sort(rec.bodies)
	return rec.bodies
}

// The same file and seed send the same requests byte for byte, every turn of every
// session with its history; another run id changes the salts only.
func TestSessionRequestsByteForByte(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"../testdata/config/valid_sessions.yaml", "../testdata/config/valid_sharegpt_sessions.yaml"} {
		a, b, c := sessionBodies(t, file, "run-a"), sessionBodies(t, file, "run-a"), sessionBodies(t, file, "run-b")
		if !slices.Equal(a, b) {
			t.Errorf("%s: two runs with one run id sent different requests", file)
		}
		strip := func(bs []string) []string {
			out := make([]string, len(bs))
			for i, s := range bs {
				out[i] = saltRE.ReplaceAllString(s, "[salt] ")
			}
			slices.Sort(out)
			return out
		}
		if slices.Equal(a, c) || !slices.Equal(strip(a), strip(c)) {
			t.Errorf("%s: another run id must change the salts and nothing else", file)
		}
		// Later turns carry their session's earlier turns, answers included.
		grew := false
		for _, s := range a {
			grew = grew || regexp.MustCompile(`"role":"assistant","content":" w[0-9a-f]{4} w`).MatchString(s)
		}
		if !grew {
			t.Errorf("%s: no request carried an earlier answer", file)
		}
	}
}
