package result

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The histogram geometry of every latency metric: microseconds from 1 µs to one hour at 3
// significant figures (every value below 2.048 ms is exact; above, a bucket is at most
// 0.1% wide). Percentiles of two runs are only comparable with the same geometry, so it is
// fixed here and nowhere else.
const (
	HistLowestUS  int64 = 1
	HistHighestUS int64 = int64(time.Hour / time.Microsecond)
	HistSigFigs         = 3
)

// NewHistogram returns an empty histogram with the record's geometry.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistLowestUS, HistHighestUS, HistSigFigs)
}

// Histogram records values (microseconds) into a new histogram with the record's
// geometry. Values outside 0 … one hour are clamped to the nearest end rather than
// dropped: a dropped outlier would flatter the tail.
func Histogram(values []int64) *hdrhistogram.Histogram {
	h := NewHistogram()
	for _, v := range values {
		v, _ = clampUS(v)
		_ = h.RecordValue(v) // cannot fail: v is in range
	}
	return h
}

// clampUS brings v into the histogram's range and says whether it had to.
func clampUS(v int64) (int64, bool) {
	switch {
	case v < 0:
		return 0, true
	case v > HistHighestUS:
		return HistHighestUS, true
	}
	return v, false
}

// Distribution accumulates one latency metric in microseconds: an HdrHistogram for the
// percentiles, and the exact count, sum and maximum beside it, so that the mean and the
// max are exact and no percentile is ever reported above the max (a histogram reports the
// top of a bucket, up to 0.1% above the values in it).
type Distribution struct {
	h       *hdrhistogram.Histogram
	n       int64
	sum     int64
	max     int64
	clamped int64
}

// NewDistribution returns an empty distribution.
func NewDistribution() *Distribution {
	return &Distribution{h: NewHistogram()}
}

// Record adds one value in microseconds; values outside 0 … one hour are clamped and
// counted.
func (d *Distribution) Record(us int64) {
	us, clamped := clampUS(us)
	if clamped {
		d.clamped++
	}
	_ = d.h.RecordValue(us) // cannot fail: us is in range
	d.n++
	d.sum += us
	d.max = max(d.max, us)
}

// RecordN adds the value us n times (n ≥ 1), as Record does.
func (d *Distribution) RecordN(us, n int64) {
	us, clamped := clampUS(us)
	if clamped {
		d.clamped += n
	}
	_ = d.h.RecordValues(us, n) // cannot fail: us is in range
	d.n += n
	d.sum += us * n
	d.max = max(d.max, us)
}

// Merge adds every value of o to d (losslessly: same geometry).
func (d *Distribution) Merge(o *Distribution) {
	d.h.Merge(o.h)
	d.n += o.n
	d.sum += o.sum
	d.max = max(d.max, o.max)
	d.clamped += o.clamped
}

// Count is the number of values recorded.
func (d *Distribution) Count() int64 { return d.n }

// ValueAtUS returns the pth percentile (0 < p ≤ 100) in microseconds, never above the
// max; 0 when empty.
func (d *Distribution) ValueAtUS(p float64) int64 {
	if d.n == 0 {
		return 0
	}
	return min(d.h.ValueAtPercentile(p), d.max)
}

// Percentiles reports the distribution in milliseconds. An empty distribution is all
// zeros (never NaN: JSON cannot encode it).
func (d *Distribution) Percentiles() Percentiles {
	if d.n == 0 {
		return Percentiles{}
	}
	v := d.h.ValueAtPercentilesSlice([]float64{50, 90, 95, 99, 99.9})
	at := func(i int) float64 { return usToMS(min(v[i], d.max)) }
	return Percentiles{
		P50:     at(0),
		P90:     at(1),
		P95:     at(2),
		P99:     at(3),
		P999:    at(4),
		Max:     usToMS(d.max),
		Mean:    float64(d.sum) / float64(d.n) / 1000,
		Count:   d.n,
		Clamped: d.clamped,
	}
}

func usToMS(us int64) float64 { return float64(us) / 1000 }

// rank is the 1-based rank of the pth percentile among n sorted values, by the rule
// HdrHistogram uses (the nearest rank: p/100·n rounded half up, at least 1, at most n).
// Exact percentiles over small sets (one request's gaps, token counts) use it too, so
// that they agree with the histogram's on the same values.
func rank(p float64, n int) int {
	r := int((p/100)*float64(n) + 0.5)
	return min(max(r, 1), n)
}

// percentileSorted returns the pth percentile of sorted values (0 when empty).
func percentileSorted[T int | int64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[rank(p, len(sorted))-1]
}
