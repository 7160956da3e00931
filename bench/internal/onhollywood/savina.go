package onhollywood

import (
	"context"
	"math/rand/v2"

	"github.com/anthdm/hollywood/actor"

	"github.com/crisprt/crisp/bench/internal/workload"
)

type increment struct{}
type retrieve struct{}

type counter struct {
	n    int64
	done chan<- int64
}

func (a *counter) Receive(c *actor.Context) {
	switch c.Message().(type) {
	case increment:
		a.n++
	case retrieve:
		a.done <- a.n
	}
}

type producer struct {
	counter *actor.PID
	n       int
}

func (a *producer) Receive(c *actor.Context) {
	if _, ok := c.Message().(start); ok {
		for range a.n {
			c.Send(a.counter, increment{})
		}
		c.Send(a.counter, retrieve{})
	}
}

// Counting: a producer actor floods the counter, then asks for the count.
func Counting(ctx context.Context, t workload.Timer, p workload.Counting) (workload.Result, error) {
	e, err := newEngine()
	if err != nil {
		return workload.Result{}, err
	}
	count := make(chan int64, 1)
	t.StartTimer()
	cnt := spawn(e, &counter{done: count}, "counter")
	prod := spawn(e, &producer{counter: cnt, n: p.N}, "producer")
	e.Send(prod, start{})
	n, err := workload.Await(ctx, count)
	t.StopTimer()
	return workload.Result{Count: n, Check: int64(p.N)}, err
}

type token struct{ v int }

type ringMember struct {
	id   int
	next *actor.PID
	done chan<- int
}

func (a *ringMember) Receive(c *actor.Context) {
	if m, ok := c.Message().(token); ok {
		if m.v == 0 {
			a.done <- a.id
			return
		}
		c.Send(a.next, token{m.v - 1})
	}
}

// ThreadRing: members know their successor's PID.
func ThreadRing(ctx context.Context, t workload.Timer, p workload.ThreadRing) (workload.Result, error) {
	e, err := newEngine()
	if err != nil {
		return workload.Result{}, err
	}
	done := make(chan int, 1)
	t.StartTimer()
	members := make([]*ringMember, p.Actors)
	pids := make([]*actor.PID, p.Actors)
	for i := range members {
		members[i] = &ringMember{id: i, done: done}
		pids[i] = spawn(e, members[i], "member")
	}
	for i, m := range members { // before any message: the sends publish it
		m.next = pids[(i+1)%len(pids)]
	}
	e.Send(pids[0], token{p.Passes})
	last, err := workload.Await(ctx, done)
	t.StopTimer()
	return workload.Result{Count: int64(last), Check: 1}, err
}

type compute struct{}

type fjWorker struct {
	n, want int
	sum     float64
	done    chan<- int64
}

func (a *fjWorker) Receive(c *actor.Context) {
	if _, ok := c.Message().(compute); ok {
		a.sum += workload.Spin(37.2)
		a.n++
		if a.n == a.want {
			a.done <- int64(a.n)
		}
	}
}

// ForkJoin: the driver sends through the engine.
func ForkJoin(ctx context.Context, t workload.Timer, p workload.ForkJoin) (r workload.Result, err error) {
	e, err := newEngine()
	if err != nil {
		return r, err
	}
	counts := make(chan int64, p.Actors)
	t.StartTimer()
	workers := make([]*actor.PID, p.Actors)
	for i := range workers {
		workers[i] = spawn(e, &fjWorker{want: p.Messages, done: counts}, "worker")
	}
	for m := range p.Messages {
		if workload.Cancelled(ctx, m) {
			return r, ctx.Err()
		}
		for _, w := range workers {
			e.Send(w, compute{})
		}
	}
	for range p.Actors {
		n, err := workload.Await(ctx, counts)
		if err != nil {
			return r, err
		}
		r.Count += n
		r.Check++
	}
	t.StopTimer()
	return r, nil
}

type meet struct{ color int }
type changeColor struct{ color int }
type exit struct{}
type meetingCount struct{ n int64 }

type mall struct {
	meetings, want, creatures int
	waiting                   *actor.PID
	r                         workload.Result
	done                      chan<- workload.Result
}

func (a *mall) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case meet:
		switch {
		case a.meetings >= a.want:
			c.Send(c.Sender(), exit{})
		case a.waiting == nil:
			a.waiting = c.Sender()
		default:
			a.meetings++
			// hollywood's Forward makes the mall the sender; the waiting
			// creature must see the second one as the sender.
			c.Engine().SendWithSender(a.waiting, m, c.Sender())
			a.waiting = nil
		}
	case meetingCount:
		a.r.Count += m.n
		a.r.Check++
		if a.r.Check == int64(a.creatures) {
			a.done <- a.r
		}
	}
}

type chameneo struct {
	mall     *actor.PID
	color    int
	meetings int64
}

func (a *chameneo) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case start:
		c.Send(a.mall, meet{a.color})
	case meet: // the mall paired us with the sender
		a.color = workload.Complement(a.color, m.color)
		a.meetings++
		c.Send(c.Sender(), changeColor{a.color})
		c.Send(a.mall, meet{a.color})
	case changeColor:
		a.color = m.color
		a.meetings++
		c.Send(a.mall, meet{a.color})
	case exit:
		c.Send(a.mall, meetingCount{a.meetings})
	}
}

// Chameneos: the mall passes the second request on to the waiting
// creature, with the second creature as its sender.
func Chameneos(ctx context.Context, t workload.Timer, p workload.Chameneos) (workload.Result, error) {
	e, err := newEngine()
	if err != nil {
		return workload.Result{}, err
	}
	done := make(chan workload.Result, 1)
	t.StartTimer()
	m := spawn(e, &mall{want: p.Meetings, creatures: p.Chameneos, done: done}, "mall")
	for i := range p.Chameneos {
		e.Send(spawn(e, &chameneo{mall: m, color: i % 3}, "chameneo"), start{})
	}
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type bigPing struct{}
type bigPong struct{ id int }

type bigActor struct {
	id    int
	peers []*actor.PID
	rnd   *rand.Rand
	want  int64
	r     workload.Result
	sink  chan<- workload.Result
}

func (a *bigActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case start:
		c.Send(a.peers[a.rnd.IntN(len(a.peers))], bigPing{})
	case bigPing:
		c.Send(c.Sender(), bigPong{a.id})
	case bigPong:
		a.r.Count++
		a.r.Check += int64(m.id)
		if a.r.Count == a.want {
			a.sink <- a.r
			return
		}
		c.Send(a.peers[a.rnd.IntN(len(a.peers))], bigPing{})
	}
}

// Big: every actor holds the PIDs of all.
func Big(ctx context.Context, t workload.Timer, p workload.Big) (r workload.Result, err error) {
	e, err := newEngine()
	if err != nil {
		return r, err
	}
	sink := make(chan workload.Result, p.Actors)
	t.StartTimer()
	pids := make([]*actor.PID, p.Actors)
	for i := range pids {
		pids[i] = spawn(e, &bigActor{id: i, peers: pids, rnd: workload.NewRand(uint64(i)), want: int64(p.Pings), sink: sink}, "big")
	}
	for _, pid := range pids {
		e.Send(pid, start{})
	}
	for range p.Actors {
		br, err := workload.Await(ctx, sink)
		if err != nil {
			return r, err
		}
		r.Count += br.Count
		r.Check += br.Check
	}
	t.StopTimer()
	return r, nil
}
