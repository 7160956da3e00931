package crisp_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

// byCustomer orders by a string tag and panics on any other tag: the
// kind of policy bug the runtime must survive.
var byCustomer = policy.Func(func(a, b *policy.Item) int {
	x, y := a.Tag.(string), b.Tag.(string) // panics on a non-string tag
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return deadline.Compare(a.Deadline, b.Deadline)
})

func TestAPanickingComparisonFailsOnlyTheWorkItOrders(t *testing.T) {
	sys, _ := newSystem(t)
	a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(byCustomer))
	g := newGate()
	hold(t, a, g)
	good := []*future.Future[string]{
		crisp.Call(a, record("b"), crisp.Tag("b")),
		crisp.Call(a, record("a"), crisp.Tag("a"), crisp.Within(time.Hour)),
	}
	bad := crisp.Call(a, record("bad"), crisp.Tag(42))
	later := crisp.Call(a, record("c"), crisp.Tag("c"))
	g.open()

	_, err := bad.Get()
	var pe *crisp.PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Error(), "policy panicked")
	assert.NotEmpty(t, pe.Stack)

	for _, f := range append(good, later) {
		_, err := f.Get()
		assert.NoError(t, err)
	}
	assert.Equal(t, []string{"a", "b", "c"}, ranOn(t, a)[:3])
}

// flaky wraps a heap and misbehaves on demand.
type flaky struct {
	*policy.Heap
	panicPop bool
	losePop  bool
	foreign  bool
}

func (f *flaky) Pop() *policy.Item {
	switch {
	case f.panicPop:
		f.panicPop = false
		f.Heap.Pop() // loses an item, then panics
		panic("pop bug")
	case f.losePop:
		f.losePop = false
		f.Heap.Pop()
		return nil
	case f.foreign:
		return &policy.Item{Name: "not yours"}
	}
	return f.Heap.Pop()
}

func flakyPolicy(q *flaky) policy.Policy {
	return policy.QueueFunc(func() policy.Queue {
		q.Heap = policy.NewHeap(func(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) })
		return q
	})
}

func TestAQueueThatPanicsOrLosesWorkIsRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    *flaky
	}{
		{"pop panics", &flaky{panicPop: true}},
		{"pop loses an item", &flaky{losePop: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys, _ := newSystem(t)
			a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(flakyPolicy(tc.q)))
			g := newGate()
			hold(t, a, g)
			futs := []*future.Future[string]{
				crisp.Call(a, record("1"), crisp.Within(time.Minute)),
				crisp.Call(a, record("2"), crisp.Within(2*time.Minute)),
				crisp.Call(a, record("3")),
			}
			g.open()
			for _, f := range futs {
				_, err := f.Get()
				assert.NoError(t, err, "every message still runs")
			}
			assert.Equal(t, []string{"1", "2", "3"}, ranOn(t, a))
		})
	}
}

func TestABrokenQueueCostsOrderNeverWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    *flaky
	}{
		{"always returns a foreign item", &flaky{foreign: true}},
		{"always panics", &flaky{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncBuffer
			sys, _ := newSystem(t, crisp.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
			pol := policy.QueueFunc(func() policy.Queue {
				tc.q.Heap = policy.NewHeap(func(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) })
				tc.q.panicPop = tc.q.foreign == false
				return &alwaysPanics{tc.q}
			})
			a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(pol))
			g := newGate()
			hold(t, a, g)
			var futs []*future.Future[string]
			for _, name := range []string{"1", "2", "3"} {
				futs = append(futs, crisp.Call(a, record(name)))
			}
			g.open()
			for _, f := range futs {
				_, err := f.Get()
				assert.NoError(t, err)
			}
			assert.Contains(t, buf.String(), "policy queue misbehaved")
		})
	}
}

// alwaysPanics re-arms flaky's panic before every Pop.
type alwaysPanics struct{ *flaky }

func (q *alwaysPanics) Pop() *policy.Item {
	if !q.foreign {
		q.panicPop = true
	}
	return q.flaky.Pop()
}

// liar is a queue that lies in one way, every time.
type liar struct {
	*policy.Heap
	how  string
	last *policy.Item // for "twice": the item popped last
	odd  bool
}

func (q *liar) Pop() *policy.Item {
	switch q.how {
	case "peeks":
		return q.Heap.Peek() // returns the head and keeps it
	case "copies":
		if it := q.Heap.Pop(); it != nil {
			c := *it
			return &c
		}
		return nil
	case "returns an item twice":
		q.odd = !q.odd
		if !q.odd && q.last != nil {
			return q.last
		}
		q.last = q.Heap.Pop()
		return q.last
	}
	return q.Heap.Pop()
}

func (q *liar) Len() int {
	if q.how == "lies in Len" {
		return q.Heap.Len() + 1
	}
	return q.Heap.Len()
}

// A queue may lie in any way; the actor notices at once, at O(1) cost
// per pop, and every message still runs exactly once. A Pop that only
// peeked used to make the runner loop for ever under the actor's lock
// (issue 14, item 1).
func TestEveryLieOfAQueueCostsOrderNeverWork(t *testing.T) {
	for _, how := range []string{"peeks", "copies", "returns an item twice", "lies in Len", "gives no queue"} {
		t.Run(how, func(t *testing.T) {
			var buf syncBuffer
			sys, _ := newSystem(t, crisp.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
			pol := policy.QueueFunc(func() policy.Queue {
				if how == "gives no queue" {
					return nil
				}
				return &liar{Heap: policy.NewHeap(func(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) }), how: how}
			})
			a := crisp.Spawn(sys, &state{}, crisp.WithPolicy(pol))
			g := newGate()
			hold(t, a, g)
			var futs []*future.Future[string]
			for i, name := range []string{"1", "2", "3", "4"} {
				futs = append(futs, crisp.Call(a, record(name), crisp.Within(time.Duration(i+1)*time.Minute)))
			}
			g.open()
			// The guard is only for a broken runtime: a runner that loops
			// under the lock would never resolve these.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, f := range futs {
				_, err := f.GetContext(ctx)
				require.NoError(t, err, "every message still runs")
			}
			assert.ElementsMatch(t, []string{"1", "2", "3", "4"}, ranOn(t, a), "each exactly once")
			if how != "gives no queue" {
				assert.Contains(t, buf.String(), "policy queue misbehaved")
			}
		})
	}
}
