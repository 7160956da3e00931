package observe

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram counts durations in fixed log-linear buckets: exact below
// 16 ns, then eight buckets per power of two, so a quantile read from it
// is at most 12.5% above the true value. Recording is two atomic adds
// and a compare-and-swap loop that rarely loops; reading never stops a
// writer. It is a few kilobytes, whatever it counts.
//
// Why not a library: HdrHistogram-go and the like would be the first
// dependency of the library's module, which keeps to three; this is the
// forty lines a fixed-precision, lock-free, mergeable histogram needs.
type histogram struct {
	n       atomic.Uint64
	max     atomic.Int64
	buckets [nBuckets]atomic.Uint64
}

const (
	subBits  = 3 // 8 buckets per power of two
	nBuckets = (64-subBits)<<subBits + 1<<subBits
)

// bucketOf returns v's bucket: v itself below 16, then (p-2)*8 plus the
// three bits after v's leading one, p being that one's position.
func bucketOf(v uint64) int {
	if v < 1<<(subBits+1) {
		return int(v)
	}
	p := bits.Len64(v) - 1
	top := v >> (p - subBits) // 8..15
	return (p-subBits+1)<<subBits + int(top-1<<subBits)
}

// upperOf returns the largest value bucket i holds.
func upperOf(i int) uint64 {
	if i < 1<<(subBits+1) {
		return uint64(i)
	}
	p := i>>subBits + subBits - 1
	top := uint64(i&(1<<subBits-1) + 1<<subBits)
	return (top+1)<<(p-subBits) - 1
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.buckets[bucketOf(uint64(d))].Add(1)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// counts is a copy of a histogram, read bucket by bucket while writers
// go on: a snapshot of a moment only approximately, as any unstopped
// reading is.
type counts struct {
	n   uint64
	max time.Duration
	b   [nBuckets]uint64
}

func (h *histogram) read(into *counts) {
	into.n += h.n.Load()
	if m := time.Duration(h.max.Load()); m > into.max {
		into.max = m
	}
	for i := range h.buckets {
		into.b[i] += h.buckets[i].Load()
	}
}

// quantile returns the upper bound of the bucket holding the q-th
// quantile (0 < q <= 1), no more than the largest value recorded; zero if
// nothing was.
func (c *counts) quantile(q float64) time.Duration {
	var total uint64
	for _, v := range c.b {
		total += v
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, v := range c.b {
		seen += v
		if seen >= rank {
			if u := time.Duration(upperOf(i)); u < c.max {
				return u
			}
			return c.max
		}
	}
	return c.max
}

// Durations summarises a histogram of durations.
// Quantiles are at most 12.5% above the true value (the bound of the
// bucket holding it), and never above Max. In JSON the durations are
// integers of nanoseconds.
type Durations struct {
	Count uint64        `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

func (c *counts) durations() Durations {
	return Durations{Count: c.n, P50: c.quantile(0.50), P99: c.quantile(0.99), Max: c.max}
}
