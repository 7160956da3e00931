package vclock_test

import (
	"container/heap"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/vclock"
)

// BenchmarkDrive measures events per second of wall time (one event per
// op), with a number of timers pending at every instant: each event sets
// the next of its chain, 1 to 10 minutes of virtual time later. It drives
// a crisp system, where each event is a timer whose function tells an
// actor, whose handler sets the next timer; and the clock alone, where
// each event is a timer function that sets the next. Timers are set with
// AfterFunc (a *clock.Timer, looked at every round) or At (the clock's own
// heap). The baseline is a bare loop over a container/heap of as many
// timers.
func BenchmarkDrive(b *testing.B) {
	for _, chains := range []int{8, 1024} {
		b.Run(fmt.Sprint("timers=", chains), func(b *testing.B) {
			for _, set := range []string{"AfterFunc", "At"} {
				b.Run("system/"+set, func(b *testing.B) { benchmarkSystem(b, chains, set == "At") })
			}
			for _, set := range []string{"AfterFunc", "At"} {
				b.Run("clock/"+set, func(b *testing.B) { benchmarkClock(b, chains, set == "At") })
			}
			b.Run("heap", func(b *testing.B) { benchmarkHeap(b, chains) })
		})
	}
}

// setter sets f to run d from now, with AfterFunc or At.
func setter(vc *vclock.Clock, useAt bool) func(d time.Duration, f func()) {
	if useAt {
		return func(d time.Duration, f func()) { vc.At(vc.Now().Add(d), f) }
	}
	return func(d time.Duration, f func()) { vc.AfterFunc(d, f) }
}

func benchmarkSystem(b *testing.B, chains int, useAt bool) {
	vc := vclock.New(t0)
	set := setter(vc, useAt)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(quiet))
	defer sys.Shutdown(bounded(b))
	n := min(chains, b.N)
	var left atomic.Int64 // events still to set
	left.Store(int64(b.N - n))
	for i := range n {
		a := crisp.Spawn(sys, &worker{rng: uint64(i) + 1})
		var event func(*crisp.Proc, *worker)
		tell := func() { crisp.Tell(a, event) }
		event = func(_ *crisp.Proc, w *worker) {
			if left.Add(-1) >= 0 {
				set(w.gap(), tell)
			}
		}
		set(time.Minute, tell)
	}
	b.ResetTimer()
	if err := vc.Run(bounded(b), sys.WaitIdle); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(vc.Since(t0).Hours()/b.Elapsed().Seconds(), "virtual-h/s")
}

func benchmarkClock(b *testing.B, chains int, useAt bool) {
	vc := vclock.New(t0)
	set := setter(vc, useAt)
	n := min(chains, b.N)
	left := b.N - n // touched only by timer functions, on the driver
	for i := range n {
		w := &worker{rng: uint64(i) + 1}
		var event func()
		event = func() {
			if left--; left >= 0 {
				set(w.gap(), event)
			}
		}
		set(time.Minute, event)
	}
	b.ResetTimer()
	if err := vc.Run(bounded(b), noIdle); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func benchmarkHeap(b *testing.B, chains int) {
	var q timerHeap
	ws := make([]worker, chains)
	for i := range ws {
		ws[i].rng = uint64(i) + 1
		heap.Push(&q, baseTimer{at: int64(time.Minute), seq: uint64(i), chain: i})
	}
	seq := uint64(chains)
	fired := 0
	b.ResetTimer()
	for range b.N {
		t := heap.Pop(&q).(baseTimer)
		fired++
		seq++
		heap.Push(&q, baseTimer{at: t.at + int64(ws[t.chain].gap()), seq: seq, chain: t.chain})
	}
	b.ReportMetric(float64(fired)/b.Elapsed().Seconds(), "events/s")
}

// baseTimer and timerHeap are the baseline: timers ordered by instant,
// then by set order, as the clock orders them.
type baseTimer struct {
	at    int64
	seq   uint64
	chain int
}

type timerHeap []baseTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(baseTimer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
