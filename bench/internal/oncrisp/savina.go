package oncrisp

import (
	"context"
	"math/rand/v2"

	"github.com/crisprt/crisp/bench/internal/workload"
	"github.com/crisprt/crisp/crisp"
)

type counter struct{ n int64 }

func increment(_ *crisp.Proc, c *counter) { c.n++ }

// Counting: the producer is an actor whose one handler sends every
// increment, then a last message on which the counter reports.
func (c Config) Counting(ctx context.Context, t workload.Timer, p workload.Counting) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	count := make(chan int64, 1)
	t.StartTimer()
	cnt := crisp.Spawn(sys, &counter{})
	producer := crisp.Spawn(sys, struct{}{})
	crisp.Tell(producer, func(*crisp.Proc, struct{}) {
		for range p.N {
			crisp.Tell(cnt, increment, o...)
		}
		crisp.Tell(cnt, func(_ *crisp.Proc, c *counter) { count <- c.n }, o...)
	}, o...)
	n, err := workload.Await(ctx, count)
	t.StopTimer()
	return workload.Result{Count: n, Check: int64(p.N)}, err
}

type ringMember struct {
	id   int
	next *crisp.Actor[*ringMember]
	o    []crisp.SendOption
	done chan<- int
}

// passToken takes the token with value v and passes it on, v-1.
func passToken(_ *crisp.Proc, m *ringMember, v int) {
	if v == 0 {
		m.done <- m.id
		return
	}
	crisp.Send(m.next, passToken, v-1, m.o...)
}

// ThreadRing: the token is a Send of its value to one handler.
func (c Config) ThreadRing(ctx context.Context, t workload.Timer, p workload.ThreadRing) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan int, 1)
	t.StartTimer()
	members := make([]ringMember, p.Actors)
	ring := make([]*crisp.Actor[*ringMember], p.Actors)
	for i := range ring {
		members[i] = ringMember{id: i, o: o, done: done}
		ring[i] = crisp.Spawn(sys, &members[i])
	}
	for i := range members { // before any message: the sends publish it
		members[i].next = ring[(i+1)%len(ring)]
	}
	crisp.Send(ring[0], passToken, p.Passes, o...)
	last, err := workload.Await(ctx, done)
	t.StopTimer()
	return workload.Result{Count: int64(last), Check: 1}, err
}

type fjWorker struct {
	n, want int
	sum     float64
	done    chan<- int64
}

func compute(_ *crisp.Proc, w *fjWorker) {
	w.sum += workload.Spin(37.2)
	w.n++
	if w.n == w.want {
		w.done <- int64(w.n)
	}
}

// ForkJoin: the driver Tells every worker, round robin.
func (c Config) ForkJoin(ctx context.Context, t workload.Timer, p workload.ForkJoin) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	counts := make(chan int64, p.Actors)
	t.StartTimer()
	workers := make([]*crisp.Actor[*fjWorker], p.Actors)
	for i := range workers {
		workers[i] = crisp.Spawn(sys, &fjWorker{want: p.Messages, done: counts})
	}
	for m := range p.Messages {
		if workload.Cancelled(ctx, m) {
			return r, ctx.Err()
		}
		for _, w := range workers {
			crisp.Tell(w, compute, o...)
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
	meetings, want int
	waiting        meeting
	r              workload.Result
	all            []*crisp.Actor[*chameneo] // by id
	o              []crisp.SendOption
	done           chan<- workload.Result
}

type chameneo struct {
	id       int
	all      []*crisp.Actor[*chameneo] // by id
	mall     *crisp.Actor[*mall]
	color    int
	meetings int64
	o        []crisp.SendOption
}

// meeting is a creature's request to the mall, and the pairing the mall
// hands the first creature of a pair: the other creature's id and its
// colour, in one word (id<<2 | colour), so that a Send carries it
// without allocating; 0 is none (ids start at 1).
type meeting int

func meetingOf(id, color int) meeting { return meeting(id<<2 | color) }

func (m meeting) id() int    { return int(m) >> 2 }
func (m meeting) color() int { return int(m) & 3 }

// Chameneos: the mall pairs requests and hands the first creature of a
// pair the second's request. Every message is a crisp.Send of a word to
// a handler that is one function for all messages of its kind, as in
// pingpong and big: none allocates (with a closure a message, 232 bytes
// a meeting and 16 collections a run).
func (c Config) Chameneos(ctx context.Context, t workload.Timer, p workload.Chameneos) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan workload.Result, 1)
	t.StartTimer()
	all := make([]*crisp.Actor[*chameneo], p.Chameneos+1)
	theMall := crisp.Spawn(sys, &mall{want: p.Meetings, all: all, o: o, done: done})
	for id := 1; id <= p.Chameneos; id++ {
		all[id] = crisp.Spawn(sys, &chameneo{id: id, all: all, color: (id - 1) % 3, mall: theMall, o: o})
	}
	for _, ch := range all[1:] {
		crisp.Send(ch, onChameneoStart, struct{}{}, o...)
	}
	r, err = workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

