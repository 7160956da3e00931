package oncrisp

import (
	"context"

	"github.com/crisprt/crisp/bench/internal/workload"
	"github.com/crisprt/crisp/crisp"
)

type pinger struct {
	pong   *crisp.Actor[*ponger]
	o      []crisp.SendOption
	rounds int
	done   chan<- workload.Result
	r      workload.Result
}

type ponger struct {
	ping *crisp.Actor[*pinger]
	o    []crisp.SendOption
}

// onPingPongPing answers ping n with pong n.
func onPingPongPing(_ *crisp.Proc, pg *ponger, n int) {
	crisp.Send(pg.ping, onPingPongPong, n, pg.o...)
}

// onPingPongPong counts pong n and sends ping n+1 until the last.
func onPingPongPong(_ *crisp.Proc, s *pinger, n int) {
	s.r.Count++
	s.r.Check += int64(n)
	if n == s.rounds {
		s.done <- s.r
		return
	}
	crisp.Send(s.pong, onPingPongPing, n+1, s.o...)
}

// PingPong: a pinger and a ponger; each message is a Send of its
// number to one handler.
func (c Config) PingPong(ctx context.Context, t workload.Timer, p workload.PingPong) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan workload.Result, 1)
	t.StartTimer()
	pi := &pinger{o: o, rounds: p.RoundTrips, done: done}
	pg := &ponger{o: o}
	ping := crisp.Spawn(sys, pi)
	pg.ping = ping
	pi.pong = crisp.Spawn(sys, pg)
	crisp.Send(pi.pong, onPingPongPing, 1, o...)
	r, err = workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

// RequestReply: AskWithin (Call and a timed Get in one, its message
// reused) from a plain goroutine.
func (c Config) RequestReply(ctx context.Context, t workload.Timer, p workload.RequestReply) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	t.StartTimer()
	server := crisp.Spawn(sys, struct{}{})
	for n := 1; n <= p.Requests; n++ {
		if workload.Cancelled(ctx, n) {
			return r, ctx.Err()
		}
		v, err := crisp.AskWithin(server, p.Timeout, func(*crisp.Proc, struct{}) (int, error) { return n + 1, nil }, o...)
		if err != nil {
			return r, err
		}
		r.Count++
		r.Check += int64(v)
	}
	t.StopTimer()
	return r, nil
}

// pairPinger and pairPonger hold what their handlers need, as
// protoactor's pair does, and each message carries only its number:
// sent with crisp.Send to a handler that is one function for every
// message, it allocates nothing.
type pairPinger struct {
	pong *crisp.Actor[*pairPonger]
	o    []crisp.SendOption
	want int
	sent int
	r    workload.Result
	done chan<- workload.Result
}

type pairPonger struct {
	ping *crisp.Actor[*pairPinger]
	o    []crisp.SendOption
}

// ping sends ping n to the pinger's ponger.
func (s *pairPinger) ping(n int) { crisp.Send(s.pong, onPing, n, s.o...) }

// onPing answers ping n.
func onPing(_ *crisp.Proc, pg *pairPonger, n int) { crisp.Send(pg.ping, onPong, n, pg.o...) }

// onPong counts pong n and sends the next ping until want are in.
func onPong(_ *crisp.Proc, s *pairPinger, n int) {
	s.r.Count++
	s.r.Check += int64(n)
	if s.sent < s.want {
		s.sent++
		s.ping(s.sent)
	}
	if s.r.Count == int64(s.want) {
		s.done <- s.r
	}
}

// Throughput: per pair, the pinger's handler for a pong sends the next
// ping until PerPair pongs are in.
func (c Config) Throughput(ctx context.Context, t workload.Timer, p workload.Throughput) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	results := make(chan workload.Result, p.Pairs)
	t.StartTimer()
	for range p.Pairs {
		pg := &pairPonger{o: o}
		pi := &pairPinger{o: o, want: p.PerPair, done: results}
		ping := crisp.Spawn(sys, pi)
		pg.ping = ping
		pi.pong = crisp.Spawn(sys, pg)
		crisp.Tell(ping, func(_ *crisp.Proc, s *pairPinger) {
			for s.sent < min(p.InFlight, s.want) {
				s.sent++
				s.ping(s.sent)
			}
		}, o...)
	}
	for range p.Pairs {
		pr, err := workload.Await(ctx, results)
		if err != nil {
			return r, err
		}
		r.Count += pr.Count
		r.Check += pr.Check
	}
	t.StopTimer()
	return r, nil
}
