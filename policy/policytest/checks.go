package policytest

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/crisprt/crisp/policy"
)

// Each check makes its own queues and items, so that one failure does not
// hide the others. The checks draw from generators seeded per check: the
// items, and so the failures, are the same on every run.

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x63726973705f7174)) }

// checkEmpty checks a new queue, then one emptied.
func checkEmpty(c *checker) {
	r := rng(1)
	a := c.newQueue()
	c.pop(a)
	c.pop(a)
	c.remove(a, c.item(r))
	it := c.item(r)
	c.push(a, it)
	c.pop(a)
	c.pop(a)
	c.remove(a, it)
}

// checkPushPop pushes items in shuffled order, mixes pushes and pops, and
// checks that each item pops exactly once.
func checkPushPop(c *checker) {
	r := rng(2)
	a := c.newQueue()
	its := c.itemsN(r, 40)
	r.Shuffle(len(its), func(i, j int) { its[i], its[j] = its[j], its[i] })
	for _, it := range its {
		c.push(a, it)
	}
	c.drain(a)

	for range 3 {
		for range 7 {
			c.push(a, c.item(r))
		}
		for range 4 {
			c.pop(a)
		}
	}
	c.drain(a)
}

// checkRemove removes queued items, then items in no queue.
func checkRemove(c *checker) {
	r := rng(3)
	a := c.newQueue()
	its := c.itemsN(r, 16)
	for _, i := range r.Perm(len(its)) {
		c.push(a, its[i])
	}
	for _, i := range []int{0, 7, 15} {
		c.remove(a, its[i]) // queued: true
	}
	c.remove(a, its[7]) // already removed: false
	for range 3 {
		c.remove(a, c.pop(a)) // just popped: false
	}
	c.remove(a, c.item(r)) // never pushed: false
	twin := a.items[r.IntN(len(a.items))]
	c.remove(a, c.twin(twin)) // equal fields, never pushed: false
	c.drain(a)

	// Everything removed, in random order.
	its = c.itemsN(r, 10)
	for _, it := range its {
		c.push(a, it)
	}
	for _, i := range r.Perm(len(its)) {
		c.remove(a, its[i])
	}
	c.pop(a)
	for _, it := range its {
		c.remove(a, it)
	}
}

// checkRemoveOther removes items from a queue of the same policy that
// does not hold them.
func checkRemoveOther(c *checker) {
	r := rng(4)
	a, b := c.newQueue(), c.newQueue()
	as, bs := c.itemsN(r, 6), c.itemsN(r, 6)
	for i := range as {
		c.push(a, as[i])
		c.push(b, bs[i])
	}
	for i := range as {
		c.remove(b, as[i]) // queued in A: false
		c.remove(a, bs[i]) // queued in B: false
	}
	c.remove(a, as[2])
	c.remove(b, as[2]) // removed from A: false
	c.remove(a, as[2])
	x := c.pop(b)
	c.remove(a, x) // popped from B: false
	c.drain(a)
	c.drain(b)
}

// checkIndependent interleaves the operations of two queues.
func checkIndependent(c *checker) {
	r := rng(5)
	a, b := c.newQueue(), c.newQueue()
	for range 30 {
		if r.IntN(2) == 0 {
			c.push(a, c.item(r))
		} else {
			c.push(b, c.item(r))
		}
	}
	for range 5 {
		c.pop(a)
		c.pop(b)
	}
	c.drain(a)
	c.push(a, c.item(r))
	c.drain(b)
	c.drain(a)
}

