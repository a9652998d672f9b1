package engine

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/slogate/slogate/internal/waittest"
)

// TestMain lets the test binary play an engine that Launch starts: with
// SLOGATE_TEST_LOADING_ADDR set it serves there as llama.cpp's llama-server does while
// it loads its model: /v1/models lists the model (the alias it was given) at once, and
// /health answers 503 for SLOGATE_TEST_LOADING_FOR, then 200.
func TestMain(m *testing.M) {
	if addr := os.Getenv("SLOGATE_TEST_LOADING_ADDR"); addr != "" {
		loading, _ := time.ParseDuration(os.Getenv("SLOGATE_TEST_LOADING_FOR"))
		start := time.Now()
		mux := http.NewServeMux()
		mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
			if time.Since(start) < loading {
				http.Error(w, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(`{"status":"ok"}`))
		})
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"object":"list","data":[{"id":"stories260k","object":"model"}]}`))
		})
		waittest.DieWithParent()
		if l, err := waittest.Listen(addr); err == nil {
			_ = http.Serve(l, mux)
		}
		os.Exit(1)
	}
	waittest.Main(m, 8, 3*time.Minute) // the package takes under 10 s
}

// TestLaunchWaitsForHealth: an engine that lists its model while /health still answers
// 503 (llama.cpp loading) is not ready until /health answers 200: the start records
// /health's time, and ready is that, not the first listing of the model.
func TestLaunchWaitsForHealth(t *testing.T) {
	t.Parallel()
	addr := waittest.HoldPort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const loading = 400 * time.Millisecond
	p, err := Launch(context.Background(), LaunchSpec{
		Command: []string{self}, BaseURL: "http://" + addr, ReadyTimeout: time.Minute,
		Env: []string{"SLOGATE_TEST_LOADING_ADDR=" + addr, "SLOGATE_TEST_LOADING_FOR=" + loading.String()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	st := p.Startup
	if st.Health < loading || st.Model < st.Health || st.Ready() != st.Health || p.StartDuration != st.Health {
		t.Errorf("port %v, /health %v, model %v, ready %v: want ready at /health's 200, after the %v of loading", st.Port, st.Health, st.Model, st.Ready(), loading)
	}
}
