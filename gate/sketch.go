package gate

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// The ITL sketch: how a baseline keeps every inter-token gap of every request without
// keeping every gap.
//
// A gap of v µs falls in bucket k = 1+⌊log_γ v⌋, which covers [γ^(k−1), γ^k) µs (bucket
// 0 holds gaps of 0 µs), and is read back as the bucket's geometric middle, γ^(k−½). With γ = 1.02 every gap read back is
// within ±0.995% of the gap measured, and since the mapping is monotonic, so is every
// order statistic: a pooled p99 from the sketch is within 1% of the exact one. The
// candidate's gaps go through the same mapping before they are compared, so both sides
// carry the same rounding and an unchanged run compares at a ratio of exactly 1.
//
// One request's gaps are stored as a sparse histogram of their buckets, in bucket
// order: the first bucket as a uvarint, then a stream of uvarints, each either a count
// (2c: c gaps in the current bucket, then move to the next) or a skip (2(z−1)+1: z empty
// buckets). Gaps of one request cluster around its decode step, so most counts fit in a
// byte and skips are rare: 499 jittered gaps take about 100 bytes, base64'd without
// padding. The order of a request's gaps is not kept: pooled percentiles, means and
// maxima do not depend on it.

// SketchGamma is the ratio between the bounds of a sketch bucket.
const SketchGamma = 1.02

// SketchResolution is the largest relative error of a gap read back from a sketch.
var SketchResolution = math.Sqrt(SketchGamma) - 1

// SketchEncoding names the encoding in baseline files, so that a reader can tell what
// the strings hold.
const SketchEncoding = "log-bucket/v1: bucket 0 = 0 µs, bucket k ≥ 1 = [γ^(k-1), γ^k) µs read as γ^(k-0.5); per request base64 (std, no padding) of uvarint(first bucket), then uvarint tokens 2c (c gaps, next bucket) or 2(z-1)+1 (skip z empty buckets)"

// maxBucket bounds bucket indices: γ^2400 µs is far beyond any gap (one hour is bucket
// 1113), so a larger index can only come from a corrupt file.
const maxBucket = 2400

// maxGapsPerRequest bounds what a decoded sketch may expand to, so that a corrupt count
// cannot ask for gigabytes.
const maxGapsPerRequest = 1 << 22

var lnGamma = math.Log(SketchGamma)

// bucketValue[k] is the value a gap in bucket k reads back as, in µs.
var bucketValue = func() []float64 {
	v := make([]float64, maxBucket+1)
	for k := 1; k <= maxBucket; k++ {
		v[k] = math.Pow(SketchGamma, float64(k)-0.5)
	}
	return v
}()

// bucketOf is the sketch bucket of a gap of us microseconds.
func bucketOf(us int64) int32 {
	if us <= 0 {
		return 0
	}
	k := int32(math.Floor(math.Log(float64(us))/lnGamma)) + 1
	return min(k, maxBucket)
}

// quantizeGaps maps gaps (µs) to the values the sketch reads back, in ascending order.
func quantizeGaps(gaps []int64) []float64 {
	if len(gaps) == 0 {
		return nil
	}
	b := make([]int32, len(gaps))
	lo, hi := int32(maxBucket), int32(0)
	for i, g := range gaps {
		b[i] = bucketOf(g)
		lo, hi = min(lo, b[i]), max(hi, b[i])
	}
	out := make([]float64, len(b))
	if span := int(hi-lo) + 1; span > 4*len(b) {
		slices.Sort(b)
		for i, k := range b {
			out[i] = bucketValue[k]
		}
		return out
	}
	// A request's gaps fill a few neighbouring buckets: counted, not sorted.
	counts := make([]int32, int(hi-lo)+1)
	for _, k := range b {
		counts[k-lo]++
	}
	i := 0
	for k, c := range counts {
		v := bucketValue[lo+int32(k)]
		for range c {
			out[i] = v
			i++
		}
	}
	return out
}

// encodeSketch encodes gaps (µs) as one request's sketch string; "" for no gaps.
func encodeSketch(gaps []int64) string {
	if len(gaps) == 0 {
		return ""
	}
	b := make([]int32, len(gaps))
	for i, g := range gaps {
		b[i] = bucketOf(g)
	}
	slices.Sort(b)
	buf := binary.AppendUvarint(make([]byte, 0, 2*len(gaps)/3+8), uint64(b[0]))
	cur := b[0]
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && b[j] == b[i] {
			j++
		}
		if z := b[i] - cur; z > 0 {
			buf = binary.AppendUvarint(buf, uint64(z-1)<<1|1)
		}
		buf = binary.AppendUvarint(buf, uint64(j-i)<<1)
		cur = b[i] + 1
		i = j
	}
	return base64.RawStdEncoding.EncodeToString(buf)
}

var errSketch = errors.New("corrupt ITL sketch")

// decodeSketch reads one request's sketch back as ascending gap values (µs).
func decodeSketch(s string) ([]float64, error) {
	if s == "" {
		return nil, nil
	}
	buf, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSketch, err)
	}
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(buf)
		if n <= 0 {
			return 0, false
		}
		buf = buf[n:]
		return v, true
	}
	first, ok := next()
	if !ok || first > maxBucket {
		return nil, fmt.Errorf("%w: bad first bucket", errSketch)
	}
	cur := first
	var out []float64
	for len(buf) > 0 {
		t, ok := next()
		if !ok {
			return nil, fmt.Errorf("%w: bad varint", errSketch)
		}
		if t&1 == 1 {
			cur += t>>1 + 1
			if cur > maxBucket {
				return nil, fmt.Errorf("%w: bucket beyond %d", errSketch, maxBucket)
			}
			continue
		}
		c := t >> 1
		if c == 0 || cur > maxBucket || uint64(len(out))+c > maxGapsPerRequest {
			return nil, fmt.Errorf("%w: bad count", errSketch)
		}
		v := bucketValue[cur]
		for range c {
			out = append(out, v)
		}
		cur++
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no gaps", errSketch)
	}
	return out, nil
}
