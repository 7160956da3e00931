// Package policy decides the order in which an actor takes its ready work.
//
// Each actor keeps its pending work (new messages and resumed
// continuations) in a [Queue] made by its [Policy]. The runtime pushes
// an [Item] when work becomes ready and pops the next item when the
// actor is free; it removes an item when its deadline passes before it
// starts, when its context ends, or when the actor stops. The policy sees, for each item,
// its deadline, arrival number, priority, tag, name, and whether it is a
// resumed continuation.
//
// [EDF] (earliest deadline first, the default), [FIFO] and [ByPriority]
// are built in. A custom policy is either one comparison function
// ([Func]) or a whole Queue type (any Policy implementation; [QueueFunc]
// adapts a constructor, and [Heap] is a ready-made binary heap to build
// one on). An actor takes its policy from crisp.WithPolicy. The
// conformance suite in policy/policytest checks a custom policy the way
// the built-ins are checked.
//
// A Queue is used by one actor at a time, always under that actor's lock:
// it needs no locking of its own. The built-in queues are binary heaps:
// Push, Pop and Remove cost O(log n) comparisons, Len O(1); none
// allocates except to grow its backing array.
package policy

import (
	"time"
	"unsafe"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/runq"
)

func init() {
	plumb.ItemRef = unsafe.Offsetof(Item{}.ref)
	plumb.PlainInArrivalOrder = func(p any) bool {
		b, ok := p.(builtin)
		return ok && (b.name == edf.name || b.name == fifo.name)
	}
	plumb.EarliestDeadlineFirst = func(p any) bool {
		b, ok := p.(builtin)
		return ok && b.name == edf.name
	}
}

// Item is what a policy sees of one unit of ready work. The runtime sets
// the fields before pushing the item and does not change them while it is
// queued; a Queue must only read them.
type Item struct {
	// Deadline is the start deadline of the message; the zero time means
	// none. A resumed continuation keeps its message's deadline (it can no
	// longer miss it: it has started).
	Deadline time.Time
	// Seq is the message's arrival number at its actor, increasing in
	// the order messages were accepted. A resumed continuation keeps it.
	Seq uint64
	// Priority is the sender's priority; larger is more urgent. Zero by
	// default.
	Priority int
	// Tag is any value the sender attached (a customer, a tenant, a
	// class of service); nil by default.
	Tag any
	// Name is the sender's name for the message, for diagnostics.
	Name string
	// Resumed is true for a continuation of a process that has already
	// started and suspended (await, suspend), false for a new message.
	Resumed bool

	// index is the item's position in the Heap holding it (see Heap),
	// meaningless when in none. An int32 placed here fills Resumed's
	// padding: crisp makes an Item for each message that enters a
	// policy's queue, and each word counts (issue 13).
	index int32

	ref any // the runtime's reference to the work the item stands for (see internal/plumb)
}

// Queue holds an actor's ready items in the policy's order. An item that
// has left the queue (through Pop or Remove) belongs to the runtime
// again, which may reuse it for another message: a queue must keep no
// reference to it.
//
// crisp checks every Pop against what it pushed, and Len after it, at
// O(1) cost: a queue that keeps what it pops, returns an item twice or
// one it was not given, loses one, or miscounts is rebuilt, and one that
// does so again at once is replaced by arrival order for that actor. A
// broken queue costs order, never work; it must still not block, for
// it runs under the actor's lock.
type Queue interface {
	// Push adds an item that is in no queue.
	Push(it *Item)
	// Pop removes and returns the item to run next, or nil if the queue
	// is empty.
	Pop() *Item
	// Remove takes a queued item out of the queue, reporting whether it
	// was there.
	Remove(it *Item) bool
	// Len reports how many items are queued.
	Len() int
}

// Policy makes the queue of each actor that uses it. A Policy value may
// be shared by many actors; each gets its own Queue.
type Policy interface {
	NewQueue() Queue
}

// QueueFunc adapts a queue constructor to the Policy interface.
type QueueFunc func() Queue

// NewQueue calls f.
func (f QueueFunc) NewQueue() Queue { return f() }