// ask asks the mall for a partner.
func (ch *chameneo) ask() { crisp.Send(ch.mall, onMallRequest, meetingOf(ch.id, ch.color), ch.o...) }

func onChameneoStart(_ *crisp.Proc, ch *chameneo, _ struct{}) { ch.ask() }

// onMallRequest pairs a request with the one waiting, or keeps it
// waiting, or, once the meetings are done, sends the creature home.
func onMallRequest(_ *crisp.Proc, m *mall, req meeting) {
	switch {
	case m.meetings >= m.want:
		crisp.Send(m.all[req.id()], onChameneoExit, struct{}{}, m.o...)
	case m.waiting == 0:
		m.waiting = req
	default:
		m.meetings++
		crisp.Send(m.all[m.waiting.id()], onChameneoMeet, req, m.o...)
		m.waiting = 0
	}
}

// onChameneoMeet runs on the waiting creature: it takes the complement
// colour, passes it to its partner, and both ask again.
func onChameneoMeet(_ *crisp.Proc, ch *chameneo, partner meeting) {
	ch.color = workload.Complement(ch.color, partner.color())
	ch.meetings++
	crisp.Send(ch.all[partner.id()], onChameneoMet, ch.color, ch.o...)
	ch.ask()
}

func onChameneoMet(_ *crisp.Proc, ch *chameneo, color int) {
	ch.color = color
	ch.meetings++
	ch.ask()
}

func onChameneoExit(_ *crisp.Proc, ch *chameneo, _ struct{}) {
	crisp.Send(ch.mall, onMallExited, ch.meetings, ch.o...)
}

func onMallExited(_ *crisp.Proc, m *mall, meetings int64) {
	m.r.Count += meetings
	m.r.Check++
	if m.r.Check == int64(len(m.all)-1) {
		m.done <- m.r
	}
}

type bigActor struct {
	id     int
	self   *crisp.Actor[*bigActor]
	actors []*crisp.Actor[*bigActor]
	rnd    *rand.Rand
	pings  int
	o      []crisp.SendOption
	sink   chan<- workload.Result
	r      workload.Result
}

// ping sends a ping, carrying its sender, to a random actor.
func (b *bigActor) ping() {
	crisp.Send(b.actors[b.rnd.IntN(len(b.actors))], onBigPing, b.self, b.o...)
}

// onBigPing answers a ping from an actor with a pong carrying its id.
func onBigPing(_ *crisp.Proc, b *bigActor, from *crisp.Actor[*bigActor]) {
	crisp.Send(from, onBigPong, b.id, b.o...)
}

// onBigPong counts a pong from actor id and pings again until the
// pings are done.
func onBigPong(_ *crisp.Proc, b *bigActor, id int) {
	b.r.Count++
	b.r.Check += int64(id)
	if b.r.Count == int64(b.pings) {
		b.sink <- b.r
		return
	}
	b.ping()
}

// Big: a ping is a Send of its sender, answered by a Send of the
// answering actor's id.
func (c Config) Big(ctx context.Context, t workload.Timer, p workload.Big) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	sink := make(chan workload.Result, p.Actors)
	t.StartTimer()
	actors := make([]*crisp.Actor[*bigActor], p.Actors)
	for i := range actors {
		b := &bigActor{id: i, actors: actors, rnd: workload.NewRand(uint64(i)), pings: p.Pings, o: o, sink: sink}
		b.self = crisp.Spawn(sys, b)
		actors[i] = b.self
	}
	for _, a := range actors {
		crisp.Tell(a, func(_ *crisp.Proc, b *bigActor) { b.ping() }, o...)
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
