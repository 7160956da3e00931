package policy_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/policy/policytest"
)

var t0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

// The orders the built-in policies promise, written from their
// documentation rather than from their code.

// edfOrder puts earlier deadlines first and no deadline last.
func edfOrder(a, b *policy.Item) int {
	switch az, bz := a.Deadline.IsZero(), b.Deadline.IsZero(); {
	case az && bz:
		return 0
	case az:
		return 1
	case bz:
		return -1
	case a.Deadline.Before(b.Deadline):
		return -1
	case b.Deadline.Before(a.Deadline):
		return 1
	}
	return 0
}

// arrivalOnly leaves every decision to arrival order.
func arrivalOnly(a, b *policy.Item) int { return 0 }

// priorityOrder puts larger priorities first, then follows edfOrder.
func priorityOrder(a, b *policy.Item) int {
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	return edfOrder(a, b)
}

func TestBuiltinPoliciesPassTheSuite(t *testing.T) {
	t.Run("EDF", func(t *testing.T) {
		require.NoError(t, policytest.TestPolicy(policy.EDF(), edfOrder))
	})
	t.Run("FIFO", func(t *testing.T) {
		require.NoError(t, policytest.TestPolicy(policy.FIFO(), arrivalOnly))
	})
	t.Run("Priority", func(t *testing.T) {
		require.NoError(t, policytest.TestPolicy(policy.ByPriority(), priorityOrder))
	})
	t.Run("Func, customer A first", func(t *testing.T) {
		require.NoError(t, policytest.TestPolicy(policy.Func(customerAFirst), customerAFirst))
	})
	t.Run("Func, always a tie", func(t *testing.T) {
		require.NoError(t, policytest.TestPolicy(policy.Func(arrivalOnly), arrivalOnly))
	})
	t.Run("QueueFunc, resumed first", func(t *testing.T) {
		resumedThenEDF := func(a, b *policy.Item) int {
			if a.Resumed != b.Resumed {
				if a.Resumed {
					return -1
				}
				return 1
			}
			return edfOrder(a, b)
		}
		require.NoError(t, policytest.TestPolicy(policy.QueueFunc(newResumedFirst), resumedThenEDF))
	})
}

// The queues below are broken on purpose, each in one way, to show that
// the suite notices.

// lossyQueue counts every item pushed but silently drops one in seven.
type lossyQueue struct {
	h *policy.Heap
	n int
}

func (q *lossyQueue) Push(it *policy.Item) {
	q.n++
	if it.Seq%7 != 0 {
		q.h.Push(it)
	}
}

func (q *lossyQueue) Pop() *policy.Item {
	it := q.h.Pop()
	if it != nil {
		q.n--
	}
	return it
}

func (q *lossyQueue) Remove(it *policy.Item) bool {
	if q.h.Remove(it) {
		q.n--
		return true
	}
	return false
}

func (q *lossyQueue) Len() int { return q.n }

// stackQueue pops the last item pushed; same tells whether two items are
// the same item.
type stackQueue struct {
	items []*policy.Item
	same  func(a, b *policy.Item) bool
}

func (q *stackQueue) Push(it *policy.Item) { q.items = append(q.items, it) }

func (q *stackQueue) Pop() *policy.Item {
	if len(q.items) == 0 {
		return nil
	}
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}

func (q *stackQueue) Remove(it *policy.Item) bool {
	for i, x := range q.items {
		if q.same(x, it) {
			q.items = slices.Delete(q.items, i, i+1)
			return true
		}
	}
	return false
}

func (q *stackQueue) Len() int { return len(q.items) }

func identical(a, b *policy.Item) bool { return a == b }

// alwaysRemoves reports every Remove as done.
type alwaysRemoves struct{ *policy.Heap }

func (q alwaysRemoves) Remove(it *policy.Item) bool {
	q.Heap.Remove(it)
	return true
}

