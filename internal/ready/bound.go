package ready

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// A bound on elapsed time from the processor's counter.
//
// A deadline check must know that the clock has not reached a time, not
// what it reads: a reading of the counter (ticks), 13 ns on an AMD EPYC
// VM where the runtime's clock takes 34 ns (38 through time.Since), and
// the counter's rate, give an upper bound of the time elapsed since an
// earlier reading. Stamp reads the counter; Elapsed converts what has
// passed since into ns, at a rate a hundredth above the one measured, so
// that a rate measured a little low, or the clock slewed faster than
// the counter (NTP adjusts it by at most 0.05%), still leaves an upper
// bound. The rate is measured once, between two readings of both the
// counter and the runtime's clock at least calibrateNs apart, each pair
// read within pairTicks (no preemption between them).
//
// Only on amd64, whose counter (the time-stamp counter) keeps one rate
// on every core of every processor of this century; elsewhere the
// counter is the runtime's clock itself, and nothing is gained.

// calibrateNs is how far apart the two readings that measure the
// counter's rate are, at least: 100 ms.
const calibrateNs = 100_000_000

// pairTicks is the most ticks a reading of the runtime's clock may take
// between two of the counter's for the pair to count: a few µs, where
// one takes about 100 ticks.
const pairTicks = 10_000

// rateSlack is the measured rate's margin: 1/rateSlack.
const rateSlack = 100

var bound struct {
	// rate is the ns per tick, times 2^32, with its margin; zero until
	// measured.
	rate atomic.Uint64
	t    atomic.Int64 // the first pair's counter reading; zero until read
	next atomic.Int64 // the counter's reading before which no second pair is tried
	mu   sync.Mutex   // guards n, the first pair's clock reading, and the measure
	n    int64
}

// HasCounter reports whether Stamp reads a counter cheaper than the
// runtime's clock, so that Elapsed is worth calling.
const HasCounter = runtime.GOARCH == "amd64"

// Stamp reads the counter, for Elapsed.
func Stamp() int64 { return ticks() } // clock seam: a bound on elapsed real time (see Elapsed)

// Elapsed returns an upper bound of the ns of the runtime's clock that
// have passed since the counter read t0 (Stamp), and whether it knows
// one: not before the counter's rate is measured (until calibrateNs
// after the first call), nor if the counter reads less than t0 now.
func Elapsed(t0 int64) (int64, bool) {
	r := bound.rate.Load()
	if r == 0 {
		calibrate()
		return 0, false
	}
	d := ticks() - t0 // clock seam: as in Stamp
	if d < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(d), r)
	if hi >= 1<<31 {
		return 0, false // beyond int64
	}
	return int64(hi<<32 | lo>>32), true
}

// calibrate measures the counter's rate: it keeps a first pair of
// readings, and from calibrateNs later sets the rate from a second.
// Callers that find another calibrating go on without.
func calibrate() {
	// Until the counter has gone calibrateNs/2 ticks past the first pair
	// (a rate of 0.5 GHz, below any counter's), or past next, calibrateNs
	// have not passed: one reading, no lock.
	if t := bound.t.Load(); t != 0 {
		if now := ticks(); now-t < calibrateNs/2 || now < bound.next.Load() { // clock seam: as in Stamp
			return
		}
	}
	if !bound.mu.TryLock() {
		return
	}
	defer bound.mu.Unlock()
	if bound.rate.Load() != 0 {
		return
	}
	t1 := ticks()   // clock seam: the counter's rate against the runtime's clock
	n := nanotime() // clock seam: as above
	t2 := ticks()   // clock seam: as above
	if t2 < t1 || t2-t1 > pairTicks {
		return // preempted, or moved: try again
	}
	t0 := bound.t.Load()
	if t0 == 0 {
		bound.n = n
		bound.t.Store(t2)
		return
	}
	// The first pair's clock was read before its t0, this one's after
	// its t1: n-bound.n ns passed in at least t1-t0 ticks.
	dn, dt := n-bound.n, t1-t0
	if dt <= 0 {
		bound.t.Store(0) // the counter went back: start again
		bound.next.Store(0)
		return
	}
	if dn < calibrateNs {
		// Not yet: the rate so far says when it will be.
		bound.next.Store(t1 + int64(float64(calibrateNs-dn)*float64(dt)/float64(max(dn, 1))))
		return
	}
	r := float64(dn) / float64(dt) * (1 + 1.0/rateSlack) * (1 << 32)
	bound.rate.Store(uint64(r) + 1)
}

// SetRate sets the counter's rate, in ns per tick times 2^32 (0: not
// measured), until the returned function puts the measured one back:
// for tests. The bound reads the processor's counter and the runtime's
// clock themselves, never a test's (SetCounter, SetClock): a rate
// measured on those would hold for no other test.
func SetRate(r uint64) (restore func()) {
	old := bound.rate.Swap(r)
	return func() { bound.rate.Store(old) }
}
