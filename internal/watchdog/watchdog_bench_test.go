package watchdog_test

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crisprt/crisp/internal/watchdog"
)

// The Watch+Cancel benchmarks run beside two baselines: the same work on
// container/heap, and one time.Now() call (the clock read a deadlined
// message pays anyway).

var pendingSizes = []struct {
	name string
	n    int
}{{"pending=1e3", 1e3}, {"pending=1e5", 1e5}, {"pending=1e6", 1e6}}

type idleTarget struct{ watchdog.Entry }

func (*idleTarget) Expire(time.Time) {}

// farDeadlines returns n random deadlines between one and two hours after now.
func farDeadlines(r *rand.Rand, now time.Time, n int) []time.Time {
	ds := make([]time.Time, n)
	for i := range ds {
		ds[i] = now.Add(time.Hour + time.Duration(r.Int64N(int64(time.Hour))))
	}
	return ds
}

// watchPending fills a new watchdog, on the real clock, with n deadlines
// that will not come during the benchmark.
func watchPending(b *testing.B, r *rand.Rand, now time.Time, n int) *watchdog.Watchdog {
	b.Helper()
	w := watchdog.New(nil)
	others := make([]idleTarget, n)
	for i, d := range farDeadlines(r, now, n) {
		if !w.Watch(&others[i].Entry, &others[i], d, now) {
			b.Fatal("Watch reported false")
		}
	}
	return w
}

// setUpWatchCancel fills a watchdog with n far deadlines and returns one
// more entry and the deadlines to watch it at. It then runs enough
// Watch+Cancel rounds to go through a compaction of the heap's cancelled
// slots, so that the timed loop sees the steady state (the heap's array at
// its largest) and pays compactions at their amortised rate.
func setUpWatchCancel(b *testing.B, n int) (*watchdog.Watchdog, *idleTarget, []time.Time, time.Time) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	w := watchPending(b, r, now, n)
	whens := farDeadlines(r, now, 1024)
	x := new(idleTarget)
	for i := range n + 1 {
		w.Watch(&x.Entry, x, whens[i&1023], now)
		w.Cancel(&x.Entry)
	}
	return w, x, whens, now
}

// BenchmarkWatchCancel watches one more entry, at a random deadline among
// the pending ones, and cancels it.
func BenchmarkWatchCancel(b *testing.B) {
	for _, size := range pendingSizes {
		b.Run(size.name, func(b *testing.B) {
			w, x, whens, now := setUpWatchCancel(b, size.n)
			defer w.Stop()
			i := 0
			for b.Loop() {
				w.Watch(&x.Entry, x, whens[i&1023], now)
				w.Cancel(&x.Entry)
				i++
			}
		})
	}
}

// BenchmarkWatchCancelEarliest watches one more entry at a deadline before
// every other, pending or cancelled, so that each Watch climbs to the top
// of the heap and re-arms the timer.
func BenchmarkWatchCancelEarliest(b *testing.B) {
	for _, size := range pendingSizes {
		b.Run(size.name, func(b *testing.B) {
			w, x, _, now := setUpWatchCancel(b, size.n)
			defer w.Stop()
			when := now.Add(time.Hour) // before every far deadline, and a nanosecond earlier each time
			for b.Loop() {
				when = when.Add(-time.Nanosecond)
				w.Watch(&x.Entry, x, when, now)
				w.Cancel(&x.Entry)
			}
		})
	}
}

// BenchmarkWatchCancelWorst reports the longest single Watch+Cancel of
// BenchmarkWatchCancel (timing each one adds two clock reads to ns/op),
// beside the same for container/heap. The mean hides the pauses that a
// real-time caller feels.
func BenchmarkWatchCancelWorst(b *testing.B) {
	for _, size := range pendingSizes {
		b.Run("watchdog/"+size.name, func(b *testing.B) {
			w, x, whens, now := setUpWatchCancel(b, size.n)
			defer w.Stop()
			measureWorst(b, func(i int) {
				w.Watch(&x.Entry, x, whens[i&1023], now)
				w.Cancel(&x.Entry)
			})
		})
		b.Run("container-heap/"+size.name, func(b *testing.B) {
			h, x, keys := setUpItemHeap(size.n)
			measureWorst(b, func(i int) {
				x.key, x.seq = keys[i&1023], uint64(size.n+i)
				heap.Push(h, x)
				heap.Remove(h, x.index)
			})
		})
	}
}

func measureWorst(b *testing.B, op func(i int)) {
	var worst time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		op(i)
		worst = max(worst, time.Since(start))
		i++
	}
	b.ReportMetric(float64(worst)/float64(time.Microsecond), "max-µs")
}

// item and itemHeap are the baseline: the watchdog's kind of element (an
// int64 key, a sequence number for ties, a pointer to an entry that knows
// its index) in the container/heap idiom of its PriorityQueue example.
type item struct {
	key   int64
	seq   uint64
	index int
}

type itemSlot struct {
	key int64
	seq uint64
	it  *item
}

type itemHeap []itemSlot

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	return h[i].key < h[j].key || (h[i].key == h[j].key && h[i].seq < h[j].seq)
}
func (h itemHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].it.index = i
	h[j].it.index = j
}

