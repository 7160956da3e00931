package onphony

import (
	"context"
	"math/rand/v2"

	"github.com/Arceliar/phony"

	"github.com/crisprt/crisp/bench/internal/workload"
)

type counter struct {
	phony.Inbox
	n int64
}

type producer struct{ phony.Inbox }

// Counting: the producer is an actor that sends every increment as
// itself, so phony's backpressure applies as it would in an application.
func Counting(ctx context.Context, t workload.Timer, p workload.Counting) (workload.Result, error) {
	count := make(chan int64, 1)
	t.StartTimer()
	cnt, prod := &counter{}, &producer{}
	incr := func() { cnt.n++ }
	prod.Act(nil, func() {
		for range p.N {
			cnt.Act(prod, incr)
		}
		cnt.Act(prod, func() { count <- cnt.n })
	})
	n, err := workload.Await(ctx, count)
	t.StopTimer()
	return workload.Result{Count: n, Check: int64(p.N)}, err
}

type ringMember struct {
	phony.Inbox
	id   int
	next *ringMember
}

// ThreadRing: the token is a closure carrying its value.
func ThreadRing(ctx context.Context, t workload.Timer, p workload.ThreadRing) (workload.Result, error) {
	done := make(chan int, 1)
	t.StartTimer()
	ring := make([]*ringMember, p.Actors)
	for i := range ring {
		ring[i] = &ringMember{id: i}
	}
	for i, m := range ring {
		m.next = ring[(i+1)%len(ring)]
	}
	var pass func(from phony.Actor, to *ringMember, v int)
	pass = func(from phony.Actor, to *ringMember, v int) {
		to.Act(from, func() {
			if v == 0 {
				done <- to.id
				return
			}
			pass(to, to.next, v-1)
		})
	}
	pass(nil, ring[0], p.Passes)
	last, err := workload.Await(ctx, done)
	t.StopTimer()
	return workload.Result{Count: int64(last), Check: 1}, err
}

type fjWorker struct {
	phony.Inbox
	n, want int
	sum     float64
	done    chan<- int64
}

// ForkJoin: the driver, not an actor, sends with a nil sender.
func ForkJoin(ctx context.Context, t workload.Timer, p workload.ForkJoin) (r workload.Result, err error) {
	counts := make(chan int64, p.Actors)
	t.StartTimer()
	workers := make([]*fjWorker, p.Actors)
	computes := make([]func(), p.Actors)
	for i := range workers {
		w := &fjWorker{want: p.Messages, done: counts}
		workers[i] = w
		computes[i] = func() {
			w.sum += workload.Spin(37.2)
			w.n++
			if w.n == w.want {
				w.done <- int64(w.n)
			}
		}
	}
	for m := range p.Messages {
		if workload.Cancelled(ctx, m) {
			return r, ctx.Err()
		}
		for i, w := range workers {
			w.Act(nil, computes[i])
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
	phony.Inbox
	meetings, want int
	waiting        *chameneo
	r              workload.Result
}

type chameneo struct {
	phony.Inbox
	color    int
	meetings int64
}

// Chameneos: the mall hands the waiting creature a closure to meet the
// second.
func Chameneos(ctx context.Context, t workload.Timer, p workload.Chameneos) (workload.Result, error) {
	done := make(chan workload.Result, 1)
	t.StartTimer()
	m := &mall{want: p.Meetings}
	var ask func(ch *chameneo)
	ask = func(ch *chameneo) {
		color := ch.color
		m.Act(ch, func() {
			switch {
			case m.meetings >= m.want:
				ch.Act(nil, func() {
					meetings := ch.meetings
					m.Act(ch, func() {
						m.r.Count += meetings
						m.r.Check++
						if m.r.Check == int64(p.Chameneos) {
							done <- m.r
						}
					})
				})
			case m.waiting == nil:
				m.waiting = ch
			default:
				m.meetings++
				first := m.waiting
				m.waiting = nil
				first.Act(nil, func() {
					first.color = workload.Complement(first.color, color)
					first.meetings++
					newColor := first.color
					ch.Act(first, func() {
						ch.color = newColor
						ch.meetings++
						ask(ch)
					})
					ask(first)
				})
			}
		})
	}
	for i := range p.Chameneos {
		ch := &chameneo{color: i % 3}
		ch.Act(nil, func() { ask(ch) })
	}
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type bigActor struct {
	phony.Inbox
	id  int
	rnd *rand.Rand
	r   workload.Result
}

// Big: a ping is a closure that answers its sender with a pong closure.
func Big(ctx context.Context, t workload.Timer, p workload.Big) (r workload.Result, err error) {
	sink := make(chan workload.Result, p.Actors)
	t.StartTimer()
	actors := make([]*bigActor, p.Actors)
	for i := range actors {
		actors[i] = &bigActor{id: i, rnd: workload.NewRand(uint64(i))}
	}
	var ping func(b *bigActor)
	ping = func(b *bigActor) {
		to := actors[b.rnd.IntN(p.Actors)]
		to.Act(b, func() {
			id := to.id
			b.Act(nil, func() {
				b.r.Count++
				b.r.Check += int64(id)
				if b.r.Count == int64(p.Pings) {
					sink <- b.r
					return
				}
				ping(b)
			})
		})
	}
	for _, b := range actors {
		b.Act(nil, func() { ping(b) })
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
