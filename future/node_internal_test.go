package future

import (
	"testing"
	"testing/synctest"
	"unsafe"

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
	synctest.Test(t, func(t *testing.T) {
		p := NewPromise[int](nil)
		f := p.Future()
		got := make(chan int, 2)
		for range 2 {
			go func() {
				v, _ := f.Get()
				got <- v
			}()
		}
		synctest.Wait() // both block in Get
		waiters := 0
		for n := f.w.Load(); n != nil; n = n.next {
			if _, ok := n.w.(*getWaiter); !ok {
				t.Fatalf("a Get waits on a %T", n.w)
			}
			waiters++
		}
		if waiters != 2 {
			t.Fatalf("%d waiters listed for two goroutines in Get", waiters)
		}
		p.Resolve(7, nil)
		if a, b := <-got, <-got; a != 7 || b != 7 {
			t.Fatalf("Get returned %d and %d, want 7", a, b)
		}
		if n := ready.N(); n != 0 {
			t.Fatalf("%d goroutines still counted as ready", n)
		}
	})
}
