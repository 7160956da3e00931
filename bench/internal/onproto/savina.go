package onproto

import (
	"context"
	"math/rand/v2"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/crisprt/crisp/bench/internal/workload"
)

type increment struct{}
type retrieve struct{}

type counter struct {
	n    int64
	done chan<- int64
}

func (a *counter) Receive(c actor.Context) {
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

func (a *producer) Receive(c actor.Context) {
	if _, ok := c.Message().(start); ok {
		for range a.n {
			c.Send(a.counter, increment{})
		}
		c.Send(a.counter, retrieve{})
	}
}

// Counting: a producer actor floods the counter, then asks for the count.
func Counting(ctx context.Context, t workload.Timer, p workload.Counting) (workload.Result, error) {
	sys := newSystem()
	defer sys.Shutdown()
	count := make(chan int64, 1)
	t.StartTimer()
	cnt := spawn(sys, &counter{done: count})
	prod := spawn(sys, &producer{counter: cnt, n: p.N})
	sys.Root.Send(prod, start{})
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

func (a *ringMember) Receive(c actor.Context) {
	if m, ok := c.Message().(token); ok {
		if m.v == 0 {
			a.done <- a.id
			return
		}
		c.Send(a.next, token{m.v - 1})
	}
}

// ThreadRing: members know their successor's PID; one token, so bounded
// mailboxes.
func ThreadRing(ctx context.Context, t workload.Timer, p workload.ThreadRing) (workload.Result, error) {
	sys := newSystem()
	defer sys.Shutdown()
	done := make(chan int, 1)
	t.StartTimer()
	members := make([]*ringMember, p.Actors)
	pids := make([]*actor.PID, p.Actors)
	for i := range members {
		members[i] = &ringMember{id: i, done: done}
		pids[i] = spawn(sys, members[i], bounded(1))
	}
	for i, m := range members { // before any message: the sends publish it
		m.next = pids[(i+1)%len(pids)]
	}
	sys.Root.Send(pids[0], token{p.Passes})
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

func (a *fjWorker) Receive(c actor.Context) {
	if _, ok := c.Message().(compute); ok {
		a.sum += workload.Spin(37.2)
		a.n++
		if a.n == a.want {
			a.done <- int64(a.n)
		}
	}
}

// ForkJoin: the driver sends through the root context.
func ForkJoin(ctx context.Context, t workload.Timer, p workload.ForkJoin) (r workload.Result, err error) {
	sys := newSystem()
	defer sys.Shutdown()
	counts := make(chan int64, p.Actors)
	t.StartTimer()
	workers := make([]*actor.PID, p.Actors)
	for i := range workers {
		workers[i] = spawn(sys, &fjWorker{want: p.Messages, done: counts})
	}
	for m := range p.Messages {
		if workload.Cancelled(ctx, m) {
			return r, ctx.Err()
		}
		for _, w := range workers {
			sys.Root.Send(w, compute{})
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

type meet struct {
	color int
	from  *actor.PID
}
type changeColor struct{ color int }
type exit struct{}
type meetingCount struct{ n int64 }

type mall struct {
	meetings, want, creatures int
	waiting                   *actor.PID
	r                         workload.Result
	done                      chan<- workload.Result
}

func (a *mall) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case meet:
		switch {
		case a.meetings >= a.want:
			c.Send(m.from, exit{})
		case a.waiting == nil:
			a.waiting = m.from
		default:
			a.meetings++
			c.Send(a.waiting, m)
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

func (a *chameneo) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case start:
		c.Send(a.mall, meet{a.color, c.Self()})
	case meet: // the mall paired us with m.from
		a.color = workload.Complement(a.color, m.color)
		a.meetings++
		c.Send(m.from, changeColor{a.color})
		c.Send(a.mall, meet{a.color, c.Self()})
	case changeColor:
		a.color = m.color
		a.meetings++
		c.Send(a.mall, meet{a.color, c.Self()})
	case exit:
		c.Send(a.mall, meetingCount{a.meetings})
	}
}

// Chameneos: the mall passes the second request, which names its sender,
// on to the waiting creature.
func Chameneos(ctx context.Context, t workload.Timer, p workload.Chameneos) (workload.Result, error) {
	sys := newSystem()
	defer sys.Shutdown()
	done := make(chan workload.Result, 1)
	t.StartTimer()
	m := spawn(sys, &mall{want: p.Meetings, creatures: p.Chameneos, done: done})
	for i := range p.Chameneos {
		sys.Root.Send(spawn(sys, &chameneo{mall: m, color: i % 3}), start{})
	}
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type bigPing struct{ from *actor.PID }
type bigPong struct{ id int }

type bigActor struct {
	id    int
	peers []*actor.PID
	rnd   *rand.Rand
	want  int64
	r     workload.Result
	sink  chan<- workload.Result
}

func (a *bigActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case start:
		c.Send(a.peers[a.rnd.IntN(len(a.peers))], bigPing{c.Self()})
	case bigPing:
		c.Send(m.from, bigPong{a.id})
	case bigPong:
		a.r.Count++
		a.r.Check += int64(m.id)
		if a.r.Count == a.want {
			a.sink <- a.r
			return
		}
		c.Send(a.peers[a.rnd.IntN(len(a.peers))], bigPing{c.Self()})
	}
}

// Big: every actor holds the PIDs of all.
func Big(ctx context.Context, t workload.Timer, p workload.Big) (r workload.Result, err error) {
	sys := newSystem()
	defer sys.Shutdown()
	sink := make(chan workload.Result, p.Actors)
	t.StartTimer()
	pids := make([]*actor.PID, p.Actors)
	for i := range pids {
		pids[i] = spawn(sys, &bigActor{id: i, peers: pids, rnd: workload.NewRand(uint64(i)), want: int64(p.Pings), sink: sink})
	}
	for _, pid := range pids {
		sys.Root.Send(pid, start{})
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
