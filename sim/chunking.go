package sim

import "strconv"

// Multi-token chunks. vLLM with speculative decoding, and servers that batch tokens into
// one event, send chunks carrying several tokens; Options.TokensPerChunk makes the
// simulator do the same, so that chunk ITL and per-token ITL differ the way they do
// there. With continuous usage asked for (vLLM's stream_options.continuous_usage_stats)
// every chunk also carries the cumulative usage, from which a client counts the tokens
// of each chunk.

// group holds back tokens until TokensPerChunk of them are ready: it returns how many
// tokens to send now, a multiple of TokensPerChunk, or all that are left once the
// stream ends (fin); 0 to wait for more.
func (c *call) group(n int, fin int32) int {
	k := c.s.o.TokensPerChunk
	if k <= 1 {
		return n
	}
	c.pending += n
	if fin != finNone {
		n, c.pending = c.pending, 0
		return n
	}
	n = c.pending - c.pending%k
	c.pending -= n
	return n
}

// chunks appends n tokens as chunks of TokensPerChunk (the last with fin and what is
// left): a stream that fell behind sends its chunks back to back, as a server does.
func (c *call) chunks(n int, fin int32) {
	if k := c.s.o.TokensPerChunk; k > 1 {
		for ; n > k; n -= k {
			c.chunk(k, finNone)
		}
	}
	c.chunk(n, fin)
}

// appendChunkUsage ends a chunk's JSON with the usage so far, when the client asked for
// continuous usage; the chunk's closing brace is the caller's.
func (c *call) appendChunkUsage(b []byte) []byte {
	if !c.usage || !c.continuousUsage {
		return b
	}
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(c.prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(c.prompt+c.written), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(c.written), 10)
	return append(b, '}')
}
