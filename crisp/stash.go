package crisp

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
	"github.com/crisprt/crisp/policy"
)

// Stashes keep what the runtime has finished with, Tell and Send
// messages and policy items, for later uses, which take them instead of allocating.
// Each processor has a stack of its own of each kind, used only while
// the goroutine is pinned to that processor (ready.Pin), so without
// atomics; a stack that fills hands its whole batch to its kind's depot,
// from which a processor whose stack is empty takes a batch. One lock
// per batch, not per object: the depot is what lets an object finished
// on one processor serve a use on another, as in a flood, where the
// sender and the receiving actor's runner sit on different processors
// (fork-join: the driver sends, the workers finish). A processor
// numbered beyond the stacks' count (GOMAXPROCS over 64) has none: its
// uses allocate, and what it finishes goes to the collector.
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
//
// Each kind has its fast path written out: one implementation for Tells
// and items, generic or told apart by a constant argument, made
// throughput-4x100 15% slower as a whole process (20 alternations, AMD
// EPYC; with the links as methods of a type parameter, called through
// the generic dictionary, take and put were 14% of its CPU profile).
// They share the depot's code.
const (
	stashBatch = 64 // objects in a batch
	depotMax   = 16 // batches a depot keeps; beyond, a full batch goes to the collector
)

// depot holds full batches of one kind of finished object, each a
// stack of stashBatch linked as its kind links them.
type depot struct {
	n       atomic.Int32 // len(batches), read without the lock
	mu      sync.Mutex
	batches []unsafe.Pointer
}

// take removes and returns a batch, or returns nil.
func (d *depot) take() unsafe.Pointer {
	if d.n.Load() == 0 {
		return nil
	}
	d.mu.Lock()
	var b unsafe.Pointer
	if n := len(d.batches); n > 0 {
		b = d.batches[n-1]
		d.batches[n-1] = nil
		d.batches = d.batches[:n-1]
		d.n.Store(int32(n - 1))
	}
	d.mu.Unlock()
	return b
}

// put keeps batch b unless the depot is full (then b goes to the
// collector).
func (d *depot) put(b unsafe.Pointer) {
	if d.n.Load() >= depotMax {
		return
	}
	d.mu.Lock()
	if len(d.batches) < depotMax {
		d.batches = append(d.batches, b)
		d.n.Store(int32(len(d.batches)))
	}
	d.mu.Unlock()
}

// stack is one processor's stack of finished objects of one kind, n of
// them, linked as the kind links them. A type parameter only for its
// fields: the fast paths below are written per kind, and compiled for
// it.
type stack[T any] struct {
	head *T
	n    int
	_    [48]byte // a cache line of its own
}

