package workload

import (
	"math"
	"slices"
)

// zipfWeights returns the popularity of d documents: document j (from 0) with weight
// 1/(j+1)^s, normalized to sum to 1.
func zipfWeights(d int, s float64) []float64 {
	w := make([]float64, d)
	total := 0.0
	for j := range w {
		w[j] = math.Pow(float64(j+1), -s)
		total += w[j]
	}
	for j := range w {
		w[j] /= total
	}
	return w
}

// ragDocs returns the documents of request (phase, i): DocsPerRequest distinct ones drawn
// by popularity, in ascending order (most popular first), so that requests that drew
// the same leading documents share them as a prompt prefix.
func (g *Generator) ragDocs(phase uint64, i int) []int {
	pc := g.w.PrefixCache
	r := newRNG(g.w.Seed, streamRAG, phase, uint64(i))
	cum := g.impl.docCum
	docs := make([]int, 0, pc.DocsPerRequest)
	for len(docs) < pc.DocsPerRequest {
		// Draw without replacement: redraw a document already taken. A heavily skewed
		// pool can make that slow, so past a bound the least popular free one is taken.
		j := -1
		for range 64 {
			x := r.float64()
			k, _ := slices.BinarySearch(cum, x)
			k = min(k, len(cum)-1)
			if !slices.Contains(docs, k) {
				j = k
				break
			}
		}
		if j < 0 {
			for k := len(cum) - 1; k >= 0; k-- {
				if !slices.Contains(docs, k) {
					j = k
					break
				}
			}
		}
		docs = append(docs, j)
	}
	slices.Sort(docs)
	return docs
}

// docText is document j of the pool: about DocTokens tokens of corpus and a space, from
// (seed, j) and the calibration only.
func (g *Generator) docText(j int) string {
	r := newRNG(g.w.Seed, streamDoc, uint64(j))
	return corpusText(r.intN(len(corpus)), g.charsFor(g.w.PrefixCache.DocTokens)) + " "
}

// ragPrefix is the opening of a rag request: the run salt, then its documents.
func (g *Generator) ragPrefix(phase uint64, i int) string {
	var saltBuf [32]byte
	b := appendRunSalt(saltBuf[:0], g.w.Seed, g.run)
	out := string(b)
	for _, j := range g.ragDocs(phase, i) {
		out += g.docText(j)
	}
	return out
}
