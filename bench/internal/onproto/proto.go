// Package onproto runs the workloads on protoactor-go
// (github.com/asynkron/protoactor-go), written as its examples and its
// own in-process benchmarks write actors: an Actor's Receive switches on
// the message's type, messages are small Go values that carry the PID to
// answer when the receiver needs one, RequestFuture with a timeout makes
// a request from outside, and ReenterAfter continues on the actor once a
// future resolves.
//
// Configuration, per workload, as protoactor documents it:
//   - mailbox: protoactor's in-process benchmark (examples/
//     actor-inprocess-benchmark) gives its ping-pong actors a Bounded
//     mailbox a little larger than the messages in flight; the workloads
//     that bound what is in flight (ping-pong, throughput, thread ring) do
//     the same (measured here, Bounded, Unbounded and UnboundedLockfree
//     are within noise of each other on those). Where the in-flight count
//     is unbounded (Counting's flood,
//     Fork-Join, Bank, NQueens) a bounded mailbox would block senders, so
//     they keep the default Unbounded one. Workloads that spawn hundreds
//     of thousands of actors (Fib, Ring) use UnboundedLockfree, which the
//     documentation calls cheaper to allocate.
//   - dispatcher: the default (a goroutine per active mailbox, 300
//     messages before it yields).
//   - logging: a discarding logger, so that nothing is printed per system.
//
// Each run ends with ActorSystem.Shutdown.
package onproto

import (
	"context"
	"io"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/crisprt/crisp/bench/internal/workload"
)

func newSystem() *actor.ActorSystem {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
}

// spawn spawns a (kept by the caller, so that its state can be read after
// the run) at the root.
func spawn(sys *actor.ActorSystem, a actor.Actor, opts ...actor.PropsOption) *actor.PID {
	return sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }, opts...))
}

// bounded is the mailbox of actors that never hold more than inFlight
// messages, sized as protoactor's in-process benchmark sizes it.
func bounded(inFlight int) actor.PropsOption { return actor.WithMailbox(actor.Bounded(inFlight + 10)) }

type start struct{}
type ping struct {
	n    int
	from *actor.PID
}
type pong struct{ n int }

type pinger struct {
	pong *actor.PID
	want int
	r    workload.Result
	done chan<- workload.Result
}

func (a *pinger) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case start:
		c.Send(a.pong, ping{1, c.Self()})
	case pong:
		a.r.Count++
		a.r.Check += int64(m.n)
		if m.n == a.want {
			a.done <- a.r
			return
		}
		c.Send(a.pong, ping{m.n + 1, c.Self()})
	}
}

type ponger struct{}

func (ponger) Receive(c actor.Context) {
	if m, ok := c.Message().(ping); ok {
		c.Send(m.from, pong{m.n})
	}
}

// PingPong: the ping carries the PID to answer.
func PingPong(ctx context.Context, t workload.Timer, p workload.PingPong) (workload.Result, error) {
	sys := newSystem()
	defer sys.Shutdown()
	done := make(chan workload.Result, 1)
	t.StartTimer()
	pg := spawn(sys, ponger{}, bounded(1))
	pi := spawn(sys, &pinger{pong: pg, want: p.RoundTrips, done: done}, bounded(1))
	sys.Root.Send(pi, start{})
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type request struct{ n int }
type reply struct{ n int }

type server struct{}

func (server) Receive(c actor.Context) {
	if m, ok := c.Message().(request); ok {
		c.Respond(reply{m.n + 1})
	}
}

// RequestReply: RequestFuture with its timeout, and Result.
func RequestReply(ctx context.Context, t workload.Timer, p workload.RequestReply) (r workload.Result, err error) {
	sys := newSystem()
	defer sys.Shutdown()
	t.StartTimer()
	srv := spawn(sys, server{})
	for n := 1; n <= p.Requests; n++ {
		if workload.Cancelled(ctx, n) {
			return r, ctx.Err()
		}
		v, err := sys.Root.RequestFuture(srv, request{n}, p.Timeout).Result()
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

func (a *pairPinger) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case start:
		for a.sent < min(a.inFlight, a.want) {
			a.sent++
			c.Send(a.pong, ping{a.sent, c.Self()})
		}
	case pong:
		a.r.Count++
		a.r.Check += int64(m.n)
		if a.sent < a.want {
			a.sent++
			c.Send(a.pong, ping{a.sent, c.Self()})
		}
		if a.r.Count == int64(a.want) {
			a.done <- a.r
		}
	}
}

// Throughput: four pinger/ponger pairs with bounded mailboxes, as in
// protoactor's in-process benchmark.
func Throughput(ctx context.Context, t workload.Timer, p workload.Throughput) (r workload.Result, err error) {
	sys := newSystem()
	defer sys.Shutdown()
	results := make(chan workload.Result, p.Pairs)
	t.StartTimer()
	for range p.Pairs {
		pg := spawn(sys, ponger{}, bounded(p.InFlight))
		pi := spawn(sys, &pairPinger{pong: pg, inFlight: p.InFlight, want: p.PerPair, done: results}, bounded(p.InFlight))
		sys.Root.Send(pi, start{})
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