// refill puts rest, what is left of a batch taken from a depot, on the
// calling goroutine's processor's stack if that is still empty (else
// rest goes to the collector).
func refill[T any](stacks *[64]stack[T], rest *T) {
	if p := ready.Pin(); p < len(stacks) {
		s := &stacks[p]
		raceAcquire(unsafe.Pointer(s))
		if s.head == nil {
			s.head, s.n = rest, stashBatch-1
		}
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
}

// tellStacks holds each processor's finished Tell messages, linked by
// their next field.
var (
	tellStacks [64]stack[tellMem]
	tellDepot  depot
)

// takeTell returns a finished Tell message from the calling goroutine's
// processor's stack, or else from a batch of the depot (the rest of the
// batch fills the stack), or nil.
func takeTell() *tellMem {
	if p := ready.Pin(); p < len(tellStacks) {
		s := &tellStacks[p]
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
	if tellDepot.n.Load() == 0 {
		return nil
	}
	return takeTellBatch()
}

// takeTellBatch takes a batch from the depot, keeps its first message
// and puts the rest on the calling goroutine's processor's stack if that
// is still empty (else they go to the collector).
func takeTellBatch() *tellMem {
	b := (*tellMem)(tellDepot.take())
	if b == nil {
		return nil
	}
	rest := (*tellMem)(unsafe.Pointer(b.next))
	b.next = nil
	refill(&tellStacks, rest)
	return b
}

// putTell keeps x, a finished Tell message cleared of its use, on the
// calling goroutine's processor's stack; a full stack's batch goes to
// the depot first.
func putTell(x *tellMem) {
	var full *tellMem
	if p := ready.Pin(); p < len(tellStacks) {
		s := &tellStacks[p]
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
	if full != nil {
		tellDepot.put(unsafe.Pointer(full))
	}
}

// sendStacks holds each processor's finished Send messages
// (sendvalue.go), linked by their next: a stash of their own, for they
// are larger than a Tell's.
var (
	sendStacks [64]stack[sendMem]
	sendDepot  depot
)

// takeSend is takeTell for Send messages.
func takeSend() *sendMem {
	if p := ready.Pin(); p < len(sendStacks) {
		s := &sendStacks[p]
		raceAcquire(unsafe.Pointer(s))
		if x := s.head; x != nil {
			s.head = (*sendMem)(unsafe.Pointer(x.next))
			s.n--
			raceRelease(unsafe.Pointer(s))
			ready.Unpin()
			x.next = nil
			return x
		}
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
	if sendDepot.n.Load() == 0 {
		return nil
	}
	return takeSendBatch()
}

// takeSendBatch is takeTellBatch for Send messages: apart from takeSend,
// whose frame is under every handler's Send.
func takeSendBatch() *sendMem {
	b := (*sendMem)(sendDepot.take())
	if b == nil {
		return nil
	}
	rest := (*sendMem)(unsafe.Pointer(b.next))
	b.next = nil
	refill(&sendStacks, rest)
	return b
}

// putSend is putTell for a Send message, cleared of its use.
func putSend(x *sendMem) {
	var full *sendMem
	if p := ready.Pin(); p < len(sendStacks) {
		s := &sendStacks[p]
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
	if full != nil {
		sendDepot.put(unsafe.Pointer(full))
	}
}

// itemStacks holds each processor's policy items that messages no
// longer need (giveItemBack), for messages that enter a policy's queue
// (item). Under EDF and FIFO a message that is not plain (listed while
// its actor holds other work: a suspended process, a continuation, a
// context) has its item made when it enters the queue, and it served
// only to order the message there: once popped it is given back.
// Measured on ABS Listing 1 with Then at N = 100,000, where every
// message is listed, before items were given back: item's allocation
// 8.8% of the CPU. One spare per processor held them until the
// twentieth session: bench's bank with Await then made 166 bytes of
// items a transfer (of 840). Items are linked by their runtime
// reference (plumb.Ref), which a spare item does not need.
var (
	itemStacks [64]stack[policy.Item]
	itemDepot  depot
)

// itemNext returns the item it links to.
func itemNext(it *policy.Item) *policy.Item {
	n, _ := (*plumb.Ref(unsafe.Pointer(it))).(*policy.Item)
	return n
}

// setItemNext links it to n.
func setItemNext(it, n *policy.Item) {
	if n == nil {
		*plumb.Ref(unsafe.Pointer(it)) = nil
		return
	}
	*plumb.Ref(unsafe.Pointer(it)) = n
}

// takeItem is takeTell for policy items.
func takeItem() *policy.Item {
	if p := ready.Pin(); p < len(itemStacks) {
		s := &itemStacks[p]
		raceAcquire(unsafe.Pointer(s))
		if it := s.head; it != nil {
			s.head = itemNext(it)
			s.n--
			raceRelease(unsafe.Pointer(s))
			ready.Unpin()
			setItemNext(it, nil)
			return it
		}
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
	b := (*policy.Item)(itemDepot.take())
	if b == nil {
		return nil
	}
	rest := itemNext(b)
	setItemNext(b, nil)
	refill(&itemStacks, rest)
	return b
}

// putItem is putTell for a policy item, cleared of its use.
func putItem(it *policy.Item) {
	var full *policy.Item
	if p := ready.Pin(); p < len(itemStacks) {
		s := &itemStacks[p]
		raceAcquire(unsafe.Pointer(s))
		if s.n == stashBatch {
			full, s.head, s.n = s.head, nil, 0
		}
		setItemNext(it, s.head)
		s.head = it
		s.n++
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
	if full != nil {
		itemDepot.put(unsafe.Pointer(full))
	}
}

// procStack is one processor's Procs of runners that ended, kept by
// their system for the runners it starts next (newProc). A runner is a
// goroutine with a Proc, started for each actor that goes from idle to
// busy; in fib, the rings and chameneos, and in request-reply beside
// CPU-bound goroutines, a runner serves one or a few messages and ends.
// Only a Proc nothing reaches once its runner has ended is kept
// (keepProc): one that never suspended a process, slept or used the rest
// of procExtra, not a group's runner's (part of a larger record), of an
// actor without a mailbox bound (whose admission records Procs). A
// stack is a small array, not batches: runners end and start on the
// same processors, the senders', where the go statement puts new
// runners.
//
// The stacks are the system's, not the process's, and a kept Proc points
// to its system's ghost, not to its actor, until it is reused: a Proc
// kept past its handler, which its documentation forbids, still reads
// its own system's clock (Now), as before, and does not keep an idle
// actor from the collector.
//
// Bench quick, crisp and phony, 4 alternations (AMD EPYC, 2 vCPU;
// BENCHMARKS.md, twenty-first session), bytes an operation: fib 477 ->
// 350, chameneos 438 -> 262, big 206 -> 118, ring-1k 36 -> 27; quiet,
// the times within spread. Beside two goroutines that never yield, where
// each collection costs a time slice of theirs: crisp/phony fib 17.6 ->
// 7.7, chameneos 4.4 -> 1.1, big 2.1 -> 1.1, request-reply 416 -> 352
// bytes a Call.
type procStack struct {
	ps [procStashMax]*Proc
	n  int
	_  [64 - 8]byte // a cache line of its own beside the array's
}

// procStashMax is the most Procs a processor's stack keeps.
const procStashMax = 8

// newProcStacks returns a system's stacks: one per processor, up to 64.
func newProcStacks() []procStack { return make([]procStack, min(runtime.GOMAXPROCS(0), 64)) }

// keepable reports whether nothing can reach p, the Proc of a runner of
// a that has ended, but the goroutine that ran it: see procStack.
func keepable(a *core, p *Proc) bool {
	return p.done && p.x == nil && p.gw == nil && p.epoch == 0 && a.bound == nil
}

// newProc returns the Proc of a runner of a starting on the calling
// goroutine: one its processor's stack keeps, else a new one.
func newProc(a *core) *Proc {
	g := gid.Current()
	stacks := a.sys.procs
	if i := ready.Pin(); i < len(stacks) {
		s := &stacks[i]
		raceAcquire(unsafe.Pointer(s))
		if s.n > 0 {
			s.n--
			p := s.ps[s.n]
			s.ps[s.n] = nil
			raceRelease(unsafe.Pointer(s))
			ready.Unpin()
			p.reuse(a, g)
			return p
		}
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
	return &Proc{a: a, g: g}
}

// keepProc keeps p, the Proc of a runner of a that is ending, for
// newProc, if nothing can reach it once the runner has ended; see
// procStack.
func keepProc(a *core, p *Proc) {
	if !keepable(a, p) {
		return
	}
	p.setActor(a.sys.ghost) // an idle actor nothing else reaches stays garbage
	stacks := a.sys.procs
	if i := ready.Pin(); i < len(stacks) {
		s := &stacks[i]
		raceAcquire(unsafe.Pointer(s))
		if s.n < procStashMax {
			s.ps[s.n] = p
			s.n++
		}
		raceRelease(unsafe.Pointer(s))
	}
	ready.Unpin()
}
