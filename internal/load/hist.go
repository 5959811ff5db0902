package load

import (
	"math/bits"
	"time"
)

// Latencies go into a log-linear histogram (64 steps per power of two, so
// under 1.6% error) instead of a slice: recording is one increment, with no
// allocation and no memory growth however long the run.
const (
	subBits    = 6
	subCount   = 1 << subBits
	histLinear = 2 * subCount // values below this are exact
	histSize   = histLinear + 34*subCount
)

type histogram struct {
	counts [histSize]uint32
	n      int64
	sum    int64
	max    int64
}

func bucketOf(v int64) int {
	if v < histLinear {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits - 1 // v>>e is in [64, 128)
	i := histLinear + (e-1)*subCount + int(v>>e) - subCount
	if i >= histSize {
		return histSize - 1
	}
	return i
}

// upperOf is the largest value that lands in bucket i.
func upperOf(i int) int64 {
	if i < histLinear {
		return int64(i)
	}
	e := (i-histLinear)/subCount + 1
	m := int64((i-histLinear)%subCount + subCount)
	return (m+1)<<e - 1
}

func (h *histogram) record(d time.Duration) {
	v := int64(d)
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += v
	if v > h.max {
		h.max = v
	}
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding the q-th value,
// never more than the exact maximum.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= rank {
			return time.Duration(min(upperOf(i), h.max))
		}
	}
	return time.Duration(h.max)
}
