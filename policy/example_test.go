package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
)

// noon is the time the examples' deadlines count from.
var noon = time.Date(2013, 3, 1, 12, 0, 0, 0, time.UTC)

// popNames pops q until it is empty and prints the items' names.
func popNames(q policy.Queue) {
	for it := q.Pop(); it != nil; it = q.Pop() {
		fmt.Print(it.Name, " ")
	}
	fmt.Println()
}

func ExampleEDF() {
	q := policy.EDF().NewQueue()
	q.Push(&policy.Item{Seq: 1, Name: "backup"}) // no deadline: after every deadlined item
	q.Push(&policy.Item{Seq: 2, Name: "report", Deadline: noon.Add(50 * time.Millisecond)})
	q.Push(&policy.Item{Seq: 3, Name: "alarm", Deadline: noon.Add(5 * time.Millisecond)})
	q.Push(&policy.Item{Seq: 4, Name: "invoice", Deadline: noon.Add(50 * time.Millisecond)}) // same deadline as report, arrived later
	popNames(q)
	// Output: alarm report invoice backup
}

// customerAFirst runs customer A's work before anyone else's, whatever
// the deadlines, and everything else earliest deadline first. Both parts
// leave ties to arrival order.
func customerAFirst(a, b *policy.Item) int {
	if aIsA, bIsA := a.Tag == "A", b.Tag == "A"; aIsA != bIsA {
		if aIsA {
			return -1
		}
		return 1
	}
	return deadline.Compare(a.Deadline, b.Deadline)
}

func ExampleFunc() {
	p := policy.Func(customerAFirst) // crisp.WithPolicy(p) gives it to an actor

	q := p.NewQueue()
	q.Push(&policy.Item{Seq: 1, Name: "b-urgent", Tag: "B", Deadline: noon.Add(time.Millisecond)})
	q.Push(&policy.Item{Seq: 2, Name: "a-relaxed", Tag: "A", Deadline: noon.Add(time.Hour)})
	q.Push(&policy.Item{Seq: 3, Name: "c-soon", Tag: "C", Deadline: noon.Add(time.Second)})
	q.Push(&policy.Item{Seq: 4, Name: "a-whenever", Tag: "A"})
	popNames(q)
	// Output: a-relaxed a-whenever b-urgent c-soon
}

// resumedFirst is a whole queue type: it runs the continuations of
// started processes before any new message, so work already under way
// finishes before more is taken on. Each class is in EDF order.
type resumedFirst struct {
	resumed, fresh *policy.Heap
}

func newResumedFirst() policy.Queue {
	byDeadline := func(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) }
	return &resumedFirst{resumed: policy.NewHeap(byDeadline), fresh: policy.NewHeap(byDeadline)}
}

func (q *resumedFirst) Push(it *policy.Item) {
	if it.Resumed {
		q.resumed.Push(it)
	} else {
		q.fresh.Push(it)
	}
}

func (q *resumedFirst) Pop() *policy.Item {
	if it := q.resumed.Pop(); it != nil {
		return it
	}
	return q.fresh.Pop()
}

// Remove may ask the heap by the item's class: an item's fields do not
// change while it is queued.
func (q *resumedFirst) Remove(it *policy.Item) bool {
	if it.Resumed {
		return q.resumed.Remove(it)
	}
	return q.fresh.Remove(it)
}

func (q *resumedFirst) Len() int { return q.resumed.Len() + q.fresh.Len() }

func ExampleQueueFunc() {
	p := policy.QueueFunc(newResumedFirst)

	q := p.NewQueue()
	q.Push(&policy.Item{Seq: 7, Name: "new-soon", Deadline: noon.Add(time.Millisecond)})
	q.Push(&policy.Item{Seq: 3, Name: "resumed-late", Deadline: noon.Add(time.Minute), Resumed: true})
	q.Push(&policy.Item{Seq: 8, Name: "new-late", Deadline: noon.Add(time.Minute)})
	q.Push(&policy.Item{Seq: 5, Name: "resumed-soon", Deadline: noon.Add(time.Second), Resumed: true})
	popNames(q)
	// Output: resumed-soon resumed-late new-soon new-late
}

func ExampleByPriority() {
	q := policy.ByPriority().NewQueue()
	q.Push(&policy.Item{Seq: 1, Name: "routine", Deadline: noon})
	q.Push(&policy.Item{Seq: 2, Name: "page-oncall", Priority: 10})
	q.Push(&policy.Item{Seq: 3, Name: "cleanup", Priority: -1, Deadline: noon})
	q.Push(&policy.Item{Seq: 4, Name: "urgent", Deadline: noon.Add(-time.Second)})
	popNames(q)
	// Output: page-oncall urgent routine cleanup
}

func ExampleHeap_Peek() {
	h := policy.NewHeap(func(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) })
	h.Push(&policy.Item{Seq: 1, Name: "later", Deadline: noon.Add(time.Second)})
	h.Push(&policy.Item{Seq: 2, Name: "sooner", Deadline: noon})
	fmt.Println(h.Peek().Name, h.Len())
	// Output: sooner 2
}

// An actor takes a custom queue with crisp.WithPolicy. Under
// resumedFirst (above) a batch that suspends goes on before the alarm
// that arrived meanwhile, though the alarm is due sooner; under the
// default EDF the alarm would run first.
func ExamplePolicy() {
	sys := crisp.NewSystem(crisp.WithClock(clock.NewMock()))
	defer sys.Shutdown(context.Background())
	a := crisp.Spawn(sys, struct{}{}, crisp.WithPolicy(policy.QueueFunc(newResumedFirst)))

	started, alarmSent := make(chan struct{}), make(chan struct{})
	crisp.Tell(a, func(p *crisp.Proc, _ struct{}) {
		close(started)
		<-alarmSent
		fmt.Println("batch: part 1")
		p.Suspend()
		fmt.Println("batch: part 2")
	}, crisp.Within(time.Hour))
	<-started
	crisp.Tell(a, func(*crisp.Proc, struct{}) { fmt.Println("alarm") }, crisp.Within(time.Second))
	close(alarmSent)
	sys.WaitIdle(context.Background())
	// Output:
	// batch: part 1
	// batch: part 2
	// alarm
}
