package future

import (
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/crisprt/crisp/internal/park"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
)

// A waiter node is 32 bytes, a Go size class, whether it holds a
// channel or a callback: crisp registers a suspended process or a pending
// continuation itself, with no closure, and the node is all a pending
// Then or a suspended Await adds to the future.
func TestAWaiterNodeIs32Bytes(t *testing.T) {
	if s := unsafe.Sizeof(node{}); s > 32 {
		t.Fatalf("a future's waiter node is %d bytes, past the 32-byte size class", s)
	}
}

// A goroutine blocked in Get waits on a getWaiter of its own, 48 bytes
// with its node, and on no channel (a channel's node and the channel
// were 128 bytes, and the runtime's record of the blocked goroutine came
// on top); the resolution wakes it and counts it as ready until it runs.
func TestGetWaitsOnAWaiterOfItsOwnNotAChannel(t *testing.T) {
	if s := unsafe.Sizeof(getWaiter{}); s > 48 {
		t.Fatalf("a getWaiter is %d bytes, past the 48-byte size class", s)
	}
	twoBlockedWaiters(t, "Get", (*Future[int]).Get,
		func(w plumb.Waker) bool { _, ok := w.(*getWaiter); return ok }, nil)
}

// twoBlockedWaiters has two goroutines wait with get (named name) on a
// fresh future, checks that two nodes are listed, each of the kind own
// accepts, and whatever more check checks of the future then (if not
// nil); resolves it, and checks that both goroutines got the result
// and that nothing stays counted as ready.
func twoBlockedWaiters(t *testing.T, name string, get func(*Future[int]) (int, error), own func(plumb.Waker) bool, check func(*testing.T, *Future[int])) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		p := NewPromise[int](nil)
		f := p.Future()
		got := make(chan int, 2)
		for range 2 {
			go func() {
				v, err := get(f)
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
				got <- v
			}()
		}
		synctest.Wait() // both block in get
		waiters := 0
		for n := f.w.Load(); n != nil; n = n.next {
			if !own(n.w) {
				t.Fatalf("a %s waits on a %T", name, n.w)
			}
			waiters++
		}
		if waiters != 2 {
			t.Fatalf("%d waiters listed for two goroutines in %s", waiters, name)
		}
		if check != nil {
			check(t, f)
		}
		p.Resolve(7, nil)
		if a, b := <-got, <-got; a != 7 || b != 7 {
			t.Fatalf("%s returned %d and %d, want 7", name, a, b)
		}
		if n := ready.N(); n != 0 {
			t.Fatalf("%d goroutines still counted as ready", n)
		}
	})
}

// timedWaiters counts the timedWaiters listed on f, and those of them a
// goroutine waits on.
func timedWaiters[T any](f *Future[T]) (listed, waiting int) {
	for n := f.w.Load(); n != nil && n != resolved && n != resolving; n = n.next {
		if w, ok := n.w.(*timedWaiter); ok {
			listed++
			if w.state.Load() == twWaiting {
				waiting++
			}
		}
	}
	return listed, waiting
}

// A goroutine blocked in GetWithin on the real clock waits on a
// timedWaiter of its own, 48 bytes, and a callback timer, with no
// channel; the resolution wakes it and counts it as ready until it runs.
func TestATimedGetWaitsOnAWaiterOfItsOwnNotAChannel(t *testing.T) {
	// Under the race detector a spot is a WaitGroup, 16 bytes, not 8.
	if s := unsafe.Sizeof(timedWaiter{}); s > 40+unsafe.Sizeof(park.Spot{}) {
		t.Fatalf("a timedWaiter is %d bytes, past the 48-byte size class", s)
	}
	twoBlockedWaiters(t, "GetWithin",
		func(f *Future[int]) (int, error) { return f.GetWithin(time.Hour) },
		func(w plumb.Waker) bool { _, ok := w.(*timedWaiter); return ok },
		func(t *testing.T, f *Future[int]) {
			if listed, waiting := timedWaiters(f); listed != 2 || waiting != 2 {
				t.Fatalf("%d waiters listed, %d waiting, for two goroutines in GetWithin", listed, waiting)
			}
		})
}

// A wait that times out leaves its node listed (the list is never
// relinked), and the next timed wait takes it over: a caller polling a
// future with short timeouts does not grow its list.
func TestTimedOutWaitersAreTakenOverNotPiledUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPromise[int](nil)
		f := p.Future()
		for i := range 100 {
			if _, err := f.GetWithin(time.Millisecond); err != ErrTimeout {
				t.Fatalf("wait %d: %v, want a timeout", i, err)
			}
		}
		if listed, _ := timedWaiters(f); listed != 1 {
			t.Fatalf("%d nodes listed after 100 timed-out waits, one at a time; want 1", listed)
		}
		if w := f.w.Load().w.(*timedWaiter); w.state.Load() != twFree {
			t.Fatalf("the node's state is %d after 100 waits; want free (%d)", w.state.Load(), twFree)
		}

		// Three at once: the free node and two new ones; one waiter each.
		got := make(chan error, 3)
		for _, d := range []time.Duration{time.Second, time.Hour, time.Hour} {
			go func() {
				_, err := f.GetWithin(d)
				got <- err
			}()
		}
		synctest.Wait()
		if listed, waiting := timedWaiters(f); listed != 3 || waiting != 3 {
			t.Fatalf("%d listed, %d waiting, for three goroutines in GetWithin; want 3 and 3", listed, waiting)
		}
		<-time.After(time.Second) // on the bubble's clock: the first wait times out
		if err := <-got; err != ErrTimeout {
			t.Fatalf("the one-second wait: %v, want a timeout", err)
		}
		synctest.Wait()
		if _, waiting := timedWaiters(f); waiting != 2 {
			t.Fatalf("%d waiting after one of three timed out; want 2", waiting)
		}
		p.Resolve(7, nil)
		for range 2 {
			if err := <-got; err != nil {
				t.Fatalf("an hour-long wait: %v, want the result", err)
			}
		}
		if n := ready.N(); n != 0 {
			t.Fatalf("%d goroutines still counted as ready", n)
		}
	})
}

// A wait taking over a free node after the resolution has walked the
// list (a wait that read the list just before the resolution) would not
// be woken: it sees the future resolved and leaves the node free.
func TestATakeOverAfterTheResolutionLeavesTheNodeFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPromise[int](nil)
		f := p.Future()
		if _, err := f.GetWithin(time.Millisecond); err != ErrTimeout {
			t.Fatalf("%v, want a timeout", err)
		}
		o := f.w.Load().w.(*timedWaiter) // free, as a wait that read the list would find it
		p.Resolve(3, nil)
		if took, done := f.takeOver(o); took || !done {
			t.Fatalf("took over a node of a resolved future (took %v, done %v)", took, done)
		}
		if got := o.state.Load(); got != twFree {
			t.Fatalf("the node's state is %d; want free (%d)", got, twFree)
		}
	})
}
