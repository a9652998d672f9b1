package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBlockHashesAreChained(t *testing.T) {
	t.Parallel()
	a := tokenIDs(words(40))
	b := append([]int{7}, a[1:]...) // the first token differs
	ha, hb := blockHashes(a, 16), blockHashes(b, 16)
	if len(ha) != 2 || len(hb) != 2 {
		t.Fatalf("40 tokens in blocks of 16: %d and %d full blocks, want 2", len(ha), len(hb))
	}
	// Block 2 has the same tokens in both, but a different prefix: a different hash.
	if ha[1] == hb[1] || ha[0] == hb[0] {
		t.Errorf("hashes %x and %x: a block's hash must depend on every token before it", ha, hb)
	}
	if h := blockHashes(a[:35], 16); len(h) != 2 || h[0] != ha[0] || h[1] != ha[1] {
		t.Errorf("a prompt's shorter copy has hashes %x, want the full blocks' %x", h, ha)
	}
}

func TestPrefixCacheEvictsLeastRecentlyReleased(t *testing.T) {
	t.Parallel()
	c := newPrefixCache(true)
	var held []*cblock
	for h := uint64(1); h <= 3; h++ {
		b, ok := c.register(h)
		if !ok {
			t.Fatalf("register %d: refused", h)
		}
		held = append(held, b)
	}
	if _, ok := c.register(2); ok {
		t.Error("a hash cached twice")
	}
	c.releaseBlock(held[1]) // 2 first, then 3; 1 stays referenced
	c.releaseBlock(held[2])
	if c.evictable() != 2 {
		t.Fatalf("evictable %d, want 2", c.evictable())
	}
	c.evict(1)
	if got := c.match([]uint64{1, 2}, 5); len(got) != 1 {
		t.Errorf("after evicting one block, the chain 1,2 matches %d blocks, want 1 (2 was released first)", len(got))
	}
	if got := c.match([]uint64{3}, 5); len(got) != 1 {
		t.Error("block 3, released last, was evicted first")
	}
	if !c.acquire(held[2]) || c.evictable() != 0 {
		t.Errorf("acquiring a free cached block must take it off the LRU (evictable %d)", c.evictable())
	}
	c.reset()
	if len(c.match([]uint64{1}, 5)) != 0 || len(c.blocks) != 0 {
		t.Error("reset left blocks cached")
	}
	if c.releaseBlock(held[0]); c.evictable() != 0 {
		t.Error("a block released after a reset went back to the cache")
	}
}

// The engine's hit counters (vLLM's, in tokens) see a repeated prompt, not a new one,
// and not one sent after POST /reset_prefix_cache.
func TestPrefixCacheHitsOverHTTP(t *testing.T) {
	t.Parallel()
	r, c, ctx := start(t, tinyOpts())
	p := r.Server.Profile()
	send := func(prompt string) {
		t.Helper()
		res := post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: prompt, MaxTokens: 4, IgnoreEOS: true, Stream: true})
		if res.Err != nil || res.OutputTokens() != 4 {
			t.Fatalf("err %v tokens %d", res.Err, res.OutputTokens())
		}
	}
	counters := func() (q, h float64) {
		t.Helper()
		resp, err := c.Get(r.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			name, rest, _ := strings.Cut(sc.Text(), "{")
			_, val, _ := strings.Cut(rest, "} ")
			v, err := strconv.ParseFloat(val, 64)
			switch {
			case err != nil:
			case name == "vllm:prefix_cache_queries_total":
				q = v
			case name == "vllm:prefix_cache_hits_total":
				h = v
			}
		}
		return q, h
	}
	a, b := "A"+words(99)[1:], "B"+words(99)[1:] // 99 tokens each, differing in the first
	send(a)
	if q, h := counters(); q != 99 || h != 0 {
		t.Fatalf("first prompt: queries %v hits %v, want 99 and 0", q, h)
	}
	send(a)
	// 99 tokens: 6 full blocks of 16, all cached (the last token, in block 7, is computed).
	want := float64(6 * p.BlockSize)
	if q, h := counters(); q != 198 || h != want {
		t.Fatalf("same prompt again: queries %v hits %v, want 198 and %v", q, h, want)
	}
	send(b)
	if _, h := counters(); h != want {
		t.Fatalf("a prompt whose first token differs hit %v tokens, want none", h-want)
	}
	// The client has its last chunk before the engine frees the sequence and caches its
	// blocks: a reset in between left them cached (once, under the race suite). Wait,
	// bounded, until nothing runs.
	for deadline := time.Now().Add(5 * time.Second); r.Server.Stats().Running > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	resp, err := c.Post(r.URL+"/reset_prefix_cache", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || r.Server.Stats().CachedBlocks != 0 {
		t.Fatalf("reset: status %d, %d blocks still cached", resp.StatusCode, r.Server.Stats().CachedBlocks)
	}
	send(a)
	if _, h := counters(); h != want {
		t.Fatalf("after a reset the prompt hit %v tokens, want none", h-want)
	}

	// With the cache off nothing hits, and the page says so.
	o := tinyOpts()
	o.NoPrefixCaching = true
	r2, c2, _ := start(t, o)
	for range 2 {
		res := post(ctx, c2, r2.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: a, MaxTokens: 4, IgnoreEOS: true, Stream: true})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if st := r2.Server.Stats(); st.PrefixHits != 0 || st.PrefixQueries != 198 {
		t.Errorf("cache off: hits %d queries %d, want 0 and 198", st.PrefixHits, st.PrefixQueries)
	}
}

