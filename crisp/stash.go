package crisp

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/policy"
)

// A stash keeps objects the runtime has finished with (Tell messages,
// policy items) for later uses, which take them instead of allocating.
// Each processor has a stack of its own, used only while the goroutine
// is pinned to that processor (ready.Pin), so without atomics; a stack
// that fills hands its whole batch to the stash's depot, from which a
// processor whose stack is empty takes a batch. One lock per batch, not
// per object: the depot is what lets an object finished on one
// processor serve a use on another, as in a flood, where the sender and
// the receiving actor's runner sit on different processors (fork-join:
// the driver sends, the workers finish). A processor numbered beyond
// the stacks' count (GOMAXPROCS over 64) has none: its uses allocate,
// and what it finishes goes to the collector.
//
// Before, an actor's reuse slot and one spare per processor held a Tell
// message each, and in such a flood nearly every Tell allocated:
// fork-join 111 bytes an operation (phony 9), counting 107, chameneos
// 518 (bench quick, quiet; 61, 83 and 413 with the stash, and crisp's
// time over phony's 1.39 -> 1.34, 1.62 -> 1.47, 1.51 -> 1.47,
// throughput-4x100 2.07 -> 1.78, fib 3.13 -> 2.54, 6 alternations, AMD
// EPYC; BENCHMARKS.md, twentieth session). Beside CPU-bound goroutines
// the flood's backlog is the allocation: the sender runs ahead of the
// receivers, and every queued message is live at once.
const (
	stashBatch = 64 // objects in a batch
	depotMax   = 16 // batches a depot keeps; beyond, a full batch goes to the collector
)

// stashable is the pointer type of what a stash holds: linked, while it
// waits, by a field of its own.
type stashable[T any] interface {
	*T
	stashNext() *T
	setStashNext(*T)
}

// stash holds finished objects of type T (see above).
type stash[T any, P stashable[T]] struct {
	procs [64]struct {
		head P // linked by stashNext, n of them
		n    int
		_    [48]byte // a cache line of its own
	}
	depot struct {
		n       atomic.Int32 // len(batches), read without the lock
		mu      sync.Mutex
		batches []P // each a stack of stashBatch
	}
}

// take returns an object from the calling goroutine's processor's
// stack, or else from a batch of the depot (the rest of the batch fills
// the stack), or nil.
func (s *stash[T, P]) take() P {
	if i := ready.Pin(); i < len(s.procs) {
		pr := &s.procs[i]
		raceAcquire(unsafe.Pointer(pr))
		if x := pr.head; x != nil {
			pr.head = x.stashNext()
			pr.n--
			raceRelease(unsafe.Pointer(pr))
			ready.Unpin()
			x.setStashNext(nil)
			return x
		}
		raceRelease(unsafe.Pointer(pr))
	}
	ready.Unpin()
	if s.depot.n.Load() == 0 {
		return nil
	}
	return s.takeBatch()
}

// takeBatch takes a batch from the depot, keeps its first object and
// puts the rest on the calling goroutine's processor's stack if that is
// still empty (else they go to the collector).
func (s *stash[T, P]) takeBatch() P {
	d := &s.depot
	d.mu.Lock()
	var b P
	if n := len(d.batches); n > 0 {
		b = d.batches[n-1]
		d.batches[n-1] = nil
		d.batches = d.batches[:n-1]
		d.n.Store(int32(n - 1))
	}
	d.mu.Unlock()
	if b == nil {
		return nil
	}
	rest := P(b.stashNext())
	b.setStashNext(nil)
	if i := ready.Pin(); i < len(s.procs) {
		pr := &s.procs[i]
		raceAcquire(unsafe.Pointer(pr))
		if pr.head == nil {
			pr.head, pr.n = rest, stashBatch-1
		}
		raceRelease(unsafe.Pointer(pr))
	}
	ready.Unpin()
	return b
}

// put keeps x, finished with and cleared, on the calling goroutine's
// processor's stack; a full stack's batch goes to the depot first.
func (s *stash[T, P]) put(x P) {
	var full P
	if i := ready.Pin(); i < len(s.procs) {
		pr := &s.procs[i]
		raceAcquire(unsafe.Pointer(pr))
		if pr.n == stashBatch {
			full, pr.head, pr.n = pr.head, nil, 0
		}
		x.setStashNext(pr.head)
		pr.head = x
		pr.n++
		raceRelease(unsafe.Pointer(pr))
	}
	ready.Unpin()
	if d := &s.depot; full != nil && d.n.Load() < depotMax {
		d.mu.Lock()
		if len(d.batches) < depotMax {
			d.batches = append(d.batches, full)
			d.n.Store(int32(len(d.batches)))
		}
		d.mu.Unlock()
	}
}

// tells holds finished Tell messages, as tellMem: a Tell to any actor
// may take one (newTell, tell.recycle).
var tells stash[tellMem, *tellMem]

func (x *tellMem) stashNext() *tellMem     { return (*tellMem)(unsafe.Pointer(x.next)) }
func (x *tellMem) setStashNext(n *tellMem) { x.next = (*message)(unsafe.Pointer(n)) }

// items holds policy items that messages no longer need (giveItemBack),
// for messages that enter a policy's queue (item). Under EDF and FIFO a
// message that is not plain (listed while its actor holds other work: a
// suspended process, a continuation, a context) has its item made when
// it enters the queue, and it served only to order the message there:
// once popped it is given back. Measured on ABS Listing 1 with Then at
// N = 100,000, where every message is listed, before items were given
// back: item's allocation 8.8% of the CPU. One spare per processor held
// them until the twentieth session: bench's bank with Await then made
// 166 bytes of items a transfer (of 840).
var items stash[itemNode, *itemNode]

// itemNode is a policy item as the items stash sees it: linked by its
// runtime reference (plumb.Ref), which a spare item does not need.
type itemNode policy.Item

func (x *itemNode) stashNext() *itemNode {
	n, _ := (*plumb.Ref(unsafe.Pointer(x))).(*itemNode)
	return n
}

func (x *itemNode) setStashNext(n *itemNode) {
	if n == nil {
		*plumb.Ref(unsafe.Pointer(x)) = nil
		return
	}
	*plumb.Ref(unsafe.Pointer(x)) = n
}
