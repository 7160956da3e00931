package policy_test

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
)

// The benchmarks keep a queue at a steady size: each cycle pops the next
// item and pushes it back as a new message (next Seq, a later deadline),
// the way an actor takes work while senders keep it busy. The baseline is
// container/heap ordered as EDF over the same items, with the position
// bookkeeping its Remove needs.

var benchSizes = []int{10, 1_000, 100_000}

// benchItems returns n items in arrival order with deadlines spread over
// n milliseconds (one in eight has none), priorities 0 to 2, and tags
// "A" or nil.
func benchItems(n int) []*policy.Item {
	r := rand.New(rand.NewPCG(uint64(n), 42))
	its := make([]*policy.Item, n)
	for i := range its {
		its[i] = &policy.Item{Seq: uint64(i + 1), Priority: r.IntN(3)}
		if r.IntN(8) != 0 {
			its[i].Deadline = t0.Add(time.Duration(r.IntN(n)) * time.Millisecond)
		}
		if r.IntN(4) == 0 {
			its[i].Tag = "A"
		}
	}
	return its
}

// renew makes a popped item look like a new message.
func renew(it *policy.Item, seq uint64, n int) {
	it.Seq = seq
	if !it.Deadline.IsZero() {
		it.Deadline = it.Deadline.Add(time.Duration(n) * time.Millisecond)
	}
}

func BenchmarkPushPop(b *testing.B) {
	policies := []struct {
		name string
		p    policy.Policy
	}{
		{"EDF", policy.EDF()},
		{"FIFO", policy.FIFO()},
		{"Priority", policy.ByPriority()},
		{"Func", policy.Func(customerAFirst)},
	}
	for _, pc := range policies {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", pc.name, n), func(b *testing.B) {
				q := pc.p.NewQueue()
				for _, it := range benchItems(n) {
					q.Push(it)
				}
				seq := uint64(n)
				b.ReportAllocs()
				for b.Loop() {
					it := q.Pop()
					seq++
					renew(it, seq, n)
					q.Push(it)
				}
			})
		}
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("container-heap-EDF/n=%d", n), func(b *testing.B) {
			h := newBaseline(benchItems(n))
			seq := uint64(n)
			b.ReportAllocs()
			for b.Loop() {
				e := heap.Pop(h).(*entry)
				seq++
				renew(e.it, seq, n)
				heap.Push(h, e)
			}
		})
	}
}

// BenchmarkRemove removes an item from anywhere in a queue of 100,000
// and pushes it back, so that the queue keeps its size.
func BenchmarkRemove(b *testing.B) {
	const n = 100_000
	const stride = 7_919 // a prime: visits every item, in scattered order
	b.Run(fmt.Sprintf("EDF/n=%d", n), func(b *testing.B) {
		its := benchItems(n)
		q := policy.EDF().NewQueue()
		for _, it := range its {
			q.Push(it)
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i = (i + stride) % n
			if !q.Remove(its[i]) {
				b.Fatal("item not queued")
			}
			q.Push(its[i])
		}
	})
	b.Run(fmt.Sprintf("container-heap-EDF/n=%d", n), func(b *testing.B) {
		h := newBaseline(benchItems(n))
		es := append([]*entry(nil), (*h)...)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i = (i + stride) % n
			heap.Remove(h, es[i].index)
			heap.Push(h, es[i])
		}
	})
}

// entry is an item in the baseline heap, with its position.
type entry struct {
	it    *policy.Item
	index int
}

// baseline is container/heap's priority queue, ordered as EDF.
type baseline []*entry

func newBaseline(its []*policy.Item) *baseline {
	h := make(baseline, len(its))
	for i, it := range its {
		h[i] = &entry{it: it, index: i}
	}
	heap.Init(&h)
	return &h
}

func (h baseline) Len() int { return len(h) }

func (h baseline) Less(i, j int) bool {
	if c := deadline.Compare(h[i].it.Deadline, h[j].it.Deadline); c != 0 {
		return c < 0
	}
	return h[i].it.Seq < h[j].it.Seq
}

func (h baseline) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *baseline) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *baseline) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
