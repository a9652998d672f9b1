package engine

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLlamaCppRealIdentity reads a real llama-server (scripts/llamacpp-test.sh starts one
// with -np 4 and one without -np, both -c 2048): the adapter must find the engine, one
// slot's context, the slots, a KV capacity of what the server really holds, and the
// metrics this build exports. Skipped unless SLOGATE_LLAMACPP_URL is set.
func TestLlamaCppRealIdentity(t *testing.T) {
	t.Parallel()
	url := os.Getenv("SLOGATE_LLAMACPP_URL")
	if url == "" {
		t.Skip("SLOGATE_LLAMACPP_URL is not set: no llama-server to test against (scripts/llamacpp-test.sh starts one)")
	}
	ctxTokens, parallel := 2048, 0
	if v := os.Getenv("SLOGATE_LLAMACPP_CTX"); v != "" {
		ctxTokens, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("SLOGATE_LLAMACPP_PARALLEL"); v != "" && v != "auto" {
		parallel, _ = strconv.Atoi(v)
	}
	slotCtx, unified := ctxTokens, true
	if parallel > 0 {
		slotCtx, unified = ctxTokens/parallel, false
	}
	id, err := Identify(context.Background(), IdentifyOptions{BaseURL: url, KVUnified: &unified})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("identity: %+v", *id)
	if id.Engine != EngineLlamaCpp || !strings.Contains(id.Version, "de3ff81") {
		t.Errorf("engine %q version %q, want llamacpp build de3ff81", id.Engine, id.Version)
	}
	if id.Slots != 4 || id.MaxContext != slotCtx || id.KVCapacityTokens != int64(ctxTokens) {
		t.Errorf("slots %d, context %d, KV capacity %d (%s); want 4, %d per slot, %d in all", id.Slots, id.MaxContext, id.KVCapacityTokens, id.KVSource, slotCtx, ctxTokens)
	}
	// What the server's /slots says of each slot's context agrees with /props.
	var slots []struct {
		NCtx int `json:"n_ctx"`
	}
	p := &prober{base: baseURL(url), http: http.DefaultClient, timeout: DefaultProbeTimeout}
	if !p.getJSON(context.Background(), "/slots", &slots) || len(slots) != 4 {
		t.Fatalf("/slots: %+v", slots)
	}
	for i, sl := range slots {
		if sl.NCtx != slotCtx {
			t.Errorf("slot %d: n_ctx %d, want %d", i, sl.NCtx, slotCtx)
		}
	}
	s := &Scraper{URL: baseURL(url) + id.Metrics.Path, Set: id.Metrics}
	snap, err := s.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !snap.PromptTokens.OK || !snap.PromptTokensCached.OK || !snap.OutputTokens.OK || !snap.QueueDepth.OK || !snap.Running.OK || !snap.PrefixQueries.OK {
		t.Errorf("snapshot %+v: want llama.cpp's token counters and gauges", snap)
	}
	if snap.KVUsage.OK || !hasNote(id.Notes, "exports no KV usage") {
		t.Errorf("KV usage %+v, notes %q: this build has no KV-usage gauge, and the identity must say so", snap.KVUsage, id.Notes)
	}
}
