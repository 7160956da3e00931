package runq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type welem struct {
	key int
	pos int32
}

// An element of the run keeps only the low 30 bits of its ring position.
// A run whose absolute positions cross 2^30, 2^31 and 2^32 (a queue that
// never emptied over billions of pushes) still finds every element it
// removes, refuses one that left, and hands the rest out in order.
func TestRunPositionsSurviveWrapping(t *testing.T) {
	for _, start := range []uint64{1<<30 - 5, 1<<31 - 5, 1<<32 - 5, 3<<30 + 1<<29} {
		q := New(func(a, b *welem) bool { return a.key < b.key }, func(e *welem) *int32 { return &e.pos })
		q.head, q.tail = start, start // as after that many pushes and pops
		es := make([]*welem, 20)
		for i := range es {
			es[i] = &welem{key: i}
			q.Push(es[i])
			require.LessOrEqual(t, es[i].pos, int32(-2), "in order: the run")
		}
		for _, i := range []int{7, 3, 4, 19, 0} { // across the boundary, and the last
			require.True(t, q.Remove(es[i]), "start %d: remove %d", start, i)
			assert.EqualValues(t, -1, es[i].pos)
			assert.False(t, q.Remove(es[i]), "start %d: removed twice", start)
		}
		var got []int
		for e := q.Pop(); e != nil; e = q.Pop() {
			got = append(got, e.key)
		}
		assert.Equal(t, []int{1, 2, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}, got, "start %d", start)
	}
}