// EDF returns the earliest-deadline-first policy, the default: items with
// earlier deadlines first, items without a deadline after every deadlined
// one, ties (equal deadlines, or none) in arrival order.
func EDF() Policy { return edf }

// FIFO returns the arrival-order policy: items in the order their
// messages arrived, whatever their deadlines. A resumed continuation keeps
// its message's place.
func FIFO() Policy { return fifo }

// ByPriority returns the priority policy: larger Priority first, earliest
// deadline first among equal priorities, then arrival order.
func ByPriority() Policy { return prio }

// Func returns a policy ordered by cmp, which returns a negative number
// when a must run before b, a positive one when b must run before a, and
// zero when either may. Ties are broken by arrival order, so the order is
// total and stable whatever cmp does with ties.
//
// cmp may panic (say, on a tag of an unexpected type); the runtime then
// fails the work being ordered with an error and keeps the actor running.
func Func(cmp func(a, b *Item) int) Policy {
	if cmp == nil {
		panic("crisp: policy.Func with a nil comparison")
	}
	return funcPolicy{cmp}
}

var (
	edf  = builtin{"edf", lessEDF}
	fifo = builtin{"fifo", lessFIFO}
	prio = builtin{"priority", lessPriority}
)

type builtin struct {
	name string
	less func(a, b *Item) bool
}

func (b builtin) NewQueue() Queue { return newHeap(b.less) }
func (b builtin) String() string  { return b.name }

type funcPolicy struct{ cmp func(a, b *Item) int }

func (f funcPolicy) NewQueue() Queue { return NewHeap(f.cmp) }
func (f funcPolicy) String() string  { return "func" }

func lessEDF(a, b *Item) bool {
	if c := deadline.Compare(a.Deadline, b.Deadline); c != 0 {
		return c < 0
	}
	return a.Seq < b.Seq
}

func lessFIFO(a, b *Item) bool { return a.Seq < b.Seq }

func lessPriority(a, b *Item) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return lessEDF(a, b)
}

// Heap is a Queue ordered by a comparison, with arrival order breaking
// ties. It is the building block of every built-in policy and may serve
// inside custom queues (one Heap per class, say). Make one with NewHeap;
// the zero Heap is not usable.
//
// A Heap is a binary heap beside a sorted run. An item pushed in order
// (not before the last item appended to the run, as happens for
// messages without deadlines, or with the same relative deadline) joins
// the run in O(1); any other goes into the heap in O(log n). Pop takes
// the first of the two. A stream in arrival order therefore costs O(1)
// per item, however long the queue, and the worst case stays O(log n).
// Items carry their position, so Remove is O(1) from the run and
// O(log n) from the heap; an item is in at most one Heap at a time.
//
// If the comparison panics, the panic propagates and the Heap still
// holds every item it held, plus the one Push was adding, except perhaps
// the one Pop or Remove was taking out; their order is undefined until
// they are pushed into a fresh Heap. The crisp runtime does that.
type Heap struct {
	q runq.Queue[*Item]
}

func itemIndex(it *Item) *int32 { return &it.index }

// NewHeap returns an empty Heap ordered by cmp (see Func), ties broken by
// arrival order.
func NewHeap(cmp func(a, b *Item) int) *Heap {
	if cmp == nil {
		panic("crisp: policy.NewHeap with a nil comparison")
	}
	return newHeap(func(a, b *Item) bool {
		if c := cmp(a, b); c != 0 {
			return c < 0
		}
		return a.Seq < b.Seq
	})
}

func newHeap(less func(a, b *Item) bool) *Heap {
	return &Heap{q: *runq.New(less, itemIndex)}
}

// Len reports the number of queued items.
func (h *Heap) Len() int { return h.q.Len() }

// Push adds it to the heap.
func (h *Heap) Push(it *Item) { h.q.Push(it) }

// Pop removes and returns the first item, or nil if the heap is empty.
func (h *Heap) Pop() *Item { return h.q.Pop() }

// Peek returns the first item without removing it, or nil.
func (h *Heap) Peek() *Item { return h.q.Peek() }

// Remove takes it out of the heap, reporting whether it was there.
func (h *Heap) Remove(it *Item) bool { return h.q.Remove(it) }
