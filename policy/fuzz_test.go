package policy_test

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
)

// fuzzPolicies are the policies FuzzQueue checks, each with the order it
// promises (ties broken by Seq): the built-ins, and a Func policy by tag
// then priority, whose Heap is the one custom policies get.
var fuzzPolicies = []struct {
	name  string
	pol   policy.Policy
	order func(a, b *policy.Item) int
}{
	{"edf", policy.EDF(), orderEDF},
	{"fifo", policy.FIFO(), func(a, b *policy.Item) int { return 0 }},
	{"priority", policy.ByPriority(), func(a, b *policy.Item) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return orderEDF(a, b)
	}},
	{"func", policy.Func(orderTag), orderTag},
}

func orderEDF(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) }

func orderTag(a, b *policy.Item) int {
	x, _ := a.Tag.(int)
	y, _ := b.Tag.(int)
	if c := cmp.Compare(x, y); c != 0 {
		return c
	}
	return cmp.Compare(b.Priority, a.Priority)
}

// FuzzQueue runs an interleaving of Push, Pop, Remove and Peek, decoded
// from the input, on a queue of one of the policies, and on a model that
// keeps the queued items in a slice sorted by the policy's order (ties
// by Seq): every Pop and Peek must return the model's first item, Remove
// must report whether the item was queued (an item queued in a second
// queue of the same policy is not), Len must follow, and no item may be
// changed. Items are drawn as the runtime makes them: new ones
// with increasing Seq, deadlines often equal or absent; resumed ones
// reusing the Seq of an item no longer queued, as a resumed continuation
// keeps its message's arrival number.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 0, 4, 5, 6, 1, 1, 1, 1, 2, 2, 2, 2})
	f.Add([]byte{1, 0, 9, 0, 8, 0, 7, 3, 0, 1, 1})
	f.Add([]byte{2, 0, 1, 5, 0, 2, 4, 0, 3, 3, 3, 1, 4, 0, 0, 1, 1, 1})
	f.Add([]byte{3, 0, 200, 0, 100, 0, 50, 5, 17, 3, 1, 3, 2, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		fp := fuzzPolicies[int(data[0])%len(fuzzPolicies)]
		data = data[1:min(len(data), 1024)] // a few hundred operations show what more would

		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		less := func(a, b *policy.Item) int {
			if c := fp.order(a, b); c != 0 {
				return c
			}
			return cmp.Compare(a.Seq, b.Seq)
		}
		type snap struct {
			dl   time.Time
			seq  uint64
			prio int
			tag  any
			res  bool
		}
		var (
			q      = fp.pol.NewQueue()
			heap   = q.(*policy.Heap) // every built-in and Func queue is one
			model  []*policy.Item     // queued, sorted by less
			other  = fp.pol.NewQueue()
			others []*policy.Item // queued in other, sorted by less
			all    []*policy.Item // every item made
			snaps  = map[*policy.Item]snap{}
			seq    uint64
			t0     = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)
			queued = func(it *policy.Item) bool { return slices.Contains(model, it) }
		)
		check := func(op string) {
			t.Helper()
			if q.Len() != len(model) {
				t.Fatalf("%s %s: Len %d, want %d", fp.name, op, q.Len(), len(model))
			}
			for _, it := range all {
				s := snap{it.Deadline, it.Seq, it.Priority, it.Tag, it.Resumed}
				if s != snaps[it] {
					t.Fatalf("%s %s: the queue changed an item: %+v, was %+v", fp.name, op, s, snaps[it])
				}
			}
		}
		for len(data) > 0 {
			switch op := next(); op % 5 {
			case 0, 1: // push a new item, or (op 1, if one can) a resumed one
				it := &policy.Item{Priority: int(next()%4) - 1, Tag: int(next() % 3)}
				if b := next(); b%4 != 0 { // a quarter without deadline; many equal
					it.Deadline = t0.Add(time.Duration(b%16) * time.Millisecond)
				}
				var free []uint64
				if op%5 == 1 {
					inQueue := make(map[uint64]bool, len(model)+len(others))
					for _, m := range append(model[:len(model):len(model)], others...) {
						inQueue[m.Seq] = true // no two items queued together share a Seq
					}
					for _, o := range all {
						if !inQueue[o.Seq] && !slices.Contains(free, o.Seq) {
							free = append(free, o.Seq)
						}
					}
				}
				if len(free) > 0 {
					it.Seq, it.Resumed = free[int(next())%len(free)], true
				} else {
					seq++
					it.Seq = seq
				}
				all = append(all, it)
				snaps[it] = snap{it.Deadline, it.Seq, it.Priority, it.Tag, it.Resumed}
				if next()%8 == 7 { // into the other queue
					other.Push(it)
					i, _ := slices.BinarySearchFunc(others, it, less)
					others = slices.Insert(others, i, it)
					continue
				}
				q.Push(it)
				i, _ := slices.BinarySearchFunc(model, it, less)
				model = slices.Insert(model, i, it)
				check("push")
			case 2:
				got := q.Pop()
				var want *policy.Item
				if len(model) > 0 {
					want, model = model[0], model[1:]
				}
				if got != want {
					t.Fatalf("%s pop: got %+v, want %+v", fp.name, got, want)
				}
				check("pop")
			case 3: // remove an item, queued or not
				if len(all) == 0 {
					continue
				}
				it := all[int(next())%len(all)]
				want := queued(it)
				if got := q.Remove(it); got != want {
					t.Fatalf("%s remove of %+v: reported %v, want %v", fp.name, it, got, want)
				}
				model = slices.DeleteFunc(model, func(m *policy.Item) bool { return m == it })
				check("remove")
			case 4:
				var want *policy.Item
				if len(model) > 0 {
					want = model[0]
				}
				if got := heap.Peek(); got != want {
					t.Fatalf("%s peek: got %+v, want %+v", fp.name, got, want)
				}
			}
		}
		for _, it := range others { // the other queue was left alone
			if got := other.Pop(); got != it {
				t.Fatalf("%s: the other queue pops %+v, want %+v", fp.name, got, it)
			}
		}
		for len(model) > 0 { // drain: the rest pops in order
			if got := q.Pop(); got != model[0] {
				t.Fatalf("%s drain: got %+v, want %+v", fp.name, got, model[0])
			}
			model = model[1:]
		}
		if q.Pop() != nil || q.Len() != 0 {
			t.Fatalf("%s: not empty after draining", fp.name)
		}
	})
}
