package ongoakt

import (
	"context"
	"math/rand/v2"

	"github.com/tochemey/goakt/v3/actor"

	"github.com/crisprt/crisp/bench/internal/ongoakt/msg"
	"github.com/crisprt/crisp/bench/internal/workload"
)

type counter struct {
	base
	n    int64
	done chan<- int64
}

func (a *counter) Receive(c *actor.ReceiveContext) {
	switch c.Message().(type) {
	case *msg.Increment:
		a.n++
	case *msg.Retrieve:
		a.done <- a.n
	}
}

type producer struct {
	base
	counter *actor.PID
	n       int
}

func (a *producer) Receive(c *actor.ReceiveContext) {
	if _, ok := c.Message().(*msg.Start); ok {
		for range a.n {
			c.Tell(a.counter, incrementMsg)
		}
		c.Tell(a.counter, retrieveMsg)
	}
}

// Counting: a producer actor floods the counter, then asks for the count.
func Counting(ctx context.Context, t workload.Timer, p workload.Counting) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	count := make(chan int64, 1)
	t.StartTimer()
	cnt, err := rn.spawn("counter", 0, &counter{done: count})
	if err != nil {
		return r, err
	}
	prod, err := rn.spawn("producer", 0, &producer{counter: cnt, n: p.N})
	if err != nil {
		return r, err
	}
	if err := actor.Tell(ctx, prod, startMsg); err != nil {
		return r, err
	}
	n, err := workload.Await(ctx, count)
	t.StopTimer()
	return workload.Result{Count: n, Check: int64(p.N)}, err
}

type ringMember struct {
	base
	id   int
	next *actor.PID
	done chan<- int
}

func (a *ringMember) Receive(c *actor.ReceiveContext) {
	if m, ok := c.Message().(*msg.Token); ok {
		if m.Left == 0 {
			a.done <- a.id
			return
		}
		c.Tell(a.next, &msg.Token{Left: m.Left - 1})
	}
}

// ThreadRing: members know their successor's PID.
func ThreadRing(ctx context.Context, t workload.Timer, p workload.ThreadRing) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	done := make(chan int, 1)
	t.StartTimer()
	members := make([]*ringMember, p.Actors)
	pids := make([]*actor.PID, p.Actors)
	for i := range members {
		members[i] = &ringMember{id: i, done: done}
		if pids[i], err = rn.spawn("member", i, members[i]); err != nil {
			return r, err
		}
	}
	for i, m := range members { // before any message: the sends publish it
		m.next = pids[(i+1)%len(pids)]
	}
	if err := actor.Tell(ctx, pids[0], &msg.Token{Left: int64(p.Passes)}); err != nil {
		return r, err
	}
	last, err := workload.Await(ctx, done)
	t.StopTimer()
	return workload.Result{Count: int64(last), Check: 1}, err
}

type fjWorker struct {
	base
	n, want int
	sum     float64
	done    chan<- int64
}

func (a *fjWorker) Receive(c *actor.ReceiveContext) {
	if _, ok := c.Message().(*msg.Compute); ok {
		a.sum += workload.Spin(37.2)
		a.n++
		if a.n == a.want {
			a.done <- int64(a.n)
		}
	}
}

// ForkJoin: the driver sends with actor.Tell.
func ForkJoin(ctx context.Context, t workload.Timer, p workload.ForkJoin) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	counts := make(chan int64, p.Actors)
	t.StartTimer()
	workers := make([]*actor.PID, p.Actors)
	for i := range workers {
		if workers[i], err = rn.spawn("worker", i, &fjWorker{want: p.Messages, done: counts}); err != nil {
			return r, err
		}
	}
	for m := range p.Messages {
		if workload.Cancelled(ctx, m) {
			return r, ctx.Err()
		}
		for _, w := range workers {
			if err := actor.Tell(ctx, w, computeMsg); err != nil {
				return r, err
			}
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

type mall struct {
	base
	meetings, want, creatures int
	waiting                   *actor.PID
	r                         workload.Result
	done                      chan<- workload.Result
}

func (a *mall) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Meet:
		switch {
		case a.meetings >= a.want:
			c.Tell(c.Sender(), exitMsg)
		case a.waiting == nil:
			a.waiting = c.Sender()
		default:
			a.meetings++
			c.Forward(a.waiting) // keeps the second creature as sender
			a.waiting = nil
		}
	case *msg.MeetingCount:
		a.r.Count += m.N
		a.r.Check++
		if a.r.Check == int64(a.creatures) {
			a.done <- a.r
		}
	}
}

type chameneo struct {
	base
	mall     *actor.PID
	color    int
	meetings int64
}

func (a *chameneo) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Start:
		c.Tell(a.mall, &msg.Meet{Color: int32(a.color)})
	case *msg.Meet: // the mall paired us with the sender
		a.color = workload.Complement(a.color, int(m.Color))
		a.meetings++
		c.Tell(c.Sender(), &msg.ChangeColor{Color: int32(a.color)})
		c.Tell(a.mall, &msg.Meet{Color: int32(a.color)})
	case *msg.ChangeColor:
		a.color = int(m.Color)
		a.meetings++
		c.Tell(a.mall, &msg.Meet{Color: int32(a.color)})
	case *msg.Exit:
		c.Tell(a.mall, &msg.MeetingCount{N: a.meetings})
	}
}

// Chameneos: the mall forwards the second request to the waiting
// creature, keeping its sender.
func Chameneos(ctx context.Context, t workload.Timer, p workload.Chameneos) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	done := make(chan workload.Result, 1)
	t.StartTimer()
	m, err := rn.spawn("mall", 0, &mall{want: p.Meetings, creatures: p.Chameneos, done: done})
	if err != nil {
		return r, err
	}
	for i := range p.Chameneos {
		ch, err := rn.spawn("chameneo", i, &chameneo{mall: m, color: i % 3})
		if err != nil {
			return r, err
		}
		if err := actor.Tell(ctx, ch, startMsg); err != nil {
			return r, err
		}
	}
	r, err = workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type bigActor struct {
	base
	id    int
	peers []*actor.PID
	rnd   *rand.Rand
	want  int64
	r     workload.Result
	sink  chan<- workload.Result
}

func (a *bigActor) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Start:
		c.Tell(a.peers[a.rnd.IntN(len(a.peers))], bigPingMsg)
	case *msg.BigPing:
		c.Tell(c.Sender(), &msg.BigPong{Id: int32(a.id)})
	case *msg.BigPong:
		a.r.Count++
		a.r.Check += int64(m.Id)
		if a.r.Count == a.want {
			a.sink <- a.r
			return
		}
		c.Tell(a.peers[a.rnd.IntN(len(a.peers))], bigPingMsg)
	}
}

// Big: every actor holds the PIDs of all.
func Big(ctx context.Context, t workload.Timer, p workload.Big) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	sink := make(chan workload.Result, p.Actors)
	t.StartTimer()
	pids := make([]*actor.PID, p.Actors)
	for i := range pids {
		a := &bigActor{id: i, peers: pids, rnd: workload.NewRand(uint64(i)), want: int64(p.Pings), sink: sink}
		if pids[i], err = rn.spawn("big", i, a); err != nil {
			return r, err
		}
	}
	for _, pid := range pids {
		if err := actor.Tell(ctx, pid, startMsg); err != nil {
			return r, err
		}
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
