package oncrisp

import (
	"context"

	"github.com/crisprt/crisp/bench/internal/workload"
	"github.com/crisprt/crisp/crisp"
)

type pinger struct{ r workload.Result }

// PingPong: a pinger and a stateless ponger; each message is a closure
// that carries its number.
func (c Config) PingPong(ctx context.Context, t workload.Timer, p workload.PingPong) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan workload.Result, 1)
	t.StartTimer()
	ping := crisp.Spawn(sys, &pinger{})
	pong := crisp.Spawn(sys, struct{}{})
	var send func(n int)
	send = func(n int) {
		crisp.Tell(pong, func(*crisp.Proc, struct{}) {
			crisp.Tell(ping, func(_ *crisp.Proc, s *pinger) {
				s.r.Count++
				s.r.Check += int64(n)
				if n == p.RoundTrips {
					done <- s.r
					return
				}
				send(n + 1)
			}, o...)
		}, o...)
	}
	send(1)
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

type pairPinger struct {
	sent int
	r    workload.Result
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
		ping := crisp.Spawn(sys, &pairPinger{})
		pong := crisp.Spawn(sys, struct{}{})
		var send func(n int)
		onPong := func(n int) func(*crisp.Proc, *pairPinger) {
			return func(_ *crisp.Proc, s *pairPinger) {
				s.r.Count++
				s.r.Check += int64(n)
				if s.sent < p.PerPair {
					s.sent++
					send(s.sent)
				}
				if s.r.Count == int64(p.PerPair) {
					results <- s.r
				}
			}
		}
		send = func(n int) {
			crisp.Tell(pong, func(*crisp.Proc, struct{}) { crisp.Tell(ping, onPong(n), o...) }, o...)
		}
		crisp.Tell(ping, func(_ *crisp.Proc, s *pairPinger) {
			for s.sent < min(p.InFlight, p.PerPair) {
				s.sent++
				send(s.sent)
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
