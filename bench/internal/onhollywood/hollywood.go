// Package onhollywood runs the workloads on hollywood
// (github.com/anthdm/hollywood), as its README and examples write actors:
// a Receiver switches on the message's type, messages are small Go
// values, Context.Send sends as the current actor (so Sender answers),
// Engine.Request and Context.Respond make a request with a timeout.
//
// Configuration: hollywood's only per-actor performance knob is the
// inbox size (default 1024 slots, 24 KiB per actor; it grows when full).
// The default is kept except in the workloads that spawn hundreds of
// thousands of actors (Fib, Ring), where an inbox of inboxSmall slots is
// what makes them fit in memory at all; no actor there ever holds more
// messages than the tokens in flight. hollywood's engine has no
// shutdown: an idle actor holds no goroutine, and the engine is garbage
// once the run drops it.
package onhollywood

import (
	"context"
	"fmt"

	"github.com/anthdm/hollywood/actor"

	"github.com/crisprt/crisp/bench/internal/workload"
)

// inboxSmall is the inbox size of actors that workloads spawn by the
// hundred thousand.
const inboxSmall = 16

func newEngine() (*actor.Engine, error) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, fmt.Errorf("onhollywood: %w", err)
	}
	return e, nil
}

// spawn spawns r (kept by the caller, so that its state can be read after
// the run) under kind.
func spawn(e *actor.Engine, r actor.Receiver, kind string, opts ...actor.OptFunc) *actor.PID {
	return e.Spawn(func() actor.Receiver { return r }, kind, opts...)
}

type start struct{}
type ping struct{ n int }
type pong struct{ n int }

type pinger struct {
	pong *actor.PID
	want int
	r    workload.Result
	done chan<- workload.Result
}

func (a *pinger) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case start:
		c.Send(a.pong, ping{1})
	case pong:
		a.r.Count++
		a.r.Check += int64(m.n)
		if m.n == a.want {
			a.done <- a.r
			return
		}
		c.Send(a.pong, ping{m.n + 1})
	}
}

type ponger struct{}

func (ponger) Receive(c *actor.Context) {
	if m, ok := c.Message().(ping); ok {
		c.Send(c.Sender(), pong(m))
	}
}

// PingPong: the ponger answers whoever sent the ping.
func PingPong(ctx context.Context, t workload.Timer, p workload.PingPong) (workload.Result, error) {
	e, err := newEngine()
	if err != nil {
		return workload.Result{}, err
	}
	done := make(chan workload.Result, 1)
	t.StartTimer()
	pg := spawn(e, ponger{}, "ponger")
	pi := spawn(e, &pinger{pong: pg, want: p.RoundTrips, done: done}, "pinger")
	e.Send(pi, start{})
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type request struct{ n int }
type reply struct{ n int }

type server struct{}

func (server) Receive(c *actor.Context) {
	if m, ok := c.Message().(request); ok {
		c.Respond(reply{m.n + 1})
	}
}

// RequestReply: Engine.Request and Response.Result, with its timeout.
func RequestReply(ctx context.Context, t workload.Timer, p workload.RequestReply) (r workload.Result, err error) {
	e, err := newEngine()
	if err != nil {
		return r, err
	}
	t.StartTimer()
	srv := spawn(e, server{}, "server")
	for n := 1; n <= p.Requests; n++ {
		if workload.Cancelled(ctx, n) {
			return r, ctx.Err()
		}
		v, err := e.Request(srv, request{n}, p.Timeout).Result()
		if err != nil {
			return r, err
		}
		r.Count++
		r.Check += int64(v.(reply).n)
	}
	t.StopTimer()
	return r, nil
}

type pairPinger struct {
	pong           *actor.PID
	inFlight, want int
	sent           int
	r              workload.Result
	done           chan<- workload.Result
}

func (a *pairPinger) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case start:
		for a.sent < min(a.inFlight, a.want) {
			a.sent++
			c.Send(a.pong, ping{a.sent})
		}
	case pong:
		a.r.Count++
		a.r.Check += int64(m.n)
		if a.sent < a.want {
			a.sent++
			c.Send(a.pong, ping{a.sent})
		}
		if a.r.Count == int64(a.want) {
			a.done <- a.r
		}
	}
}

// Throughput: four pinger/ponger pairs.
func Throughput(ctx context.Context, t workload.Timer, p workload.Throughput) (r workload.Result, err error) {
	e, err := newEngine()
	if err != nil {
		return r, err
	}
	results := make(chan workload.Result, p.Pairs)
	t.StartTimer()
	for range p.Pairs {
		pg := spawn(e, ponger{}, "ponger")
		pi := spawn(e, &pairPinger{pong: pg, inFlight: p.InFlight, want: p.PerPair, done: results}, "pinger")
		e.Send(pi, start{})
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