// Push takes an *item, which fits in an interface without allocating.
func (h *itemHeap) Push(x any) {
	it := x.(*item)
	it.index = len(*h)
	*h = append(*h, itemSlot{it.key, it.seq, it})
}

func (h *itemHeap) Pop() any {
	old := *h
	n := len(old) - 1
	it := old[n].it
	old[n] = itemSlot{}
	it.index = -1
	*h = old[:n]
	return it
}

// setUpItemHeap fills a container/heap with n far deadlines, as
// watchPending does, and returns one more item and keys to push it at.
func setUpItemHeap(n int) (*itemHeap, *item, []int64) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	items := make([]item, n)
	h := make(itemHeap, 0, n+1)
	for i, d := range farDeadlines(r, now, n) {
		items[i] = item{key: int64(d.Sub(now)), seq: uint64(i)}
		heap.Push(&h, &items[i])
	}
	keys := make([]int64, 1024)
	for i, d := range farDeadlines(r, now, len(keys)) {
		keys[i] = int64(d.Sub(now))
	}
	return &h, new(item), keys
}

func BenchmarkContainerHeapPushRemove(b *testing.B) {
	for _, size := range pendingSizes {
		b.Run(size.name, func(b *testing.B) {
			h, x, keys := setUpItemHeap(size.n)
			seq := uint64(size.n)
			for b.Loop() {
				x.key, x.seq = keys[seq&1023], seq
				heap.Push(h, x)
				heap.Remove(h, x.index)
				seq++
			}
		})
	}
}

func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		time.Now()
	}
}

// lagTarget records how long after its deadline it was told.
type lagTarget struct {
	watchdog.Entry
	deadline time.Time
	lag      time.Duration
	round    *lagRound
}

// lagRound counts down the targets of one round.
type lagRound struct {
	left atomic.Int64
	done chan struct{}
}

func (t *lagTarget) Expire(time.Time) {
	t.lag = time.Since(t.deadline)
	if t.round.left.Add(-1) == 0 {
		t.round.done <- struct{}{}
	}
}

var lagSizes = []struct {
	name string
	n    int
	lead time.Duration // time to register n deadlines, with room to spare
}{{"pending=1e3", 1e3, 5 * time.Millisecond}, {"pending=1e5", 1e5, 60 * time.Millisecond}}

// BenchmarkNotificationLag watches n deadlines spread at random over
// 50 ms, on the real clock, and reports how late their targets were told:
// the latency of the timer, the wake-up of the watchdog's goroutine, and
// the wait behind earlier targets of the same batch.
func BenchmarkNotificationLag(b *testing.B) {
	for _, size := range lagSizes {
		b.Run(size.name, func(b *testing.B) {
			w := watchdog.New(nil)
			defer w.Stop()
			measureLag(b, size.n, size.lead, func(t *lagTarget, now time.Time) {
				w.Watch(&t.Entry, t, t.deadline, now)
			})
		})
	}
}

// BenchmarkNotificationLagTimerPerDeadline is the baseline: one
// time.AfterFunc per deadline, which the watchdog exists to avoid.
func BenchmarkNotificationLagTimerPerDeadline(b *testing.B) {
	for _, size := range lagSizes {
		b.Run(size.name, func(b *testing.B) {
			measureLag(b, size.n, size.lead, func(t *lagTarget, now time.Time) {
				time.AfterFunc(t.deadline.Sub(now), func() { t.Expire(time.Time{}) })
			})
		})
	}
}

// measureLag runs rounds of n deadlines spread over 50 ms, starting once
// all have been registered by start, and reports percentiles of the lag.
// Only the wait for a round's expiries is timed; ns/op (one round, about
// lead + 50 ms) is suppressed as meaningless.
func measureLag(b *testing.B, n int, lead time.Duration, start func(t *lagTarget, now time.Time)) {
	const spread = 50 * time.Millisecond
	r := rand.New(rand.NewPCG(1, 2))
	round := &lagRound{done: make(chan struct{}, 1)}
	targets := make([]lagTarget, n)
	for i := range targets {
		targets[i].round = round
	}
	lags := make([]time.Duration, 0, b.N*n)
	for i := 0; i < b.N; {
		b.StopTimer()
		round.left.Store(int64(n))
		begin := time.Now()
		first := begin.Add(lead)
		for i := range targets {
			t := &targets[i]
			t.deadline = first.Add(time.Duration(r.Int64N(int64(spread))))
			// A fresh reading, as a sender has: Watch arms the timer
			// relative to the now it is given.
			start(t, time.Now())
		}
		overran := time.Since(first) > 0
		if took := time.Since(begin); 2*took > lead {
			lead = 2 * took // a slow machine, or -race
		}
		b.StartTimer()
		<-round.done
		b.StopTimer()
		if overran {
			continue // the first deadlines passed during registration; measure again
		}
		for i := range targets {
			lags = append(lags, targets[i].lag)
		}
		i++
	}
	slices.Sort(lags)
	pct := func(p float64) float64 {
		return float64(lags[int(p*float64(len(lags)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(pct(1), "max-µs")
}
