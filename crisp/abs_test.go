package crisp_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
)

// The seed benchmark of the ABS runtime papers (Listing 1): one actor;
// recursiveM(i) calls itself synchronously down to i = 0, and at every
// level sends compute() to its own actor and awaits it; the main program
// sends recursiveM(5) N times and gets every result. Three styles:
//
//   - await: crisp.Await, the process keeping its goroutine and stack;
//   - then: crisp.Then, continuation-passing with no goroutine parked;
//   - goroutines: the baseline, one plain goroutine per call, blocked on
//     a channel while the actor (a server goroutine) computes.
//
// Every style runs 6N computes and its calls return 1.

const depth = 5

func absAwait(sys *crisp.System, n int) int {
	a := crisp.Spawn(sys, &counterState{})
	futs := make([]*future.Future[int], n)
	for i := range futs {
		futs[i] = crisp.Call(a, func(p *crisp.Proc, _ *counterState) (int, error) {
			recursiveM(p, a, depth)
			return 1, nil
		})
	}
	return sumAll(futs)
}

// recursiveThen is recursiveM in continuation-passing style: k is what
// follows the await at the level being unwound.
func recursiveThen(p *crisp.Proc, self *crisp.Actor[*counterState], i int, k func(*crisp.Proc) crisp.Next[*counterState, int]) crisp.Next[*counterState, int] {
	awaitCompute := func(p *crisp.Proc) crisp.Next[*counterState, int] {
		return crisp.Then(p, crisp.Call(self, compute), func(p *crisp.Proc, _ *counterState, _ int, err error) crisp.Next[*counterState, int] {
			if err != nil {
				return crisp.Return[*counterState](0, err)
			}
			return k(p)
		})
	}
	if i == 0 {
		return awaitCompute(p)
	}
	return recursiveThen(p, self, i-1, awaitCompute)
}

func absThen(sys *crisp.System, n int) int {
	a := crisp.Spawn(sys, &counterState{})
	futs := make([]*future.Future[int], n)
	done := func(*crisp.Proc) crisp.Next[*counterState, int] { return crisp.Return[*counterState](1, nil) }
	for i := range futs {
		futs[i] = crisp.CallNext(a, func(p *crisp.Proc, _ *counterState) crisp.Next[*counterState, int] {
			return recursiveThen(p, a, depth, done)
		})
	}
	return sumAll(futs)
}

func sumAll(futs []*future.Future[int]) int {
	sum := 0
	for _, f := range futs {
		v, err := f.Get()
		if err != nil {
			panic(err)
		}
		sum += v
	}
	return sum
}

// absGoroutines is the baseline: a goroutine per call, the actor a server
// goroutine owning the counter, each await a blocking channel receive.
func absGoroutines(n int) (calls, computes int) {
	type req struct{ reply chan int }
	reqs := make(chan req)
	served := make(chan int)
	go func() {
		result := 0
		for r := range reqs {
			result++
			r.reply <- result
		}
		served <- result
	}()
	var rec func(i int, reply chan int)
	rec = func(i int, reply chan int) {
		if i > 0 {
			rec(i-1, reply)
		}
		reqs <- req{reply}
		<-reply
	}
	var wg sync.WaitGroup
	results := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec(depth, make(chan int))
			results <- 1
		}()
	}
	wg.Wait()
	close(reqs)
	close(results)
	for v := range results {
		calls += v
	}
	return calls, <-served
}

func TestABSListing1(t *testing.T) {
	const n = 2500
	t.Run("await", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer sys.Shutdown(context.Background())
		assert.Equal(t, n, absAwait(sys, n))
	})
	t.Run("then", func(t *testing.T) {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		defer sys.Shutdown(context.Background())
		assert.Equal(t, n, absThen(sys, n))
	})
	t.Run("goroutines", func(t *testing.T) {
		calls, computes := absGoroutines(n)
		assert.Equal(t, n, calls)
		assert.Equal(t, n*(depth+1), computes)
	})
}

