package future_test

import (
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
)

// Each benchmark runs the future beside a plain baseline doing the same
// job with channels (or a mutex), as x/sync's semaphore benchmarks do.

func BenchmarkGetResolved(b *testing.B) {
	b.Run("future", func(b *testing.B) {
		p := future.NewPromise[int](nil)
		p.Resolve(42, nil)
		f := p.Future()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = f.Get()
		}
	})
	b.Run("closed channel baseline", func(b *testing.B) {
		// A value published by closing a channel: receive, then read.
		done := make(chan struct{})
		v := 42
		close(done)
		b.ReportAllocs()
		for b.Loop() {
			<-done
			_ = v
		}
	})
}

// resolver serves requests on its own goroutine until reqs is closed,
// then closes the returned channel.
func resolver[R any](reqs <-chan R, serve func(R)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r := range reqs {
			serve(r)
		}
	}()
	return done
}

// BenchmarkHandoff hands a fresh promise (or channel) to another
// goroutine, which resolves it (or sends on it), and waits for the value.
// Both variants pay the same request send; the difference is the future.
func BenchmarkHandoff(b *testing.B) {
	b.Run("future Get", func(b *testing.B) {
		reqs := make(chan *future.Promise[int])
		done := resolver(reqs, func(p *future.Promise[int]) { p.Resolve(42, nil) })
		b.ReportAllocs()
		for b.Loop() {
			p := future.NewPromise[int](nil)
			reqs <- p
			_, _ = p.Future().Get()
		}
		close(reqs)
		<-done
	})
	b.Run("buffered channel baseline", func(b *testing.B) {
		reqs := make(chan chan int)
		done := resolver(reqs, func(c chan int) { c <- 42 })
		b.ReportAllocs()
		for b.Loop() {
			c := make(chan int, 1)
			reqs <- c
			<-c
		}
		close(reqs)
		<-done
	})
}

func BenchmarkGetWithinResolved(b *testing.B) {
	b.Run("future", func(b *testing.B) {
		p := future.NewPromise[int](nil)
		p.Resolve(42, nil)
		f := p.Future()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = f.GetWithin(time.Second)
		}
	})
	b.Run("channel and timer baseline", func(b *testing.B) {
		// The naive timed receive starts a timer even when the value is
		// already there.
		c := make(chan int, 1)
		b.ReportAllocs()
		for b.Loop() {
			c <- 42
			t := time.NewTimer(time.Second)
			select {
			case <-c:
				t.Stop()
			case <-t.C:
			}
		}
	})
}

// BenchmarkGetWithinHandoff is BenchmarkHandoff with a timed wait: the
// value arrives from another goroutine well before the timeout.
func BenchmarkGetWithinHandoff(b *testing.B) {
	b.Run("future", func(b *testing.B) {
		reqs := make(chan *future.Promise[int])
		done := resolver(reqs, func(p *future.Promise[int]) { p.Resolve(42, nil) })
		b.ReportAllocs()
		for b.Loop() {
			p := future.NewPromise[int](nil)
			reqs <- p
			if _, err := p.Future().GetWithin(time.Second); err != nil {
				b.Fatal(err)
			}
		}
		close(reqs)
		<-done
	})
	// The waiter parks at once: its source says the result is not soon,
	// as crisp's calls say while the actor is busy with another message.
	// Each iteration also allocates the source's cell (16 bytes).
	b.Run("future, parked", func(b *testing.B) {
		reqs := make(chan *future.Promise[int])
		done := resolver(reqs, func(p *future.Promise[int]) { p.Resolve(42, nil) })
		b.ReportAllocs()
		for b.Loop() {
			p := future.NewPromise[int](nil)
			var cell any = notSoon{}
			plumb.SetSourceAt(p, &cell)
			reqs <- p
			if _, err := p.Future().GetWithin(time.Second); err != nil {
				b.Fatal(err)
			}
		}
		close(reqs)
		<-done
	})
	b.Run("buffered channel and timer baseline", func(b *testing.B) {
		reqs := make(chan chan int)
		done := resolver(reqs, func(c chan int) { c <- 42 })
		b.ReportAllocs()
		for b.Loop() {
			c := make(chan int, 1)
			reqs <- c
			t := time.NewTimer(time.Second)
			select {
			case <-c:
				t.Stop()
			case <-t.C:
				b.Fatal("timed out")
			}
		}
		close(reqs)
		<-done
	})
}

// callbacks is the plain way to run functions once a value is set: a
// mutex, a flag and a slice.
type callbacks struct {
	mu  sync.Mutex
	set bool
	v   int
	fns []func()
}

func (c *callbacks) onSet(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set {
		return false
	}
	c.fns = append(c.fns, fn)
	return true
}

func (c *callbacks) resolve(v int) {
	c.mu.Lock()
	c.v, c.set = v, true
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func BenchmarkOnResolve(b *testing.B) {
	b.Run("future", func(b *testing.B) {
		n := 0
		fn := func() { n++ }
		b.ReportAllocs()
		for b.Loop() {
			p := future.NewPromise[int](nil)
			plumb.OnResolve(p.Future(), fn)
			p.Resolve(42, nil)
		}
		if n != b.N {
			b.Fatalf("%d callbacks ran, want %d", n, b.N)
		}
	})
	b.Run("mutex and slice baseline", func(b *testing.B) {
		n := 0
		fn := func() { n++ }
		b.ReportAllocs()
		for b.Loop() {
			c := new(callbacks)
			c.onSet(fn)
			c.resolve(42)
		}
		if n != b.N {
			b.Fatalf("%d callbacks ran, want %d", n, b.N)
		}
	})
}

// notSoon is a source that says the result is not soon: its waiters
// park at once.
type notSoon struct{}

func (notSoon) Clock() clock.Clock { return nil }
func (notSoon) CheckWait() error   { return nil }
func (notSoon) ResultSoon() bool   { return false }
