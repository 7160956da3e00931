// Package policytest checks that a policy's queues behave as the crisp
// runtime requires. It is for the tests of custom policies, as
// testing/fstest is for file systems: one call runs every check.
//
//	func TestCustomerFirst(t *testing.T) {
//		if err := policytest.TestPolicy(policy.Func(customerFirst), customerFirst); err != nil {
//			t.Fatal(err)
//		}
//	}
//
// TestPolicy always checks the structure of the queues the policy makes:
// that Len follows every Push, Pop and Remove; that every pushed item pops
// exactly once and Pop on an empty queue returns nil; that Remove of a
// queued item reports true and the item never pops; that Remove of an item
// already popped or removed, never pushed, or queued in another queue of
// the same policy reports false and changes nothing; that two queues of
// the policy are independent; that an item popped or removed can be pushed
// again; and that no queue changes a field of an item. Long random
// interleavings of all these operations on two queues are compared with a
// model of what each queue holds.
//
// Given the order the policy promises, TestPolicy also checks that every
// Pop returns the first of the queued items by that order, ties broken by
// arrival (Seq), so that pushing items and then popping them all gives
// their stable sort by that order. This is checked on batches pushed in
// several arrangements, on items equal but for Seq, on resumed items, and
// at every Pop of the random interleavings.
//
// The items TestPolicy queues have deadlines a few milliseconds apart
// (many equal, some none), priorities from -1 to 2, tags that are nil or
// one of the strings "A", "B" and "C", names, and int payloads; some are
// resumed continuations, pushed after newer items while keeping an
// earlier item's Seq. As in the runtime, no two items queued together
// share a Seq. An order function may compare tags with == but should not
// assert their type.
//
// TestPolicy is deterministic (its randomness is seeded, so a failure
// repeats); it calls the queues from the calling goroutine and starts
// none. Its checks run about ten thousand queue operations: a few
// milliseconds for a heap-based queue, tens under the race detector. It
// recovers a panic of the queue or of the order function and reports it,
// with its stack, as the failure of the check that caused it.
package policytest

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crisprt/crisp/policy"
)

// TestPolicy checks that p's queues behave as the crisp runtime requires,
// and, if order is not nil, that they pop items in that order. order
// returns a negative number when a must run before b, a positive one when
// b must run before a, and zero when the policy lets arrival decide (the
// smaller Seq first). TestPolicy returns nil, or an error describing every
// failure found (errors.Join), one per failing check: a check stops at its
// first failure, since the queue's state is unknown after it.
func TestPolicy(p policy.Policy, order func(a, b *policy.Item) int) error {
	if p == nil {
		return errors.New("policytest: nil policy")
	}
	s := &suite{p: p, order: order}
	if !s.run("NewQueue", func(c *checker) { c.newQueue() }) {
		return errors.Join(s.errs...) // nothing else can work
	}
	s.run("empty queue", checkEmpty)
	s.run("push and pop", checkPushPop)
	s.run("remove", checkRemove)
	s.run("remove from another queue", checkRemoveOther)
	s.run("independent queues", checkIndependent)
	s.run("push again", checkPushAgain)
	s.run("items unchanged", checkUnchanged)
	if order != nil {
		s.run("order", checkOrder)
		s.run("order of equals", checkOrderOfEquals)
		s.run("order of resumed items", checkOrderResumed)
	}
	for _, pr := range profiles {
		s.run(fmt.Sprintf("random interleaving (%s, seed %d)", pr.name, pr.seed), func(c *checker) { randomRun(c, pr) })
	}
	return errors.Join(s.errs...)
}

// base is the time the items' deadlines are counted from; descriptions of
// items show deadlines relative to it.
var base = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

type suite struct {
	p     policy.Policy
	order func(a, b *policy.Item) int
	errs  []error
}

// abort unwinds a check after its first failure, as t.FailNow does.
type abort struct{}

// run runs one check and records its failure, reporting whether it
// passed.
func (s *suite) run(name string, check func(c *checker)) (ok bool) {
	c := &checker{
		name:  name,
		p:     s.p,
		order: s.order,
		state: make(map[*policy.Item]*itemState),
	}
	defer func() {
		switch v := recover(); v.(type) {
		case nil:
			ok = true
		case abort:
			s.errs = append(s.errs, c.err)
		default:
			who := "the queue"
			if c.inOrder {
				who = "the order function"
			}
			s.errs = append(s.errs, fmt.Errorf("%s: %s%s panicked%s: %v\n%s", name, c.where(), who, c.during(), v, debug.Stack()))
		}
	}()
	check(c)
	return true
}

