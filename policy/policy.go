// Package policy decides the order in which an actor takes its ready work.
//
// Each actor keeps its pending work (new messages and resumed
// continuations) in a Queue made by its Policy. The runtime pushes an Item
// when work becomes ready and pops the next item when the actor is free;
// it removes an item when its deadline passes before it starts, when its
// context ends, or when the actor stops. The policy sees, for each item,
// its deadline, arrival number, priority, tag, name, and whether it is a
// resumed continuation.
//
// EDF (earliest deadline first, the default), FIFO and Priority are built
// in. A custom policy is either one comparison function (Func) or a whole
// Queue type (any Policy implementation; QueueFunc adapts a constructor).
// The conformance suite in policy/policytest checks a custom policy the
// way the built-ins are checked.
//
// A Queue is used by one actor at a time, always under that actor's lock:
// it needs no locking of its own. The built-in queues are binary heaps:
// Push, Pop and Remove cost O(log n) comparisons, Len O(1); none
// allocates except to grow its backing array.
package policy

import (
	"time"

	"github.com/crisprt/crisp/deadline"
)

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
	// Payload is the runtime's reference to the work this item stands
	// for. Queues carry it and never look at it.
	Payload any

	index int // position in the Heap holding it; meaningless when in none
}

// Queue holds an actor's ready items in the policy's order.
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

// Priority returns the priority policy: larger Priority first, earliest
// deadline first among equal priorities, then arrival order.
func Priority() Policy { return prio }

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

func (b builtin) NewQueue() Queue { return &Heap{less: b.less} }
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
// inside custom queues (one Heap per class, say). Items carry their heap
// position, so Remove is O(log n) and an item is in at most one Heap at a
// time. Make one with NewHeap; the zero Heap is not usable.
//
// If the comparison panics, the panic propagates and the Heap still
// holds exactly the items it held (less the one Pop or Remove was taking
// out, plus the one Push was adding), but their order is undefined until
// they are pushed into a fresh Heap. The crisp runtime does that.
type Heap struct {
	less  func(a, b *Item) bool
	items []*Item
}

// NewHeap returns an empty Heap ordered by cmp (see Func), ties broken by
// arrival order.
func NewHeap(cmp func(a, b *Item) int) *Heap {
	if cmp == nil {
		panic("crisp: policy.NewHeap with a nil comparison")
	}
	return &Heap{less: func(a, b *Item) bool {
		if c := cmp(a, b); c != 0 {
			return c < 0
		}
		return a.Seq < b.Seq
	}}
}

// Len reports the number of queued items.
func (h *Heap) Len() int { return len(h.items) }

// Push adds it to the heap.
func (h *Heap) Push(it *Item) {
	it.index = len(h.items)
	h.items = append(h.items, it)
	h.up(it.index)
}

// Pop removes and returns the first item, or nil if the heap is empty.
func (h *Heap) Pop() *Item {
	n := len(h.items)
	if n == 0 {
		return nil
	}
	top := h.items[0]
	h.removeAt(0)
	return top
}

// Peek returns the first item without removing it, or nil.
func (h *Heap) Peek() *Item {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// Remove takes it out of the heap, reporting whether it was there.
func (h *Heap) Remove(it *Item) bool {
	i := it.index
	if i < 0 || i >= len(h.items) || h.items[i] != it {
		return false
	}
	h.removeAt(i)
	return true
}

// removeAt deletes the item at i. The removed item leaves first (index -1,
// slot cleared) so that a comparison that panics while the heap is being
// repaired cannot leave it half in.
func (h *Heap) removeAt(i int) {
	last := len(h.items) - 1
	gone := h.items[i]
	gone.index = -1
	if i != last {
		moved := h.items[last]
		h.items[i] = moved
		moved.index = i
	}
	h.items[last] = nil // drop the reference so the item can be collected
	h.items = h.items[:last]
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h *Heap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

// down sifts the item at i0 towards the leaves and reports whether it
// moved.
func (h *Heap) down(i0 int) bool {
	n := len(h.items)
	i := i0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			j = r
		}
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *Heap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}
