// Package ongoakt runs the workloads on goakt (github.com/tochemey/goakt),
// written as its documentation and its own benchmarks (bench/ in its
// repository) write actors: an Actor's Receive switches on the type of a
// protocol-buffer message (package msg, generated from msg.proto),
// ReceiveContext.Tell sends as the current actor so that Sender answers,
// Ask makes a request with a timeout from outside, and Request with Then
// continues on the actor once a reply comes back (reentrancy).
//
// Configuration, as goakt documents it:
//   - the system as goakt's benchmarks build it: a discarding logger and
//     one actor-initialisation attempt;
//   - every actor spawned WithLongLived: no passivation, so no passivation
//     bookkeeping per message or per actor (the default passivates actors
//     idle for two minutes, which none of these runs has);
//   - the default mailbox (an unbounded lock-free queue);
//   - for Bank, reentrancy in AllowAll mode, which goakt recommends "for
//     throughput and to avoid deadlocks in call cycles", without a request
//     timeout (goakt's requests need none);
//   - messages without fields are shared instances, as goakt's benchmarks
//     reuse theirs.
//
// Each run ends with ActorSystem.Stop.
package ongoakt

//go:generate protoc --go_out=. --go_opt=paths=source_relative msg/msg.proto

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tochemey/goakt/v3/actor"
	"github.com/tochemey/goakt/v3/log"

	"github.com/crisprt/crisp/bench/internal/ongoakt/msg"
	"github.com/crisprt/crisp/bench/internal/workload"
)

// Shared instances of the messages without fields.
var (
	startMsg     = &msg.Start{}
	incrementMsg = &msg.Increment{}
	retrieveMsg  = &msg.Retrieve{}
	computeMsg   = &msg.Compute{}
	exitMsg      = &msg.Exit{}
	bigPingMsg   = &msg.BigPing{}
	creditedMsg  = &msg.Credited{}
	ackMsg       = &msg.Ack{}
)

// base gives an actor goakt's lifecycle hooks, which these actors do not
// need.
type base struct{}

func (base) PreStart(*actor.Context) error { return nil }
func (base) PostStop(*actor.Context) error { return nil }

// run is one run's actor system.
type run struct {
	ctx context.Context
	sys actor.ActorSystem
}

func start(ctx context.Context) (*run, error) {
	sys, err := actor.NewActorSystem("bench", actor.WithLogger(log.DiscardLogger), actor.WithActorInitMaxRetries(1))
	if err != nil {
		return nil, fmt.Errorf("ongoakt: %w", err)
	}
	if err := sys.Start(ctx); err != nil {
		return nil, fmt.Errorf("ongoakt: %w", err)
	}
	return &run{ctx: ctx, sys: sys}, nil
}

// stop ends the system, folding a failure into the run's error.
func (r *run) stop(err *error) {
	ctx, cancel := context.WithTimeout(context.Background(), workload.ShutdownTimeout)
	defer cancel()
	if serr := r.sys.Stop(ctx); serr != nil && *err == nil {
		*err = fmt.Errorf("ongoakt: stop: %w", serr)
	}
}

// spawn spawns a (kept by the caller, so that its state can be read after
// the run) as a long-lived actor named name-i. goakt requires a to be a
// pointer.
func (r *run) spawn(name string, i int, a actor.Actor, opts ...actor.SpawnOption) (*actor.PID, error) {
	pid, err := r.sys.Spawn(r.ctx, name+"-"+strconv.Itoa(i), a, append(opts, actor.WithLongLived())...)
	if err != nil {
		return nil, fmt.Errorf("ongoakt: spawn: %w", err)
	}
	return pid, nil
}

type pinger struct {
	base
	pong *actor.PID
	want int64
	r    workload.Result
	done chan<- workload.Result
}

func (a *pinger) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Start:
		c.Tell(a.pong, &msg.Ping{N: 1})
	case *msg.Pong:
		a.r.Count++
		a.r.Check += m.N
		if m.N == a.want {
			a.done <- a.r
			return
		}
		c.Tell(a.pong, &msg.Ping{N: m.N + 1})
	}
}

type ponger struct{ base }

func (*ponger) Receive(c *actor.ReceiveContext) {
	if m, ok := c.Message().(*msg.Ping); ok {
		c.Tell(c.Sender(), &msg.Pong{N: m.N})
	}
}

// PingPong: the ponger answers the ping's sender.
func PingPong(ctx context.Context, t workload.Timer, p workload.PingPong) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	done := make(chan workload.Result, 1)
	t.StartTimer()
	pg, err := rn.spawn("ponger", 0, &ponger{})
	if err != nil {
		return r, err
	}
	pi, err := rn.spawn("pinger", 0, &pinger{pong: pg, want: int64(p.RoundTrips), done: done})
	if err != nil {
		return r, err
	}
	if err := actor.Tell(ctx, pi, startMsg); err != nil {
		return r, err
	}
	r, err = workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type server struct{ base }

func (*server) Receive(c *actor.ReceiveContext) {
	if m, ok := c.Message().(*msg.Ping); ok {
		c.Response(&msg.Pong{N: m.N + 1})
	}
}

// RequestReply: actor.Ask with its timeout.
func RequestReply(ctx context.Context, t workload.Timer, p workload.RequestReply) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	t.StartTimer()
	srv, err := rn.spawn("server", 0, &server{})
	if err != nil {
		return r, err
	}
	for n := 1; n <= p.Requests; n++ {
		if workload.Cancelled(ctx, n) {
			return r, ctx.Err()
		}
		v, err := actor.Ask(ctx, srv, &msg.Ping{N: int64(n)}, p.Timeout)
		if err != nil {
			return r, err
		}
		r.Count++
		r.Check += v.(*msg.Pong).N
	}
	t.StopTimer()
	return r, nil
}

type pairPinger struct {
	base
	pong           *actor.PID
	inFlight, want int64
	sent           int64
	r              workload.Result
	done           chan<- workload.Result
}

func (a *pairPinger) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Start:
		for a.sent < min(a.inFlight, a.want) {
			a.sent++
			c.Tell(a.pong, &msg.Ping{N: a.sent})
		}
	case *msg.Pong:
		a.r.Count++
		a.r.Check += m.N
		if a.sent < a.want {
			a.sent++
			c.Tell(a.pong, &msg.Ping{N: a.sent})
		}
		if a.r.Count == a.want {
			a.done <- a.r
		}
	}
}

// Throughput: four pinger/ponger pairs.
func Throughput(ctx context.Context, t workload.Timer, p workload.Throughput) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	results := make(chan workload.Result, p.Pairs)
	t.StartTimer()
	for i := range p.Pairs {
		pg, err := rn.spawn("ponger", i, &ponger{})
		if err != nil {
			return r, err
		}
		pi, err := rn.spawn("pinger", i, &pairPinger{pong: pg, inFlight: int64(p.InFlight), want: int64(p.PerPair), done: results})
		if err != nil {
			return r, err
		}
		if err := actor.Tell(ctx, pi, startMsg); err != nil {
			return r, err
		}
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