// checker runs one check: it makes the queues and items, applies each
// operation to a queue and to a model of it, and compares the two.
type checker struct {
	name   string
	p      policy.Policy
	order  func(a, b *policy.Item) int
	err    error
	models []*model
	items  []*policy.Item // every item made, in order of making
	state  map[*policy.Item]*itemState
	seq    uint64    // last Seq handed out
	step   int       // operation number in a random run; 0 outside one
	ctx    string    // what the check is doing, for failures; "" if plain
	op     operation // the operation under way, for panics
	last   operation // the last operation done, for failures
	// inOrder is set while the order function runs, to tell its panics
	// from the queue's.
	inOrder bool
}

// operation is one call to a queue, described only when a check fails.
type operation struct {
	m      *model
	method string       // "" for none
	arg    *policy.Item // the argument of Push and Remove
	popped *policy.Item // the result of Pop
	ok     bool         // the result of Remove
}

// describeOp describes a call done, with its result.
func (c *checker) describeOp(o operation) string {
	switch o.method {
	case "":
		return "no operation"
	case "NewQueue":
		return "NewQueue()"
	case "Pop":
		return fmt.Sprintf("%s.Pop() returned %s", o.m.name, c.describe(o.popped))
	case "Remove":
		return fmt.Sprintf("%s.Remove(%s) = %v", o.m.name, c.describe(o.arg), o.ok)
	case "Push":
		return fmt.Sprintf("%s.Push(%s)", o.m.name, c.describe(o.arg))
	}
	return fmt.Sprintf("%s.%s()", o.m.name, o.method)
}

// describeCall describes a call under way (for a panic), without its
// result.
func (c *checker) describeCall(o operation) string {
	switch o.method {
	case "Pop", "Len":
		return fmt.Sprintf("%s.%s()", o.m.name, o.method)
	case "Remove":
		return fmt.Sprintf("%s.Remove(%s)", o.m.name, c.describe(o.arg))
	}
	return c.describeOp(o)
}

// model is what one queue should hold.
type model struct {
	name  string
	q     policy.Queue
	items []*policy.Item // queued items, in no order
	pos   map[*policy.Item]int
}

// itemState is what the checker knows of one item.
type itemState struct {
	in   *model   // the queue holding it, or nil
	last string   // why it is in no queue: "popped from queue A", ...
	snap snapshot // its fields as the checker last set them
}

// snapshot is a copy of an item's exported fields.
type snapshot struct {
	deadline time.Time
	seq      uint64
	priority int
	tag      any
	name     string
	resumed  bool
}

func snap(it *policy.Item) snapshot {
	return snapshot{it.Deadline, it.Seq, it.Priority, it.Tag, it.Name, it.Resumed}
}

// describe describes an item as the suite made it, whatever a queue
// may have written to it since.
func (c *checker) describe(it *policy.Item) string {
	st := c.state[it]
	if st == nil { // nil, or an item the suite did not make
		return describe(it)
	}
	s := st.snap
	return describe(&policy.Item{Deadline: s.deadline, Seq: s.seq, Priority: s.priority, Tag: s.tag, Resumed: s.resumed})
}

// failf records the check's failure and ends the check.
func (c *checker) failf(format string, args ...any) {
	c.err = fmt.Errorf("%s: %s%s", c.name, c.where(), fmt.Sprintf(format, args...))
	panic(abort{})
}

func (c *checker) where() string {
	s := ""
	if c.ctx != "" {
		s = c.ctx + ": "
	}
	if c.step != 0 {
		s += fmt.Sprintf("operation %d: ", c.step)
	}
	return s
}

func (c *checker) during() string {
	if c.op.method == "" {
		return ""
	}
	return " in " + c.describeCall(c.op)
}

// newQueue makes a queue of the policy and its model.
func (c *checker) newQueue() *model {
	name := "queue " + string(rune('A'+len(c.models)))
	c.op = operation{method: "NewQueue"}
	q := c.p.NewQueue()
	c.op = operation{}
	if q == nil {
		c.failf("NewQueue() returned nil")
	}
	m := &model{name: name, q: q, pos: make(map[*policy.Item]int)}
	c.models = append(c.models, m)
	c.done(operation{method: "NewQueue"})
	return m
}