// checkPushAgain pushes items again after they were popped or removed,
// into the same queue or the other one, as the runtime does with resumed
// continuations and with queues it rebuilds.
func checkPushAgain(c *checker) {
	r := rng(6)
	a, b := c.newQueue(), c.newQueue()
	for _, it := range c.itemsN(r, 10) {
		c.push(a, it)
	}
	x := c.pop(a)
	c.resume(x)
	c.push(a, x) // popped from A, back into A

	y := a.items[r.IntN(len(a.items))]
	c.remove(a, y)
	c.push(b, y) // removed from A, into B

	z := c.pop(a)
	c.push(b, z) // popped from A, into B
	c.remove(b, z)
	c.push(a, z) // removed from B, back into A

	w := c.pop(a)
	cp := c.resumedCopy(w)
	c.push(a, cp)  // a new item for w's continuation
	c.remove(a, w) // w itself is in no queue: false
	c.drain(a)
	c.drain(b)
}

// checkUnchanged runs every kind of operation and compares all items with
// their snapshots after each one.
func checkUnchanged(c *checker) {
	r := rng(7)
	a, b := c.newQueue(), c.newQueue()
	for range 20 {
		c.push(a, c.item(r))
		c.checkUnchanged("")
	}
	c.push(b, c.item(r))
	c.checkUnchanged("")
	for range 5 {
		x := c.pop(a)
		c.checkUnchanged("")
		c.remove(a, x)
		c.checkUnchanged("")
		c.resume(x)
		c.push(a, x)
		c.checkUnchanged("")
	}
	for range 5 {
		c.remove(a, a.items[r.IntN(len(a.items))])
		c.checkUnchanged("")
	}
	c.remove(a, b.items[0])
	c.checkUnchanged("")
	c.remove(a, c.twin(a.items[0]))
	c.checkUnchanged("")
	for len(a.items) > 0 {
		c.pop(a)
		c.checkUnchanged("")
	}
	c.pop(a)
	c.checkUnchanged("")
}

// checkOrder pushes a batch of items in several arrangements and checks
// that they pop in the promised order.
func checkOrder(c *checker) {
	r := rng(8)
	arrangements := []struct {
		name    string
		arrange func([]*policy.Item)
	}{
		{"pushed in arrival order", func([]*policy.Item) {}},
		{"pushed in reverse arrival order", slices.Reverse[[]*policy.Item]},
		{"pushed in random order", func(s []*policy.Item) {
			r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		}},
	}
	for _, ar := range arrangements {
		c.ctx = ar.name
		a := c.newQueue()
		its := c.itemsN(r, 60)
		ar.arrange(its)
		for _, it := range its {
			c.push(a, it)
		}
		c.drain(a)
	}
}

// checkOrderOfEquals pushes items that differ only in Seq (and Name), which must pop in arrival order.
func checkOrderOfEquals(c *checker) {
	r := rng(9)
	kinds := []*policy.Item{
		{},
		{Deadline: base.Add(time.Millisecond), Priority: 1, Tag: "A"},
		{Deadline: base, Priority: -1, Tag: "C", Resumed: true},
	}
	for _, k := range kinds {
		a := c.newQueue()
		var its []*policy.Item
		for range 12 {
			c.seq++
			it := &policy.Item{
				Deadline: k.Deadline, Seq: c.seq, Priority: k.Priority, Tag: k.Tag,
				Name: "m" + strconv.FormatUint(c.seq, 10), Resumed: k.Resumed,
			}
			c.adopt(it)
			its = append(its, it)
		}
		c.ctx = "items equal but for Seq, like " + c.describe(its[0])
		for _, i := range r.Perm(len(its)) {
			c.push(a, its[i])
		}
		c.drain(a)
	}
}

// checkOrderResumed pushes continuations after newer messages: they keep
// their Seq, so they must take their place by it, not by when they were
// pushed.
func checkOrderResumed(c *checker) {
	r := rng(10)
	a := c.newQueue()
	for _, it := range c.itemsN(r, 20) {
		c.push(a, it)
	}
	var started []*policy.Item
	for range 8 {
		started = append(started, c.pop(a))
	}
	for _, it := range c.itemsN(r, 10) {
		c.push(a, it)
	}
	for i, it := range started {
		if i%2 == 0 {
			c.resume(it)
			c.push(a, it)
		} else {
			c.push(a, c.resumedCopy(it))
		}
	}
	c.drain(a)
}