// A cached prefix skips prefill: a long prompt sent again reaches its first token sooner.
func TestPrefixCacheSkipsPrefill(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	// 900 prompt tokens, at most 512 a step: two steps of about 91 and 79 ms at
	// slowdown 20, against one step of about 40 ms for the 4 tokens left on a hit.
	o.Faults.Slowdown = 20
	r, c, ctx := start(t, o)
	// Three prompts, each sent twice. A loaded host only adds time, and once under the
	// race suite it added enough to one pair that the cached TTFT was not 25% shorter:
	// the least of each kind is the reading closest to the model.
	var cold, warm []time.Duration
	for i := range 3 {
		body := req{Model: "sim-tiny", Prompt: fmt.Sprintf("%04d", i) + words(899), MaxTokens: 2, IgnoreEOS: true, Stream: true}
		c1 := post(ctx, c, r.URL+"/v1/completions", body)
		c2 := post(ctx, c, r.URL+"/v1/completions", body)
		if c1.Err != nil || c2.Err != nil {
			t.Fatal(c1.Err, c2.Err)
		}
		cold, warm = append(cold, c1.TTFT()), append(warm, c2.TTFT())
	}
	t.Logf("TTFT cold %v, cached %v", cold, warm)
	if w, k := slices.Min(warm), slices.Min(cold); w >= k*3/4 {
		t.Errorf("least TTFT with the prompt cached %v, without %v: want the cached one at least 25%% shorter", w, k)
	}
}

// vLLM sends a chat stream's role chunk with the first output, after prefill: a client
// that took the role chunk for the first token would measure a TTFT of zero.
func TestChatRoleChunkComesWithFirstToken(t *testing.T) {
	t.Parallel()
	r, c, ctx := start(t, tinyOpts())
	r.Server.eng.pause(true)
	b, _ := json.Marshal(req{Model: "sim-tiny", Messages: []ChatMessage{{Role: "user", Content: words(20)}}, MaxTokens: 2, Stream: true})
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/v1/chat/completions", bytes.NewReader(b))
	resp, err := c.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		br := bufio.NewReader(resp.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if l = strings.TrimSpace(l); l != "" {
				lines <- l
			}
		}
	}()
	select {
	case l := <-lines:
		t.Fatalf("the engine has not run a step, yet the stream sent %q", l)
	case <-time.After(300 * time.Millisecond):
	}
	r.Server.eng.pause(false)
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	if len(got) < 3 || !strings.Contains(got[0], `"role":"assistant"`) || !strings.Contains(got[1], `"content":"`) || strings.Contains(got[1], `"role"`) {
		t.Fatalf("stream after the step: %q, want the role chunk, then content", got)
	}
}

// Allocation takes never-cached free blocks first, then evicts cached ones from a
// prompt's tail: the head of the chain stays usable.
func TestPrefixCacheEvictionUnderPressure(t *testing.T) {
	t.Parallel()
	o := tinyOpts()
	o.Faults.KVBlocks = 16 // 256 tokens
	r, c, ctx := start(t, o)
	send := func(prompt string) {
		t.Helper()
		res := post(ctx, c, r.URL+"/v1/completions", req{Model: "sim-tiny", Prompt: prompt, MaxTokens: 2, IgnoreEOS: true, Stream: true})
		if res.Err != nil || res.OutputTokens() != 2 {
			t.Fatalf("err %v tokens %d", res.Err, res.OutputTokens())
		}
	}
	a, b := "A"+words(100)[1:], "B"+words(200)[1:]
	send(a) // 6 full blocks cached, 7 blocks used
	if st := r.Server.Stats(); st.CachedBlocks != 6 || st.UsedBlocks != 0 {
		t.Fatalf("after A: %d blocks cached, %d used; want 6 cached and none in use", st.CachedBlocks, st.UsedBlocks)
	}
	// B needs ⌈201/16⌉ = 13 blocks: the 10 never-cached ones, then 3 of A's, its last.
	send(b)
	before := r.Server.Stats().PrefixHits
	send(a)
	if got := r.Server.Stats().PrefixHits - before; got != 3*16 {
		t.Errorf("A after B hit %d tokens, want 48: A's first 3 blocks survive, its last 3 were evicted", got)
	}
}