// item makes a new message with fields drawn from r.
func (c *checker) item(r *rand.Rand) *policy.Item {
	c.seq++
	it := &policy.Item{Seq: c.seq, Name: "m" + strconv.FormatUint(c.seq, 10)}
	if r.IntN(4) != 0 { // a quarter have no deadline
		it.Deadline = base.Add(time.Duration(r.IntN(8)) * time.Millisecond)
	}
	if r.IntN(2) == 0 {
		it.Priority = r.IntN(4) - 1
	}
	it.Tag = [...]any{nil, nil, "A", "B", "C"}[r.IntN(5)]
	c.adopt(it)
	return it
}

// items makes n new messages.
func (c *checker) itemsN(r *rand.Rand, n int) []*policy.Item {
	its := make([]*policy.Item, n)
	for i := range its {
		its[i] = c.item(r)
	}
	return its
}

// resumedCopy makes a new item for the continuation of it: the same
// fields, Resumed set.
func (c *checker) resumedCopy(it *policy.Item) *policy.Item {
	cp := &policy.Item{
		Deadline: it.Deadline, Seq: it.Seq, Priority: it.Priority, Tag: it.Tag,
		Name: it.Name, Resumed: true,
	}
	c.adopt(cp)
	return cp
}

// adopt records a new item as never pushed.
func (c *checker) adopt(it *policy.Item) {
	c.items = append(c.items, it)
	c.state[it] = &itemState{last: "never pushed", snap: snap(it)}
}

// resume marks an item in no queue as a resumed continuation, as the
// runtime may before pushing it again.
func (c *checker) resume(it *policy.Item) {
	st := c.state[it]
	if st.in != nil {
		panic("policytest: internal error: resuming a queued item")
	}
	it.Resumed = true
	st.snap = snap(it)
}

func (c *checker) push(m *model, it *policy.Item) {
	st := c.state[it]
	if st.in != nil {
		panic("policytest: internal error: pushing a queued item")
	}
	c.op = operation{m: m, method: "Push", arg: it}
	m.q.Push(it)
	c.op = operation{}
	m.pos[it] = len(m.items)
	m.items = append(m.items, it)
	st.in = m
	c.done(operation{m: m, method: "Push", arg: it})
}

// pop pops from m, checks that the item was queued there and, given an
// order, that it was the first, and returns it (nil if m was empty).
func (c *checker) pop(m *model) *policy.Item {
	c.op = operation{m: m, method: "Pop"}
	got := m.q.Pop()
	c.op = operation{}
	if got == nil {
		if len(m.items) > 0 {
			c.failf("%s.Pop() returned nil with %s queued: %s", m.name, count(len(m.items), "item"), c.describeList(m.sorted(c)))
		}
		c.done(operation{m: m, method: "Pop"})
		return nil
	}
	st := c.state[got]
	switch {
	case st == nil:
		c.failf("%s.Pop() returned %s, an item the suite never made", m.name, c.describe(got))
	case len(m.items) == 0:
		c.failf("%s.Pop() returned %s from an empty queue (the item was %s)", m.name, c.describe(got), c.status(got))
	case st.in != m:
		c.failf("%s.Pop() returned %s, which was %s", m.name, c.describe(got), c.status(got))
	}
	if c.order != nil {
		if first := m.first(c); first != got {
			c.failf("%s.Pop() returned %s, but %s was queued and comes first", m.name, c.describe(got), c.describe(first))
		}
	}
	m.del(got)
	st.in, st.last = nil, "popped from "+m.name
	c.done(operation{m: m, method: "Pop", popped: got})
	return got
}

// remove removes it from m and checks the answer against the model.
func (c *checker) remove(m *model, it *policy.Item) {
	st := c.state[it]
	want := st.in == m
	c.op = operation{m: m, method: "Remove", arg: it}
	got := m.q.Remove(it)
	c.op = operation{}
	if got != want {
		if want {
			c.failf("%s.Remove(%s) = false for a queued item", m.name, c.describe(it))
		}
		c.failf("%s.Remove(%s) = true for an item %s", m.name, c.describe(it), c.status(it))
	}
	if got {
		m.del(it)
		st.in, st.last = nil, "removed from "+m.name
	}
	c.done(operation{m: m, method: "Remove", arg: it, ok: got})
}

// drain pops m until it is empty, checks that Pop then returns nil, and
// returns the items popped.
func (c *checker) drain(m *model) []*policy.Item {
	var popped []*policy.Item
	for len(m.items) > 0 {
		popped = append(popped, c.pop(m))
	}
	c.pop(m) // fails unless nil
	return popped
}