// peak samples live heap plus goroutine stacks every millisecond while
// f runs and returns the highest reading above the reading before f. It
// samples on a ticker: a sampler that spun would take a processor of the
// two, and the heap lock each reading holds, from what it measures.
func peak(f func()) uint64 {
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	read := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64() + samples[1].Value.Uint64()
	}
	base := read()
	var hi uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > hi {
				hi = v
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	if v := read(); v > hi { // the end state, in case f was shorter than a tick
		hi = v
	}
	if hi < base {
		return 0
	}
	return hi - base
}

// BenchmarkABSListing1 reports time and peak memory (live heap and
// stacks above the starting point) per style and N. N = 1,000,000 runs
// only when CRISP_BENCH_BIG is set: it needs several GiB. With
// CRISP_BENCH_HOGS=n, n goroutines that never yield run beside every
// style (as bench's -hogs).
func BenchmarkABSListing1(b *testing.B) {
	if n, _ := strconv.Atoi(os.Getenv("CRISP_BENCH_HOGS")); n > 0 {
		defer startHogs(n)()
	}
	sizes := []int{2500, 100_000}
	if os.Getenv("CRISP_BENCH_BIG") != "" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("goroutines/N=%d", n), func(b *testing.B) {
			for b.Loop() {
				var calls int
				b.ReportMetric(float64(peak(func() { calls, _ = absGoroutines(n) }))/(1<<20), "peak-MiB")
				if calls != n {
					b.Fatal(calls)
				}
			}
		})
		for _, style := range []string{"await", "then"} {
			b.Run(style+"/N="+strconv.Itoa(n), func(b *testing.B) {
				for b.Loop() {
					sys := crisp.NewSystem(crisp.WithLogger(quiet))
					var got int
					b.ReportMetric(float64(peak(func() {
						if style == "await" {
							got = absAwait(sys, n)
						} else {
							got = absThen(sys, n)
						}
					}))/(1<<20), "peak-MiB")
					sys.Shutdown(context.Background())
					if got != n {
						b.Fatal(got)
					}
				}
			})
		}
	}
}

// BenchmarkSuspendedMemory holds a million processes suspended at once
// (each awaiting its own never-resolved promise), or a million pending
// continuations, and reports the memory each costs: live heap and stacks
// above the starting point, over the count.
func BenchmarkSuspendedMemory(b *testing.B) {
	n := 100_000
	if os.Getenv("CRISP_BENCH_BIG") != "" {
		n = 1_000_000
	}
	measure := func(b *testing.B, park func(sys *crisp.System, a *crisp.Actor[*counterState], pr *future.Promise[int])) {
		for b.Loop() {
			sys := crisp.NewSystem(crisp.WithLogger(quiet))
			a := crisp.Spawn(sys, &counterState{})
			proms := make([]*future.Promise[int], n)
			for i := range proms {
				proms[i] = future.NewPromise[int](nil)
			}
			runtime.GC()
			samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
			metrics.Read(samples)
			before := samples[0].Value.Uint64() + samples[1].Value.Uint64()
			for _, pr := range proms {
				park(sys, a, pr)
			}
			if err := sys.WaitIdle(context.Background()); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			metrics.Read(samples)
			after := samples[0].Value.Uint64() + samples[1].Value.Uint64()
			b.ReportMetric(float64(after-before)/float64(n), "B/suspended")
			for _, pr := range proms {
				pr.Resolve(1, nil)
			}
			sys.WaitIdle(context.Background())
			sys.Shutdown(context.Background())
		}
	}
	b.Run("await", func(b *testing.B) {
		measure(b, func(_ *crisp.System, a *crisp.Actor[*counterState], pr *future.Promise[int]) {
			crisp.Tell(a, func(p *crisp.Proc, _ *counterState) { crisp.Await(p, pr.Future()) })
		})
	})
	b.Run("then", func(b *testing.B) {
		measure(b, func(_ *crisp.System, a *crisp.Actor[*counterState], pr *future.Promise[int]) {
			crisp.Tell(a, func(p *crisp.Proc, _ *counterState) {
				crisp.Then(p, pr.Future(), func(*crisp.Proc, *counterState, int, error) crisp.Next[*counterState, int] {
					return crisp.Next[*counterState, int]{}
				})
			})
		})
	})
}