// neverRemoves reports a queued item removed but keeps it.
type neverRemoves struct{ *policy.Heap }

func (q neverRemoves) Remove(it *policy.Item) bool {
	if q.Heap.Remove(it) {
		q.Heap.Push(it)
		return true
	}
	return false
}

// latestDeadlineForNone gives items without a deadline a distant one, a
// tempting way to make them sort last that writes to the caller's item.
type latestDeadlineForNone struct{ *policy.Heap }

func (q latestDeadlineForNone) Push(it *policy.Item) {
	if it.Deadline.IsZero() {
		it.Deadline = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	q.Heap.Push(it)
}

// panicsWhenEmpty pops from an empty slice.
type panicsWhenEmpty struct{ stackQueue }

func (q *panicsWhenEmpty) Pop() *policy.Item {
	it := q.items[0]
	q.items = q.items[1:]
	return it
}

// downOnlyHeap is an EDF heap whose Remove repairs the heap only
// downwards: the item moved into the hole may belong above it. The bug
// shows only in large heaps after many operations.
type downOnlyHeap struct {
	items []*policy.Item
	pos   map[*policy.Item]int
}

func newDownOnlyHeap() policy.Queue { return &downOnlyHeap{pos: make(map[*policy.Item]int)} }

func (h *downOnlyHeap) Len() int { return len(h.items) }

func (h *downOnlyHeap) Push(it *policy.Item) {
	h.items = append(h.items, it)
	h.pos[it] = len(h.items) - 1
	for j := len(h.items) - 1; j > 0; {
		i := (j - 1) / 2
		if edfThenSeq(h.items[j], h.items[i]) >= 0 {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *downOnlyHeap) Pop() *policy.Item {
	if len(h.items) == 0 {
		return nil
	}
	it := h.items[0]
	h.removeAt(0)
	return it
}

func (h *downOnlyHeap) Remove(it *policy.Item) bool {
	i, ok := h.pos[it]
	if ok {
		h.removeAt(i)
	}
	return ok
}

func (h *downOnlyHeap) removeAt(i int) {
	last := len(h.items) - 1
	delete(h.pos, h.items[i])
	if i != last {
		h.items[i] = h.items[last]
		h.pos[h.items[i]] = i
	}
	h.items[last] = nil
	h.items = h.items[:last]
	for { // down only: the bug
		l := 2*i + 1
		if l >= len(h.items) {
			return
		}
		j := l
		if r := l + 1; r < len(h.items) && edfThenSeq(h.items[r], h.items[l]) < 0 {
			j = r
		}
		if edfThenSeq(h.items[j], h.items[i]) >= 0 {
			return
		}
		h.swap(i, j)
		i = j
	}
}

func (h *downOnlyHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = i
	h.pos[h.items[j]] = j
}

func edfHeap() *policy.Heap { return policy.NewHeap(edfOrder) }

func TestSuiteCatchesBrokenQueues(t *testing.T) {
	shared := edfHeap()
	tests := []struct {
		name  string
		p     policy.Policy
		order func(a, b *policy.Item) int
		want  []string // in the error: failing checks and what they saw
	}{{
		name: "a queue that loses items",
		p:    policy.QueueFunc(func() policy.Queue { return &lossyQueue{h: edfHeap()} }),
		want: []string{"push and pop: ", "Pop() returned nil with 1 item queued: {seq 7,"},
	}, {
		name:  "a queue that loses items, given an order",
		p:     policy.QueueFunc(func() policy.Queue { return &lossyQueue{h: edfHeap()} }),
		order: edfOrder,
		want:  []string{"order: ", "was queued and comes first"},
	}, {
		name:  "a stack where the order is EDF",
		p:     policy.QueueFunc(func() policy.Queue { return &stackQueue{same: identical} }),
		order: edfOrder,
		want:  []string{"order: pushed in arrival order: ", "was queued and comes first"},
	}, {
		name:  "no deadline taken for the earliest",
		p:     policy.Func(func(a, b *policy.Item) int { return a.Deadline.Compare(b.Deadline) }),
		order: edfOrder,
		want:  []string{"order: ", "deadline none", "was queued and comes first"},
	}, {
		name: "ties to the latest arrival",
		p: policy.Func(func(a, b *policy.Item) int {
			if c := edfOrder(a, b); c != 0 {
				return c
			}
			return cmp.Compare(b.Seq, a.Seq)
		}),
		order: edfOrder,
		want:  []string{"order of equals: items equal but for Seq", "order of resumed items: "},
	}, {
		name:  "Remove forgets to sift up",
		p:     policy.QueueFunc(newDownOnlyHeap),
		order: edfOrder,
		want:  []string{"random interleaving (growing, seed 2): ", "was queued and comes first"},
	}, {
		name: "Remove always reports true",
		p:    policy.QueueFunc(func() policy.Queue { return alwaysRemoves{edfHeap()} }),
		want: []string{"remove: ", "= true for an item removed from queue A"},
	}, {
		name: "Remove reports true and keeps the item",
		p:    policy.QueueFunc(func() policy.Queue { return neverRemoves{edfHeap()} }),
		want: []string{"remove: ", "Len() = 16, want 15"},
	}, {
		name: "Remove finds items by Seq",
		p: policy.QueueFunc(func() policy.Queue {
			return &stackQueue{same: func(a, b *policy.Item) bool { return a.Seq == b.Seq }}
		}),
		want: []string{"remove: ", "= true for an item never pushed", "push again: "},
	}, {
		name: "Push writes to items",
		p:    policy.QueueFunc(func() policy.Queue { return latestDeadlineForNone{edfHeap()} }),
		want: []string{"items unchanged: after queue A.Push(", "changed: Deadline none became 9999-01-01T00:00:00Z"},
	}, {
		name: "one queue for every caller",
		p:    policy.QueueFunc(func() policy.Queue { return shared }),
		want: []string{"remove from another queue: ", "independent queues: "},
	}, {
		name: "a queue that panics",
		p:    policy.QueueFunc(func() policy.Queue { return &panicsWhenEmpty{stackQueue{same: identical}} }),
		want: []string{"empty queue: the queue panicked in queue A.Pop(): runtime error: index out of range"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := policytest.TestPolicy(tt.p, tt.order)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

func TestSuiteAcceptsAStackWithoutAnOrder(t *testing.T) {
	// A stack keeps and removes items correctly; only its order is
	// unusual, and without an order the suite checks only the structure.
	p := policy.QueueFunc(func() policy.Queue { return &stackQueue{same: identical} })
	assert.NoError(t, policytest.TestPolicy(p, nil))
}

func TestEDFMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 1 + r.IntN(300)
		its := make([]*policy.Item, n) // in arrival order
		for i := range its {
			its[i] = &policy.Item{Seq: uint64(i + 1)}
			if r.IntN(5) != 0 { // a fifth have no deadline
				its[i].Deadline = t0.Add(time.Duration(r.IntN(40)) * time.Millisecond)
			}
		}
		want := slices.Clone(its)
		slices.SortStableFunc(want, edfOrder)

		q := policy.EDF().NewQueue()
		for _, i := range r.Perm(n) {
			q.Push(its[i])
		}
		require.Equal(t, seqs(want), seqs(popAll(q)))
	}
}

func TestPriorityOrder(t *testing.T) {
	q := policy.ByPriority().NewQueue()
	for _, it := range []*policy.Item{
		{Seq: 1, Name: "low, soon", Priority: -1, Deadline: t0},
		{Seq: 2, Name: "normal, none"},
		{Seq: 3, Name: "normal, late", Deadline: t0.Add(time.Hour)},
		{Seq: 4, Name: "high, none", Priority: 5},
		{Seq: 5, Name: "normal, soon", Deadline: t0},
		{Seq: 6, Name: "high, late", Priority: 5, Deadline: t0.Add(time.Hour)},
		{Seq: 7, Name: "normal, soon, later arrival", Deadline: t0},
		{Seq: 8, Name: "low, none", Priority: -1},
	} {
		q.Push(it)
	}
	assert.Equal(t, []string{
		"high, late", "high, none",
		"normal, soon", "normal, soon, later arrival", "normal, late", "normal, none",
		"low, soon", "low, none",
	}, names(popAll(q)))
}

func TestFuncBreaksTiesBySeq(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	q := policy.Func(arrivalOnly).NewQueue()
	its := make([]*policy.Item, 100)
	for i := range its {
		// Everything an order might look at differs, but cmp ignores it.
		its[i] = &policy.Item{Seq: uint64(i + 1), Priority: r.IntN(3), Deadline: t0.Add(time.Duration(r.IntN(9)))}
	}
	for _, i := range r.Perm(len(its)) {
		q.Push(its[i])
	}
	assert.Equal(t, seqs(its), seqs(popAll(q)))
}

func TestHeapPeek(t *testing.T) {
	h := edfHeap()
	assert.Nil(t, h.Peek())

	late := &policy.Item{Seq: 1, Deadline: t0.Add(time.Second)}
	soon := &policy.Item{Seq: 2, Deadline: t0}
	none := &policy.Item{Seq: 3}
	h.Push(late)
	assert.Same(t, late, h.Peek())
	h.Push(none)
	h.Push(soon)
	assert.Same(t, soon, h.Peek())
	assert.Same(t, soon, h.Peek(), "Peek leaves the item in place")
	assert.Equal(t, 3, h.Len())

	require.True(t, h.Remove(soon))
	assert.Same(t, late, h.Peek())
	assert.Same(t, late, h.Pop())
	assert.Same(t, none, h.Peek())
	assert.Same(t, none, h.Pop())
	assert.Nil(t, h.Peek())
}

func TestHeapRemoveFromTheMiddleKeepsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	h := edfHeap()
	its := make([]*policy.Item, 101)
	for i := range its {
		its[i] = &policy.Item{Seq: uint64(i + 1), Deadline: t0.Add(time.Duration(r.IntN(30)) * time.Millisecond)}
		if r.IntN(6) == 0 {
			its[i].Deadline = time.Time{}
		}
		h.Push(its[i])
	}
	removed := make(map[*policy.Item]bool)
	for h.Len() > 40 {
		// The item in the middle of the binary heap's array (an inner
		// node half the time, a leaf the rest), or, once that part is
		// empty, one from the middle of the sorted run (negative index).
		inHeap := 0
		for _, it := range its {
			if !removed[it] && policy.Index(it) >= 0 {
				inHeap++
			}
		}
		mid := slices.IndexFunc(its, func(it *policy.Item) bool {
			if inHeap > 0 {
				return !removed[it] && policy.Index(it) == inHeap/2
			}
			return !removed[it] && policy.Index(it) <= -2
		})
		require.NotEqual(t, -1, mid)
		require.True(t, h.Remove(its[mid]))
		assert.Equal(t, -1, policy.Index(its[mid]))
		removed[its[mid]] = true

		var rest []*policy.Item
		for _, it := range its {
			if !removed[it] {
				rest = append(rest, it)
			}
		}
		require.Same(t, slices.MinFunc(rest, edfThenSeq), h.Peek())
	}

	var want []*policy.Item
	for _, it := range its {
		if !removed[it] {
			want = append(want, it)
		}
	}
	slices.SortStableFunc(want, edfOrder)
	assert.Equal(t, seqs(want), seqs(popAll(h)))
}

func TestFuncNilPanics(t *testing.T) {
	v := recovered(func() { policy.Func(nil) })
	msg, ok := v.(string)
	require.True(t, ok, "panic value %#v", v)
	assert.True(t, strings.HasPrefix(msg, "crisp: "), "panic message %q", msg)
}

func TestQueueFuncAdaptsAConstructor(t *testing.T) {
	var made []policy.Queue
	p := policy.QueueFunc(func() policy.Queue {
		q := edfHeap()
		made = append(made, q)
		return q
	})
	q1, q2 := p.NewQueue(), p.NewQueue()
	require.Len(t, made, 2, "one call per queue")
	assert.Same(t, made[0], q1)
	assert.Same(t, made[1], q2)
}

// panicky returns a heap ordered by edfOrder whose comparison panics
// with "boom" while *boom is set.
func panicky(boom *bool) *policy.Heap {
	return policy.NewHeap(func(a, b *policy.Item) int {
		if *boom {
			panic("boom")
		}
		return edfOrder(a, b)
	})
}

func randomItems(r *rand.Rand, n int) []*policy.Item {
	its := make([]*policy.Item, n)
	for i := range its {
		its[i] = &policy.Item{Seq: uint64(i + 1), Deadline: t0.Add(time.Duration(r.IntN(100)) * time.Millisecond)}
	}
	return its
}

func TestComparatorPanicsLeaveThePolicy(t *testing.T) {
	// The runtime recovers a comparator's panic and fails the work being
	// ordered; the policy must let the panic through, not hide it.
	var boom bool
	h := panicky(&boom)
	its := randomItems(rand.New(rand.NewPCG(7, 8)), 10)
	for _, it := range its {
		h.Push(it)
	}
	boom = true
	assert.PanicsWithValue(t, "boom", func() { h.Push(&policy.Item{Seq: 11, Deadline: t0}) }, "Push")
	assert.PanicsWithValue(t, "boom", func() { h.Pop() }, "Pop")

	// A Remove compares only when it moves another item into the hole.
	var inner *policy.Item
	for _, it := range its {
		if i := policy.Index(it); i >= 0 && i < h.Len()-1 {
			inner = it
			break
		}
	}
	require.NotNil(t, inner)
	assert.PanicsWithValue(t, "boom", func() { h.Remove(inner) }, "Remove")
}

func TestHeapAfterAPanicInPop(t *testing.T) {
	var boom bool
	h := panicky(&boom)
	its := randomItems(rand.New(rand.NewPCG(9, 10)), 20)
	for _, it := range its {
		h.Push(it)
	}
	first := h.Peek()

	boom = true
	require.PanicsWithValue(t, "boom", func() { h.Pop() })
	boom = false

	// The item being popped has either left (index -1) or is still
	// queued; every other item is there exactly once. The order of what is
	// left is not promised (the runtime rebuilds the queue after a panic).
	want := its
	if policy.Index(first) == -1 {
		assert.False(t, h.Remove(first), "the popped item has left the heap")
		want = slices.DeleteFunc(slices.Clone(its), func(it *policy.Item) bool { return it == first })
	}
	assert.Equal(t, len(want), h.Len())
	assert.ElementsMatch(t, seqs(want), seqs(popAll(h)))
	assert.Zero(t, h.Len())
}

func edfThenSeq(a, b *policy.Item) int {
	if c := edfOrder(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// popAll pops q until it returns nil, with a bound in case it never does.
func popAll(q policy.Queue) []*policy.Item {
	var out []*policy.Item
	for n := q.Len() + 1; n > 0; n-- {
		it := q.Pop()
		if it == nil {
			break
		}
		out = append(out, it)
	}
	return out
}

func seqs(its []*policy.Item) []uint64 {
	s := make([]uint64, len(its))
	for i, it := range its {
		s[i] = it.Seq
	}
	return s
}

func names(its []*policy.Item) []string {
	s := make([]string, len(its))
	for i, it := range its {
		s[i] = it.Name
	}
	return s
}

func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
