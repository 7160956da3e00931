// Package runq is the ordered queue behind crisp's policies and deadline
// indexes: a binary heap beside a sorted run.
//
// An element pushed in order (not before the last element appended to
// the run) joins the run, a ring, in O(1); any other goes into the heap
// in O(log n). Pop takes the first of the heap's top and the run's head.
// Streams that arrive in order (messages without deadlines, or with the
// same relative deadline) so cost O(1) per element however long the
// queue, and never touch the elements already queued; the worst case
// stays O(log n).
//
// Elements record their position through the pos accessor, an int32 (so
// that it packs beside a small field of the element, which decides the
// size class of crisp's messages): 0 or more in the heap, -2 or less in
// the run (-2-(p mod 2^30) for absolute ring position p, so the ring
// grows without rewriting positions; the run holds no more than 2^30
// elements, which pins down p), -1 when in no queue. Push panics rather
// than hold more than 2^30 in either part.
// Remove is O(1) from the run and O(log n) from the heap. A Queue is not
// safe for concurrent use.
package runq

// Queue is a priority queue of elements of pointer type E.
type Queue[E comparable] struct {
	less func(a, b E) bool // strict and total: ties must be broken
	pos  func(e E) *int32

	heap []E // heap[i] has position i

	ring       []E // len(ring) is 0 or a power of two; zero values are holes
	head, tail uint64
	inRing     int // elements in the ring, not counting holes
	last       E   // the element most recently appended to the run
}

// New returns an empty queue ordered by less, which must be a strict
// total order, with elements keeping their position where pos says.
func New[E comparable](less func(a, b E) bool, pos func(e E) *int32) *Queue[E] {
	return &Queue[E]{less: less, pos: pos}
}

// Len reports the number of elements.
func (q *Queue[E]) Len() int { return len(q.heap) + q.inRing }

// Push adds e, which must be in no queue.
func (q *Queue[E]) Push(e E) {
	var zero E
	if q.last == zero || !q.less(e, q.last) {
		q.append(e)
		return
	}
	if len(q.heap) >= maxLen {
		panic(tooMany)
	}
	*q.pos(e) = int32(len(q.heap))
	q.heap = append(q.heap, e)
	q.up(len(q.heap) - 1)
}

// Peek returns the first element, or the zero E if the queue is empty.
func (q *Queue[E]) Peek() E {
	r, ok := q.runHead()
	if len(q.heap) == 0 || (ok && !q.less(q.heap[0], r)) {
		return r
	}
	return q.heap[0]
}

// Pop removes and returns the first element, or the zero E.
func (q *Queue[E]) Pop() E {
	r, ok := q.runHead()
	if len(q.heap) == 0 || (ok && !q.less(q.heap[0], r)) {
		if ok {
			q.takeHead()
		}
		return r
	}
	top := q.heap[0]
	q.removeAt(0)
	return top
}

// Remove takes e out of the queue, reporting whether it was there.
func (q *Queue[E]) Remove(e E) bool {
	i := int(*q.pos(e))
	if i <= -2 {
		// The absolute position whose low bits the element kept: the
		// only one in the run's span, which is shorter than 2^30.
		p := q.head + (uint64(-2-i)-q.head)&runBits
		if p >= q.tail || q.ring[p&q.mask()] != e {
			return false
		}
		var zero E
		q.ring[p&q.mask()] = zero
		*q.pos(e) = -1
		q.inRing--
		if q.inRing == 0 {
			q.resetRun()
		} else if e == q.last {
			q.dropLast()
		}
		return true
	}
	if i < 0 || i >= len(q.heap) || q.heap[i] != e {
		return false
	}
	q.removeAt(i)
	return true
}

// Each calls f for every element, in no particular order.
func (q *Queue[E]) Each(f func(E)) {
	for _, e := range q.heap {
		f(e)
	}
	var zero E
	for p := q.head; p < q.tail; p++ {
		if e := q.ring[p&q.mask()]; e != zero {
			f(e)
		}
	}
}