// status says where the checker knows an item to be.
func (c *checker) status(it *policy.Item) string {
	st := c.state[it]
	if st == nil {
		return "never made by the suite"
	}
	if st.in != nil {
		return "queued in " + st.in.name
	}
	return st.last
}

// done records op as the last operation and compares every queue's Len
// with its model.
func (c *checker) done(op operation) {
	c.last = op
	for _, m := range c.models {
		c.op = operation{m: m, method: "Len"}
		n := m.q.Len()
		c.op = operation{}
		switch {
		case n == len(m.items):
		case op.method == "NewQueue" && m == c.models[len(c.models)-1]:
			c.failf("NewQueue() returned a queue with Len() = %d, want 0", n)
		default:
			c.failf("after %s, %s.Len() = %d, want %d", c.describeOp(op), m.name, n, len(m.items))
		}
	}
}

// checkUnchanged compares every item with its snapshot. when says when
// the check is made; "" means just after the last operation.
func (c *checker) checkUnchanged(when string) {
	for _, it := range c.items {
		want := c.state[it].snap
		if diff := diffSnap(want, snap(it)); diff != "" {
			if when == "" {
				when = "after " + c.describeOp(c.last)
			}
			c.failf("%s, item %s (%s) changed: %s", when, c.describe(it), c.status(it), diff)
		}
	}
}

func diffSnap(was, is snapshot) string {
	var d []string
	if was.deadline != is.deadline {
		d = append(d, fmt.Sprintf("Deadline %s became %s", deadlineString(was.deadline), deadlineString(is.deadline)))
	}
	if was.seq != is.seq {
		d = append(d, fmt.Sprintf("Seq %d became %d", was.seq, is.seq))
	}
	if was.priority != is.priority {
		d = append(d, fmt.Sprintf("Priority %d became %d", was.priority, is.priority))
	}
	if was.tag != is.tag {
		d = append(d, fmt.Sprintf("Tag %#v became %#v", was.tag, is.tag))
	}
	if was.name != is.name {
		d = append(d, fmt.Sprintf("Name %q became %q", was.name, is.name))
	}
	if was.resumed != is.resumed {
		d = append(d, fmt.Sprintf("Resumed %v became %v", was.resumed, is.resumed))
	}
	return strings.Join(d, ", ")
}

// cmp is the promised order with ties broken by Seq.
func (c *checker) cmp(a, b *policy.Item) int {
	if x := c.order(a, b); x != 0 {
		return x
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// first returns m's first item by the promised order.
func (m *model) first(c *checker) *policy.Item {
	c.inOrder = true
	first := slices.MinFunc(m.items, c.cmp)
	c.inOrder = false
	return first
}

// sorted returns m's items in the promised order, or by Seq without one.
func (m *model) sorted(c *checker) []*policy.Item {
	s := slices.Clone(m.items)
	if c.order != nil {
		c.inOrder = true
		slices.SortFunc(s, c.cmp)
		c.inOrder = false
	} else {
		slices.SortFunc(s, func(a, b *policy.Item) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	return s
}

func (m *model) del(it *policy.Item) {
	i := m.pos[it]
	last := len(m.items) - 1
	m.items[i] = m.items[last]
	m.pos[m.items[i]] = i
	m.items[last] = nil
	m.items = m.items[:last]
	delete(m.pos, it)
}

// describe gives the fields of an item that an order may look at, those
// not at their zero value: {seq 3, deadline +2ms, priority 1, tag "A",
// resumed}.
func describe(it *policy.Item) string {
	if it == nil {
		return "nil"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{seq %d, deadline %s", it.Seq, deadlineString(it.Deadline))
	if it.Priority != 0 {
		fmt.Fprintf(&b, ", priority %d", it.Priority)
	}
	if it.Tag != nil {
		fmt.Fprintf(&b, ", tag %#v", it.Tag)
	}
	if it.Resumed {
		b.WriteString(", resumed")
	}
	b.WriteString("}")
	return b.String()
}

// deadlineString shows a deadline relative to base, as the suite makes
// them, or in full if it is far from base.
func deadlineString(d time.Time) string {
	if d.IsZero() {
		return "none"
	}
	if off := d.Sub(base); off >= 0 && off < time.Hour {
		return "+" + off.String()
	}
	return d.Format(time.RFC3339Nano)
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// describeList describes the first few items of a list.
func (c *checker) describeList(its []*policy.Item) string {
	const show = 4
	var parts []string
	for i, it := range its {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(its)-show))
			break
		}
		parts = append(parts, c.describe(it))
	}
	return strings.Join(parts, ", ")
}
