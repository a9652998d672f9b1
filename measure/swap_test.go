package measure

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

func swapFile(t *testing.T, swap string) *workload.File {
	t.Helper()
	src := strings.Replace(prefixConfig("cold"), "target: {api: completions, engine: auto}", "target: {api: completions, engine: auto, swap: "+swap+"}", 1)
	f, err := workload.Parse("slogate.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSwapperChecksTheWokenEngine: an engine that answers with another version after its
// wake (a different server behind the same URL) fails the swap: the block would measure
// an engine nobody identified.
func TestSwapperChecksTheWokenEngine(t *testing.T) {
	t.Parallel()
	sw := sim.Swap{SleepMode: true, DevMode: true}
	before := startSim(t, sim.Options{Seed: 1, Version: "1.0", Swap: sw})
	after := startSim(t, sim.Options{Seed: 1, Version: "2.0", Swap: sw})
	other := startSim(t, sim.Options{Seed: 1})
	proxy := func(u string) *httputil.ReverseProxy {
		pu, _ := url.Parse(u)
		return httputil.NewSingleHostReverseProxy(pu)
	}
	pb, pa := proxy(before), proxy(after)
	var woke atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if woke.Load() {
			pa.ServeHTTP(w, r)
			return
		}
		pb.ServeHTTP(w, r)
		if r.URL.Path == "/wake_up" {
			woke.Store(true)
		}
	}))
	t.Cleanup(front.Close)

	r := testRunner(nil)
	sides := []ABSide{
		{Name: "baseline", File: swapFile(t, "{mode: sleep}"), Override: front.URL},
		{Name: "candidate", File: swapFile(t, "{mode: resident}"), Override: other},
	}
	s, err := r.NewSwapper(context.Background(), sides, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Bring(context.Background(), 1, true); err != nil {
		t.Fatalf("bringing the resident side: %v", err)
	}
	_, err = s.Bring(context.Background(), 0, true)
	if err == nil || !strings.Contains(err.Error(), `is not the one put aside: version "2.0", was "1.0"`) {
		t.Fatalf("a different engine woke, and the swap said %v", err)
	}
}

// TestSwapperModes: the mode of each kind of side, and which ones the swapper brings up.
func TestSwapperModes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, target string
		mode         string
		managed      bool
	}{
		// Today's recipe: a start per block, which the caller does.
		{"start without swap restarts", "target: {api: completions, start: {command: [x]}}", workload.SwapRestart, false},
		// An engine someone else runs is left up: resident.
		{"neither is resident", "target: {api: completions}", workload.SwapResident, true},
		// Declared swaps win over target.start, which then runs once for the job.
		{"swap with start", "target: {api: completions, start: {command: [x]}, swap: {mode: sleep}}", workload.SwapSleep, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(prefixConfig("cold"), "target: {api: completions, engine: auto}", c.target, 1)
			f, err := workload.Parse("slogate.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			s := ABSide{File: f}
			if s.Mode() != c.mode || s.Managed() != c.managed {
				t.Errorf("mode %s managed %v, want %s %v", s.Mode(), s.Managed(), c.mode, c.managed)
			}
		})
	}
}