func (q *Queue[E]) mask() uint64 { return uint64(len(q.ring) - 1) }

// runBits keeps the low 30 bits of a ring position: what an element
// records of it.
const runBits = 1<<30 - 1

// maxLen bounds the run and the heap: positions name no more. It is 8
// GiB of pointers alone, which only a runaway program reaches; the
// panic says so rather than let a position name two places.
const maxLen = 1 << 30

const tooMany = "crisp: a queue of 2^30 items: more than its positions can name"

func (q *Queue[E]) resetRun() {
	var zero E
	q.head, q.tail, q.last = 0, 0, zero
}

// dropLast is called when the run's last element has been removed and
// others remain: the tail retreats over the holes, and the element now at
// the end becomes the bar that Push compares with. The queue must not
// keep the removed element: its owner may change or reuse it, and a
// comparison with it would then read what it no longer is. Each hole is
// passed once, so this is O(1) amortised.
func (q *Queue[E]) dropLast() {
	var zero E
	m := q.mask()
	for q.ring[(q.tail-1)&m] == zero {
		q.tail--
	}
	q.last = q.ring[(q.tail-1)&m]
}

// append adds e at the end of the run.
func (q *Queue[E]) append(e E) {
	if n := uint64(len(q.ring)); q.tail-q.head == n {
		if n >= maxLen {
			panic(tooMany)
		}
		grown := make([]E, max(8, 2*n))
		m := uint64(len(grown) - 1)
		for p := q.head; p < q.tail; p++ {
			grown[p&m] = q.ring[p&(n-1)]
		}
		q.ring = grown
	}
	q.ring[q.tail&q.mask()] = e
	*q.pos(e) = -2 - int32(q.tail&runBits)
	q.tail++
	q.inRing++
	q.last = e
}

// runHead returns the first element of the run, dropping holes.
func (q *Queue[E]) runHead() (E, bool) {
	var zero E
	if q.inRing == 0 {
		return zero, false
	}
	m := q.mask()
	for q.ring[q.head&m] == zero {
		q.head++
	}
	return q.ring[q.head&m], true
}

// takeHead removes the first element of the run, which runHead found.
func (q *Queue[E]) takeHead() {
	var zero E
	m := q.mask()
	e := q.ring[q.head&m]
	q.ring[q.head&m] = zero
	*q.pos(e) = -1
	q.head++
	q.inRing--
	if q.inRing == 0 {
		q.resetRun()
	}
}

// removeAt deletes the heap element at i. The element leaves first
// (position -1, slot cleared), so that a comparison that panics while the
// heap is being repaired cannot leave it half in.
func (q *Queue[E]) removeAt(i int) {
	last := len(q.heap) - 1
	*q.pos(q.heap[i]) = -1
	if i != last {
		moved := q.heap[last]
		q.heap[i] = moved
		*q.pos(moved) = int32(i)
	}
	var zero E
	q.heap[last] = zero // drop the reference so the element can be collected
	q.heap = q.heap[:last]
	if i != last {
		if !q.down(i) {
			q.up(i)
		}
	}
}

// up and down move the element at a hole instead of swapping, writing
// each moved element's position once.

func (q *Queue[E]) up(j int) {
	e := q.heap[j]
	for j > 0 {
		i := (j - 1) / 2
		if !q.less(e, q.heap[i]) {
			break
		}
		q.heap[j] = q.heap[i]
		*q.pos(q.heap[j]) = int32(j)
		j = i
	}
	q.heap[j] = e
	*q.pos(e) = int32(j)
}

// down sifts the element at i0 towards the leaves and reports whether it
// moved.
func (q *Queue[E]) down(i0 int) bool {
	n := len(q.heap)
	e := q.heap[i0]
	i := i0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && q.less(q.heap[r], q.heap[l]) {
			j = r
		}
		if !q.less(q.heap[j], e) {
			break
		}
		q.heap[i] = q.heap[j]
		*q.pos(q.heap[i]) = int32(i)
		i = j
	}
	q.heap[i] = e
	*q.pos(e) = int32(i)
	return i > i0
}
