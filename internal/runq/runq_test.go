package runq_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/internal/runq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type elem struct {
	key, seq int
	pos      int32
}

func less(a, b *elem) bool { return a.key < b.key || (a.key == b.key && a.seq < b.seq) }
func pos(e *elem) *int32   { return &e.pos }

// TestAgreesWithASortedModel drives random pushes (some in order, to
// exercise the run, some not), pops and removals, and checks every pop
// against the minimum of a model set.
func TestAgreesWithASortedModel(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 7))
		q := runq.New(less, pos)
		var model []*elem
		seq, floor := 0, 0
		for op := range 5000 {
			switch k := r.IntN(10); {
			case k < 5: // push, in order most of the time
				seq++
				key := floor + r.IntN(3)
				if r.IntN(4) == 0 {
					key = r.IntN(floor + 10)
				}
				floor = max(floor, key)
				e := &elem{key: key, seq: seq}
				q.Push(e)
				model = append(model, e)
			case k < 8: // pop
				got := q.Pop()
				if len(model) == 0 {
					require.Nil(t, got, "seed %d op %d", seed, op)
					continue
				}
				want := slices.MinFunc(model, func(a, b *elem) int {
					if less(a, b) {
						return -1
					}
					return 1
				})
				require.Same(t, want, got, "seed %d op %d", seed, op)
				assert.EqualValues(t, -1, got.pos)
				model = slices.DeleteFunc(model, func(e *elem) bool { return e == got })
			default: // remove a random queued element, or one already gone
				if len(model) == 0 {
					continue
				}
				i := r.IntN(len(model))
				e := model[i]
				require.True(t, q.Remove(e), "seed %d op %d", seed, op)
				require.False(t, q.Remove(e), "removed twice")
				model = slices.Delete(model, i, i+1)
			}
			require.Equal(t, len(model), q.Len())
			if len(model) > 0 {
				p := q.Peek()
				require.Contains(t, model, p)
			}
		}
		var seen []*elem
		q.Each(func(e *elem) { seen = append(seen, e) })
		assert.ElementsMatch(t, model, seen, "Each visits every element once")
	}
}

func TestInOrderPushesUseTheRun(t *testing.T) {
	q := runq.New(less, pos)
	for i := range 1000 {
		e := &elem{key: i, seq: i}
		q.Push(e)
		require.LessOrEqual(t, e.pos, int32(-2), "an in-order element joins the run")
	}
	out := &elem{key: -1, seq: 1001}
	q.Push(out)
	assert.GreaterOrEqual(t, out.pos, int32(0), "an out-of-order element joins the heap")
	assert.Same(t, out, q.Pop())
	for i := range 1000 {
		require.Equal(t, i, q.Pop().key)
	}
	var zero *elem
	assert.Equal(t, zero, q.Pop())
}

func TestRemoveForeignElement(t *testing.T) {
	a, b := runq.New(less, pos), runq.New(less, pos)
	e := &elem{key: 1}
	a.Push(e)
	assert.False(t, b.Remove(e), "an element queued elsewhere")
	assert.False(t, b.Remove(&elem{}), "an element never pushed")
	assert.True(t, a.Remove(e))
}

// The queue must not keep an element it no longer holds: its owner may
// reuse it (crisp recycles finished Tell messages), and comparing a new
// element with it would then read what it has become. Here the run's
// last element leaves, changes its key, and a later push must still be
// ordered against what the run holds. (Found by crisp's chaos test as a
// data race, and an order violation under it.)
func TestARemovedLastElementIsNoLongerTheBar(t *testing.T) {
	q := runq.New(less, pos)
	a := &elem{key: 5, seq: 1}
	b := &elem{key: 7, seq: 2}
	q.Push(a)
	q.Push(b) // both in the run, b last
	require.True(t, q.Remove(b))
	b.key = 1 // b is reused for something else
	c := &elem{key: 3, seq: 3}
	q.Push(c)
	assert.Same(t, c, q.Pop(), "3 comes before 5")
	assert.Same(t, a, q.Pop())
	assert.Zero(t, q.Len())
}
