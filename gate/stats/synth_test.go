package stats

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// synthSpec describes a synthetic run shaped like a served workload: each request has a
// lognormal number of inter-token gaps (median ~170, mostly 100–300) and a scale factor
// shared by all its gaps (its batch, its prompt length, its moment of the run), times
// per-gap lognormal noise. The per-request factor is what makes gaps of one request
// correlated.
type synthSpec struct {
	requests  int
	gapMedian float64 // median number of gaps per request; 0 means 170
	gapScale  float64 // multiplies every gap: 1.2 is a 20% ITL regression; 0 means 1
	ttftScale float64 // 0 means 1
	pGood     float64 // chance a request succeeds and meets every SLO; 0 means 0.97
}

type synthRun struct {
	gaps   [][]float64 // ms
	ttft   []float64   // ms
	good   []bool
	window float64 // s
}

func synth(seed uint64, s synthSpec) synthRun {
	if s.gapMedian == 0 {
		s.gapMedian = 170
	}
	if s.gapScale == 0 {
		s.gapScale = 1
	}
	if s.ttftScale == 0 {
		s.ttftScale = 1
	}
	if s.pGood == 0 {
		s.pGood = 0.97
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	run := synthRun{
		gaps: make([][]float64, s.requests),
		ttft: make([]float64, s.requests),
		good: make([]bool, s.requests),
		// A pinned workload at 10 requests/s: the same schedule, so the same window, on
		// both sides.
		window: float64(s.requests) / 10,
	}
	for i := range s.requests {
		k := int(math.Round(s.gapMedian * math.Exp(0.3*r.NormFloat64())))
		k = min(max(k, 10), 10*int(s.gapMedian))
		scale := 20 * s.gapScale * math.Exp(0.3*r.NormFloat64())
		g := make([]float64, k)
		for j := range g {
			g[j] = scale * math.Exp(0.3*r.NormFloat64())
		}
		run.gaps[i] = g
		run.ttft[i] = 150 * s.ttftScale * math.Exp(0.5*r.NormFloat64())
		run.good[i] = r.Float64() < s.pGood
	}
	return run
}

// parallel runs f(0..n-1) on all cores; each call must depend only on its index, so the
// results do not depend on scheduling.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