// twin makes a never-pushed item with the same fields as it: a queue that
// finds items by value rather than by identity would remove it.
func (c *checker) twin(it *policy.Item) *policy.Item {
	t := &policy.Item{
		Deadline: it.Deadline, Seq: it.Seq, Priority: it.Priority, Tag: it.Tag,
		Name: it.Name, Resumed: it.Resumed,
	}
	c.adopt(t)
	return t
}

// The kinds of operation of a random run.
const (
	opPush         = iota // push a new message
	opResume              // push again an item popped or removed, or a continuation of it
	opPop                 // pop
	opRemoveQueued        // remove a queued item
	opRemoveGone          // remove an item popped or removed
	opRemoveNever         // remove an item never pushed
	opRemoveOther         // remove an item queued in the other queue
	opDrain               // pop until empty
	numOps
)

// profile is the mix of operations of one random run.
type profile struct {
	name   string
	seed   uint64
	ops    int
	weight [numOps]int
}

var profiles = []profile{
	{"balanced", 1, 3000, [numOps]int{30, 8, 32, 10, 6, 5, 5, 1}},
	{"growing", 2, 3000, [numOps]int{45, 10, 22, 8, 5, 5, 5, 0}},
	{"many removals", 3, 3000, [numOps]int{40, 5, 10, 30, 7, 4, 4, 0}},
}

func (pr profile) pick(r *rand.Rand) int {
	total := 0
	for _, w := range pr.weight {
		total += w
	}
	n := r.IntN(total)
	for op, w := range pr.weight {
		if n < w {
			return op
		}
		n -= w
	}
	panic("unreachable")
}

// randomRun applies a random sequence of operations to two queues, most
// to the first, comparing each result with the model.
func randomRun(c *checker, pr profile) {
	r := rng(pr.seed)
	a, b := c.newQueue(), c.newQueue()
	var gone []*policy.Item // items popped or removed, in no queue
	for c.step = 1; c.step <= pr.ops; c.step++ {
		m, other := a, b
		if r.IntN(4) == 0 {
			m, other = b, a
		}
		switch pr.pick(r) {
		case opPush:
			c.push(m, c.item(r))
		case opResume:
			if len(gone) == 0 {
				c.push(m, c.item(r))
				break
			}
			i := r.IntN(len(gone))
			it := gone[i]
			if c.seqQueued(it.Seq) { // its continuation already is
				c.push(m, c.item(r))
				break
			}
			if r.IntN(2) == 0 {
				gone[i] = gone[len(gone)-1]
				gone = gone[:len(gone)-1]
				c.resume(it)
				c.push(m, it)
			} else {
				c.push(m, c.resumedCopy(it))
			}
		case opPop:
			if it := c.pop(m); it != nil {
				gone = append(gone, it)
			}
		case opRemoveQueued:
			if len(m.items) > 0 {
				it := m.items[r.IntN(len(m.items))]
				c.remove(m, it)
				gone = append(gone, it)
			}
		case opRemoveGone:
			if len(gone) > 0 {
				c.remove(m, gone[r.IntN(len(gone))])
			}
		case opRemoveNever:
			if len(m.items) > 0 && r.IntN(2) == 0 {
				c.remove(m, c.twin(m.items[r.IntN(len(m.items))]))
			} else {
				c.remove(m, c.item(r))
			}
		case opRemoveOther:
			if len(other.items) > 0 {
				c.remove(m, other.items[r.IntN(len(other.items))])
			}
		case opDrain:
			gone = append(gone, c.drain(m)...)
		}
	}
	c.step = 0
	c.ctx = "at the end"
	c.drain(a)
	c.drain(b)
	c.checkUnchanged("once both queues were drained")
}

// seqQueued reports whether an item with that Seq is queued anywhere.
func (c *checker) seqQueued(seq uint64) bool {
	for _, m := range c.models {
		for _, it := range m.items {
			if it.Seq == seq {
				return true
			}
		}
	}
	return false
}
