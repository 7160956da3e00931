package crisp

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/crisprt/crisp/internal/ready"
)

// Finished Tell messages wait in stashes for later Tells, which take
// them instead of allocating. Each processor has a stash of its own,
// used only while the goroutine is pinned to that processor
// (ready.Pin), so without atomics; a stash that fills hands its whole
// batch to a shared depot, from which a processor whose stash is empty
// takes a batch. One lock per batch, not per message: the depot is what
// lets a message finished on one processor serve a Tell sent from
// another, as in a flood, where the sender and the receiving actor's
// runner sit on different processors (fork-join: the driver sends, the
// workers finish). A processor's number beyond the stashes' count
// (GOMAXPROCS over 64) has none: its Tells allocate, and what it
// finishes goes to the collector.
//
// Before: an actor's reuse slot and one spare per processor held a
// message each, and in such a flood nearly every Tell allocated
// (fork-join 111 bytes an operation, phony 9).
const (
	stashBatch = 64 // messages in a stash's batch
	depotMax   = 16 // batches the depot keeps; beyond, a full batch goes to the collector
)

// tellStash is one processor's stack of finished Tell messages, linked
// by their next field, n of them.
type tellStash struct {
	head *tellMem
	n    int
	_    [48]byte // a cache line of its own
}

var stashes [64]tellStash

// depot holds full batches of finished Tell messages, each a stack of
// stashBatch linked by next.
var depot struct {
	n       atomic.Int32 // len(batches), read without the lock
	mu      sync.Mutex
	batches []*tellMem
}

// takeTell returns a finished Tell message from the calling goroutine's
// processor's stash, or else from a batch of the depot (the rest of the
// batch fills the stash), or nil.
func takeTell() *tellMem {
	if p := ready.Pin(); p < len(stashes) {
		s := &stashes[p]
		raceAcquire(unsafe.Pointer(s))
		if x := s.head; x != nil {
			s.head = (*tellMem)(unsafe.Pointer(x.next))
			s.n--
			raceRelease(unsafe.Pointer(s))
			ready.Unpin()
			x.next = nil
			return x
		}
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
	if depot.n.Load() == 0 {
		return nil
	}
	return takeBatch()
}

// takeBatch takes a batch from the depot, keeps its first message and
// puts the rest in the calling goroutine's processor's stash if that is
// still empty (else they go to the collector).
func takeBatch() *tellMem {
	depot.mu.Lock()
	var b *tellMem
	if n := len(depot.batches); n > 0 {
		b = depot.batches[n-1]
		depot.batches[n-1] = nil
		depot.batches = depot.batches[:n-1]
		depot.n.Store(int32(n - 1))
	}
	depot.mu.Unlock()
	if b == nil {
		return nil
	}
	rest := (*tellMem)(unsafe.Pointer(b.next))
	b.next = nil
	if p := ready.Pin(); p < len(stashes) {
		s := &stashes[p]
		raceAcquire(unsafe.Pointer(s))
		if s.head == nil {
			s.head, s.n = rest, stashBatch-1
		}
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
	return b
}

// stashTell keeps x, a finished Tell message cleared of its use, in the
// calling goroutine's processor's stash; a full stash's batch goes to
// the depot first.
func stashTell(x *tellMem) {
	var full *tellMem
	if p := ready.Pin(); p < len(stashes) {
		s := &stashes[p]
		raceAcquire(unsafe.Pointer(s))
		if s.n == stashBatch {
			full, s.head, s.n = s.head, nil, 0
		}
		x.next = (*message)(unsafe.Pointer(s.head))
		s.head = x
		s.n++
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
	if full != nil && depot.n.Load() < depotMax {
		depot.mu.Lock()
		if len(depot.batches) < depotMax {
			depot.batches = append(depot.batches, full)
			depot.n.Store(int32(len(depot.batches)))
		}
		depot.mu.Unlock()
	}
}
