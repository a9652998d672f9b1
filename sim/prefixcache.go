package sim

import "container/list"

// The simulator's prefix cache follows vLLM's automatic prefix caching:
//
//   - A full KV block of a prompt is identified by a chained hash: the hash of the
//     previous block's hash and this block's token ids, so a block hits only when the
//     whole prompt up to and including it is the same.
//   - Once a sequence has computed a full prompt block, the block is registered under its
//     hash (the first sequence to compute a hash registers it; a concurrent duplicate
//     stays private). Only prompt blocks are cached, never generated ones.
//   - A new (or re-admitted) sequence takes the longest run of cached blocks from the
//     start of its prompt, at most all but the last prompt token (vLLM recomputes the
//     last token to sample from it): those tokens skip prefill.
//   - A cached block that no sequence references stays cached, counted as free; when a
//     block must be allocated, never-cached free blocks go first, then the least recently
//     released cached block is evicted.
//   - Queries and hits count tokens, as vLLM's vllm:prefix_cache_queries_total and
//     vllm:prefix_cache_hits_total do: each admission queries its context length and hits
//     the tokens it took from the cache.
//   - POST /reset_prefix_cache empties the cache (blocks in use stay allocated, but no
//     longer cached); the counters keep counting.

// cblock is a cached KV block.
type cblock struct {
	hash  uint64
	ref   int           // sequences holding it
	inMap bool          // still registered under hash (false after eviction or reset)
	lru   *list.Element // in prefixCache.lru while ref == 0 and inMap
}

// prefixCache is owned by the scheduler's loop.
type prefixCache struct {
	on     bool
	blocks map[uint64]*cblock
	lru    list.List // unreferenced cached blocks, least recently released first
}

func newPrefixCache(on bool) prefixCache {
	return prefixCache{on: on, blocks: map[uint64]*cblock{}}
}

// blockHashes returns the chained hashes of the full blocks of ids.
func blockHashes(ids []int, blockSize int) []uint64 {
	n := len(ids) / blockSize
	if n == 0 {
		return nil
	}
	out := make([]uint64, n)
	h := uint64(0x6a09e667f3bcc909)
	for k := range n {
		for _, id := range ids[k*blockSize : (k+1)*blockSize] {
			h = mix64(h ^ uint64(id))
		}
		h = mix64(h ^ uint64(k+1))
		out[k] = h
	}
	return out
}

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// match returns the cached blocks that start hashes, at most max of them.
func (c *prefixCache) match(hashes []uint64, max int) []*cblock {
	if !c.on {
		return nil
	}
	var out []*cblock
	for _, h := range hashes[:min(len(hashes), max)] {
		b, ok := c.blocks[h]
		if !ok {
			break
		}
		out = append(out, b)
	}
	return out
}

// acquire takes a reference on b; it reports whether b was free (unreferenced).
func (c *prefixCache) acquire(b *cblock) (wasFree bool) {
	b.ref++
	if b.ref == 1 && b.lru != nil {
		c.lru.Remove(b.lru)
		b.lru = nil
	}
	return b.ref == 1
}

// releaseBlock drops a reference; it reports whether b is now free.
func (c *prefixCache) releaseBlock(b *cblock) (nowFree bool) {
	b.ref--
	if b.ref > 0 {
		return false
	}
	if b.inMap {
		b.lru = c.lru.PushBack(b)
	}
	return true
}

// register caches a computed block of a sequence under hash; false when the hash is
// cached already (the block stays private to the sequence).
func (c *prefixCache) register(hash uint64) (*cblock, bool) {
	if !c.on {
		return nil, false
	}
	if _, ok := c.blocks[hash]; ok {
		return nil, false
	}
	b := &cblock{hash: hash, ref: 1, inMap: true}
	c.blocks[hash] = b
	return b, true
}

// evictable is the number of free blocks that hold cached content.
func (c *prefixCache) evictable() int { return c.lru.Len() }

// evict drops the n least recently released unreferenced cached blocks.
func (c *prefixCache) evict(n int) {
	for ; n > 0 && c.lru.Len() > 0; n-- {
		b := c.lru.Remove(c.lru.Front()).(*cblock)
		b.lru = nil
		b.inMap = false
		delete(c.blocks, b.hash)
	}
}

// reset forgets every cached block; blocks in use stay with their sequences.
func (c *prefixCache) reset() {
	for _, b := range c.blocks {
		b.inMap = false
		b.lru = nil
	}
	c.lru.Init()
	clear(c.blocks)
}
