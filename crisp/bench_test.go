package crisp_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
)

// Every benchmark here runs a plain-Go baseline beside crisp in the same
// process, so that BENCHMARKS.md can report ratios, which survive a noisy
// shared machine better than absolute times.

type counter struct{ n int }

func incr(_ *crisp.Proc, c *counter) (int, error) { c.n++; return c.n, nil }

func benchSystem(b *testing.B) *crisp.System {
	sys := crisp.NewSystem(crisp.WithLogger(quiet))
	b.Cleanup(func() {
		if err := sys.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	})
	return sys
}

// BenchmarkRoundTrip: one request in flight, the caller waits for each
// reply. The baseline is a long-lived server goroutine answering on a
// channel, the way a Go programmer would write it by hand.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("raw channel", func(b *testing.B) {
		type req struct{ reply chan int }
		reqs := make(chan req)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for r := range reqs {
				n++
				r.reply <- n
			}
		}()
		reply := make(chan int)
		b.ReportAllocs()
		for b.Loop() {
			reqs <- req{reply}
			<-reply
		}
		close(reqs)
		wg.Wait()
	})
	b.Run("clock read", func(b *testing.B) {
		clk := crisp.NewSystem(crisp.WithLogger(quiet))
		defer clk.Shutdown(context.Background())
		c := clk.Clock()
		for b.Loop() {
			_ = c.Now()
		}
	})
	b.Run("crisp call", func(b *testing.B) {
		a := crisp.Spawn(benchSystem(b), &counter{})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := crisp.Call(a, incr).Get(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("crisp call with deadline", func(b *testing.B) {
		a := crisp.Spawn(benchSystem(b), &counter{})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := crisp.Call(a, incr, crisp.Within(time.Second)).Get(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A request with a timed wait, as Call and GetWithin and as
	// AskWithin, whose message and parked wait's record are reused.
	// Parked: as on a machine busy with code that never yields, the
	// caller parks rather than spins, and the actor's runner exits
	// rather than lingers, so each request starts one. Each iteration
	// marks the machine busy again (one clock reading).
	for _, r := range []struct {
		name    string
		request func(a *crisp.Actor[*counter]) error
	}{
		{"crisp call with timed get", func(a *crisp.Actor[*counter]) error {
			_, err := crisp.Call(a, incr).GetWithin(time.Second)
			return err
		}},
		{"crisp ask within", func(a *crisp.Actor[*counter]) error {
			_, err := crisp.AskWithin(a, time.Second, incr)
			return err
		}},
	} {
		for _, parked := range []bool{false, true} {
			name := r.name
			if parked {
				name += ", parked"
			}
			b.Run(name, func(b *testing.B) {
				a := crisp.Spawn(benchSystem(b), &counter{})
				defer ready.SetBusy(false)
				b.ReportAllocs()
				for b.Loop() {
					if parked {
						ready.SetBusy(true)
					}
					if err := r.request(a); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkOneWay: four senders, one receiver, fire and forget. ns/op is
// per message. The baseline is a buffered channel drained by one
// goroutine.
func BenchmarkOneWay(b *testing.B) {
	// fanOut starts the timer and has four goroutines call each with
	// their share of b.N, and returns once all have.
	fanOut := func(b *testing.B, each func(n int)) {
		const senders = 4
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		for i := range senders {
			n := b.N / senders
			if i < b.N%senders {
				n++
			}
			wg.Go(func() { each(n) })
		}
		wg.Wait()
	}
	b.Run("raw buffered channel", func(b *testing.B) {
		ch := make(chan int, 1024)
		done := make(chan int)
		go func() {
			n := 0
			for range ch {
				n++
			}
			done <- n
		}()
		fanOut(b, func(n int) {
			for i := range n {
				ch <- i
			}
		})
		close(ch)
		if got := <-done; got != b.N {
			b.Fatalf("received %d of %d", got, b.N)
		}
	})
	tells := func(b *testing.B, a *crisp.Actor[*counter], opts ...crisp.SendOption) {
		add := func(_ *crisp.Proc, c *counter) { c.n++ }
		fanOut(b, func(n int) {
			for range n {
				crisp.Tell(a, add, opts...)
			}
		})
		// Sent last without a deadline, this runs after every Tell.
		got, _ := crisp.Call(a, func(_ *crisp.Proc, c *counter) (int, error) { return c.n, nil }).Get()
		if got != b.N {
			b.Fatalf("received %d of %d", got, b.N)
		}
	}
	b.Run("crisp tell", func(b *testing.B) {
		tells(b, crisp.Spawn(benchSystem(b), &counter{}))
	})
	b.Run("crisp tell with deadline", func(b *testing.B) {
		tells(b, crisp.Spawn(benchSystem(b), &counter{}), crisp.Within(time.Hour))
	})
	// An actor whose end someone waits for keeps lifecycle state, as one
	// with hooks or a supervisor does: its messages are as cheap.
	b.Run("crisp tell to a watched actor", func(b *testing.B) {
		a := crisp.Spawn(benchSystem(b), &counter{})
		_ = a.Done()
		tells(b, a)
	})
}

// BenchmarkChain passes a token round a ring of 100 actors, each hop a
// handler's Tell to the next actor, idle until then: the hand-off's
// case (handoff.go). The baseline is a ring of goroutines on unbuffered
// channels. Sub-benchmarks give the Tells options: each that a message
// may carry and still hand off.
func BenchmarkChain(b *testing.B) {
	const actors = 100
	b.Run("raw channel ring", func(b *testing.B) {
		chans := make([]chan int, actors)
		for i := range chans {
			chans[i] = make(chan int)
		}
		for i := range actors - 1 {
			go func() {
				for v := range chans[i] {
					chans[i+1] <- v
				}
				close(chans[i+1])
			}()
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += actors {
			chans[0] <- i
			<-chans[actors-1]
		}
		close(chans[0])
		for range chans[actors-1] {
		}
	})
	ring := func(b *testing.B, opts ...crisp.SendOption) {
		sys := benchSystem(b)
		as := make([]*crisp.Actor[int], actors)
		for i := range as {
			as[i] = crisp.Spawn(sys, i)
		}
		done := make(chan struct{})
		var hop func(left int) func(*crisp.Proc, int)
		hop = func(left int) func(*crisp.Proc, int) {
			return func(_ *crisp.Proc, i int) {
				if left == 0 {
					done <- struct{}{}
					return
				}
				crisp.Tell(as[(i+1)%actors], hop(left-1), opts...)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += actors {
			crisp.Tell(as[0], hop(actors-1), opts...)
			<-done
		}
	}
	b.Run("crisp", func(b *testing.B) { ring(b) })
	b.Run("crisp with a far Within", func(b *testing.B) { ring(b, crisp.Within(time.Hour)) })
	b.Run("crisp with a priority", func(b *testing.B) { ring(b, crisp.Priority(1)) })
	b.Run("crisp with a far Within and a context", func(b *testing.B) {
		ring(b, crisp.Within(time.Hour), crisp.Context(context.Background()))
	})
}

// heapBytes returns the live heap after a full collection.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemory reports bytes per idle actor and per queued deadlined
// Call with its future, measured as live heap growth over many of them.
func BenchmarkMemory(b *testing.B) {
	const n = 100_000
	b.Run("idle actor", func(b *testing.B) {
		sys := benchSystem(b)
		for b.Loop() {
			before := heapBytes()
			actors := make([]*crisp.Actor[*counter], n)
			c := &counter{} // one shared state, so only the actor is counted
			for i := range actors {
				actors[i] = crisp.Spawn(sys, c)
			}
			after := heapBytes()
			b.ReportMetric(float64(after-before-uint64(n*8))/n, "B/actor")
			runtime.KeepAlive(actors)
		}
	})
	b.Run("idle actor from SpawnEach", func(b *testing.B) {
		sys := benchSystem(b)
		states := make([]*counter, n)
		c := &counter{}
		for i := range states {
			states[i] = c
		}
		for b.Loop() {
			before := heapBytes()
			actors := crisp.SpawnEach(sys, states)
			after := heapBytes()
			b.ReportMetric(float64(after-before-uint64(n*8))/n, "B/actor")
			runtime.KeepAlive(actors)
		}
	})
	b.Run("queued call with deadline", func(b *testing.B) {
		sys := benchSystem(b)
		for b.Loop() {
			a := crisp.Spawn(sys, &counter{})
			release := make(chan struct{})
			started := make(chan struct{})
			crisp.Tell(a, func(*crisp.Proc, *counter) { close(started); <-release })
			<-started
			futs := make([]*future.Future[int], n)
			before := heapBytes()
			for i := range futs {
				futs[i] = crisp.Call(a, incr, crisp.Within(time.Hour))
			}
			after := heapBytes()
			b.ReportMetric(float64(after-before)/n, "B/call")
			close(release)
			if _, err := futs[n-1].Get(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSpawnMany spawns 100,000 actors of a pointer state at a
// time, one by one with Spawn and in one block with SpawnEach, and
// reports the time per actor: the two in one process, for their ratio.
func BenchmarkSpawnMany(b *testing.B) {
	const n = 100_000
	states := make([]*counter, n)
	for i := range states {
		states[i] = &counter{}
	}
	var keep []*crisp.Actor[*counter]
	b.Run("Spawn", func(b *testing.B) {
		sys := benchSystem(b)
		for b.Loop() {
			keep = make([]*crisp.Actor[*counter], n)
			for i, s := range states {
				keep[i] = crisp.Spawn(sys, s)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/actor")
	})
	b.Run("SpawnEach", func(b *testing.B) {
		sys := benchSystem(b)
		for b.Loop() {
			keep = crisp.SpawnEach(sys, states)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/actor")
	})
	runtime.KeepAlive(keep)
}

// BenchmarkMissLag measures, on the real clock, the time from a deadline
// to the resolution of the future of the message that missed it, with
// all actors busy and the deadlines pending at once, spread evenly over
// the given span: 100,000 over 1s is 100,000 misses a second, over 100ms
// ten times that. The precision variants run with WithPrecision(1ms);
// cpu-ms/s is the process's CPU time per second of the run (all actors
// are blocked, so it is mostly the watchdog's and the miss delivery's).
func BenchmarkMissLag(b *testing.B) {
	for _, c := range []struct {
		name             string
		actors, perActor int
		span             time.Duration
		opts             []crisp.Option
		hogs             int
	}{
		{"100k spread 1s", 10_000, 10, time.Second, nil, 0},
		{"100k spread 100ms", 10_000, 10, 100 * time.Millisecond, nil, 0},
		{"200k spread 100ms", 10_000, 20, 100 * time.Millisecond, nil, 0},
		{"1k spread 1s", 10, 100, time.Second, nil, 0},
		{"100k spread 1s precision", 10_000, 10, time.Second, []crisp.Option{crisp.WithPrecision(time.Millisecond)}, 0},
		{"1k spread 1s precision", 10, 100, time.Second, []crisp.Option{crisp.WithPrecision(time.Millisecond)}, 0},
		// The same beside goroutines that never yield, one per processor.
		{"100k spread 1s hogs", 10_000, 10, time.Second, nil, runtime.GOMAXPROCS(0)},
		{"100k spread 100ms hogs", 10_000, 10, 100 * time.Millisecond, nil, runtime.GOMAXPROCS(0)},
	} {
		b.Run(c.name, func(b *testing.B) { missLag(b, c.actors, c.perActor, c.span, c.hogs, c.opts...) })
	}
}

// waitBounded waits for wg until the real clock reaches limit, and
// reports whether wg was done: a benchmark must end even if the runtime
// under test loses a resolution.
func waitBounded(wg *sync.WaitGroup, limit time.Time) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(time.Until(limit))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// startHogs starts n goroutines that never yield (CPU-bound code beside
// the actors) and returns the function that ends them and waits for
// them.
func startHogs(n int) (stop func()) {
	var done atomic.Bool
	var hogs sync.WaitGroup
	for range n {
		hogs.Go(func() {
			for !done.Load() {
			}
		})
	}
	return func() { done.Store(true); hogs.Wait() }
}

// heldActors spawns n actors on sys, each held in its first handler
// until release is closed, and returns once all are held: what is sent
// to them meanwhile waits in their queues.
func heldActors(sys *crisp.System, n int) (as []*crisp.Actor[*counter], release chan struct{}) {
	release = make(chan struct{})
	var started sync.WaitGroup
	as = make([]*crisp.Actor[*counter], n)
	for i := range as {
		as[i] = crisp.Spawn(sys, &counter{})
		started.Add(1)
		crisp.Tell(as[i], func(*crisp.Proc, *counter) { started.Done(); <-release })
	}
	started.Wait()
	return as, release
}

func missLag(b *testing.B, actors, perActor int, span time.Duration, hogs int, opts ...crisp.Option) {
	defer startHogs(hogs)()
	var cpuRate, p50, p99, top []float64 // per iteration
	for b.Loop() {
		sys := crisp.NewSystem(append([]crisp.Option{crisp.WithLogger(quiet)}, opts...)...)
		as, release := heldActors(sys, actors)

		n := actors * perActor
		lags := make([]time.Duration, n)
		var wg sync.WaitGroup
		wg.Add(n)
		base := time.Now().Add(300 * time.Millisecond) // well after every send
		step := span / time.Duration(n)
		for k := range perActor {
			for i, a := range as {
				id := k*actors + i
				// Interleave actors so that neighbours in time are on
				// different actors.
				due := base.Add(time.Duration((id*7919)%n) * step)
				f := crisp.Call(a, incr, crisp.By(due))
				done := func() { lags[id] = time.Since(due); wg.Done() }
				if !plumb.OnResolve(f, done) {
					// Resolved already: the deadline passed before the
					// send (the lead-in ran out on a loaded machine).
					done()
				}
			}
		}
		cpu0, wall0 := cpuTime(), time.Now()
		if !waitBounded(&wg, base.Add(span+time.Minute)) {
			b.Fatalf("misses not all reported a minute after the last deadline")
		}
		cpu, wall := cpuTime()-cpu0, time.Since(wall0)
		close(release)
		if err := sys.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		cpuRate = append(cpuRate, float64(cpu.Milliseconds())/wall.Seconds())
		slices.Sort(lags)
		q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))].Microseconds()) }
		p50, p99, top = append(p50, q(0.5)), append(p99, q(0.99)), append(top, q(1))
		b.Logf("iteration %d: lag p50 %.0f µs, p99 %.0f µs, max %.0f µs", len(p50), q(0.5), q(0.99), q(1))
	}
	// Medians over the iterations: one in a few has a collection in its
	// span, which moves its figures by tens of milliseconds (see -v).
	b.ReportMetric(median(cpuRate), "cpu-ms/s")
	b.ReportMetric(median(p50), "p50-µs")
	b.ReportMetric(median(p99), "p99-µs")
	b.ReportMetric(median(top), "max-µs")
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkMissCapacity: how many misses a second the runtime reports
// when it cannot keep up. 100,000 queued Calls on 10,000 held actors
// (interleaved as in BenchmarkMissLag) fall due within 10 ms, ten times
// faster than one watchdog could fail them; the metric is the number of
// misses over the time from the first deadline to the last resolution,
// on the real clock. BenchmarkMissLag's spread cases ask for 1 and 2
// million a second and measure the lag that builds up instead.
func BenchmarkMissCapacity(b *testing.B) {
	for _, hogs := range []int{0, runtime.GOMAXPROCS(0)} {
		name := "quiet"
		if hogs > 0 {
			name = "hogs"
		}
		b.Run(name, func(b *testing.B) { missCapacity(b, 10_000, 10, 10*time.Millisecond, hogs) })
	}
}

func missCapacity(b *testing.B, actors, perActor int, span time.Duration, hogs int) {
	defer startHogs(hogs)()
	n := actors * perActor
	var took time.Duration
	for b.Loop() {
		sys := crisp.NewSystem(crisp.WithLogger(quiet))
		as, release := heldActors(sys, actors)
		var left atomic.Int64
		left.Store(int64(n))
		last := make(chan time.Time, 1)
		resolved := func() {
			if left.Add(-1) == 0 {
				last <- time.Now()
			}
		}
		base := time.Now().Add(300 * time.Millisecond) // well after every send
		step := span / time.Duration(n)
		for k := range perActor {
			for i, a := range as {
				id := k*actors + i
				f := crisp.Call(a, incr, crisp.By(base.Add(time.Duration((id*7919)%n)*step)))
				if !plumb.OnResolve(f, resolved) {
					resolved() // the lead-in ran out on a loaded machine
				}
			}
		}
		select {
		case end := <-last:
			took += end.Sub(base)
		case <-time.After(time.Until(base.Add(span + time.Minute))):
			b.Fatalf("%d misses not reported a minute after the last deadline", left.Load())
		}
		close(release)
		if err := sys.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/took.Seconds(), "misses/s")
}

// BenchmarkAdmissionRefusal: how soon a sender learns that admission
// control refused its message, from the Call to the return of its Get,
// timed on the real clock. The system runs on a mock clock, which stands
// still, so that the queue ahead never expires: the actor is held by a
// handler, with 64 messages queued, message k to start by k+0.5ms, each
// with a Cost hint of 1ms (each can start in time). A message that must
// start by 63.8ms comes after them under EDF and cannot (its estimated
// wait is 64ms). Without admission control its sender would learn so at
// that start deadline: the metric "x-sooner" is that deadline over the
// time per refusal.
func BenchmarkAdmissionRefusal(b *testing.B) {
	mock := clock.NewMock()
	sys := crisp.NewSystem(crisp.WithLogger(quiet), crisp.WithClock(mock))
	b.Cleanup(func() {
		if err := sys.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	})
	a := crisp.Spawn(sys, &counter{}, crisp.WithAdmission())
	held, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(a, func(*crisp.Proc, *counter) { close(held); <-release })
	defer close(release)
	<-held
	for k := range 64 {
		startBy := time.Duration(k)*time.Millisecond + 500*time.Microsecond
		crisp.Tell(a, func(_ *crisp.Proc, c *counter) { c.n++ }, crisp.Within(startBy+time.Millisecond), crisp.Cost(time.Millisecond))
	}
	const startBy = 63800 * time.Microsecond
	b.ReportAllocs()
	for b.Loop() {
		_, err := crisp.Call(a, incr, crisp.Within(startBy+time.Millisecond), crisp.Cost(time.Millisecond)).Get()
		if !errors.Is(err, crisp.ErrInfeasible) {
			b.Fatalf("got %v, want a refusal", err)
		}
	}
	b.ReportMetric(float64(startBy)/(float64(b.Elapsed())/float64(b.N)), "x-sooner")
}
