// Package onphony runs the workloads on phony (github.com/Arceliar/phony),
// in the style its documentation sets out: an actor is a struct that
// embeds phony.Inbox, a message is a closure given to Act, an actor that
// sends to another passes itself as the sender (so that phony can apply
// backpressure), and replies and sends from plain goroutines pass nil.
// phony has no configuration; an idle actor holds no goroutine and there
// is nothing to shut down.
package onphony

import (
	"context"
	"errors"
	"time"

	"github.com/Arceliar/phony"

	"github.com/crisprt/crisp/bench/internal/workload"
)

var errTimeout = errors.New("onphony: request timed out")

type pinger struct {
	phony.Inbox
	pong *ponger
	r    workload.Result
}

type ponger struct{ phony.Inbox }

// PingPong: the pinger sends to the ponger as itself; the pong is a reply.
func PingPong(ctx context.Context, t workload.Timer, p workload.PingPong) (workload.Result, error) {
	done := make(chan workload.Result, 1)
	t.StartTimer()
	ping := &pinger{pong: &ponger{}}
	var send func(n int)
	send = func(n int) {
		ping.pong.Act(ping, func() {
			ping.Act(nil, func() {
				ping.r.Count++
				ping.r.Check += int64(n)
				if n == p.RoundTrips {
					done <- ping.r
					return
				}
				send(n + 1)
			})
		})
	}
	ping.Act(nil, func() { send(1) })
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type server struct{ phony.Inbox }

// RequestReply: phony's Block has no timeout, so a plain goroutine sends
// a closure that answers on a channel and waits on it with a timer, as
// its documentation suggests for non-actor code.
func RequestReply(ctx context.Context, t workload.Timer, p workload.RequestReply) (r workload.Result, err error) {
	t.StartTimer()
	srv := &server{}
	reply := make(chan int, 1)
	timer := time.NewTimer(p.Timeout)
	timer.Stop()
	for n := 1; n <= p.Requests; n++ {
		if workload.Cancelled(ctx, n) {
			return r, ctx.Err()
		}
		srv.Act(nil, func() { reply <- n + 1 })
		timer.Reset(p.Timeout)
		select {
		case v := <-reply:
			timer.Stop()
			r.Count++
			r.Check += int64(v)
		case <-timer.C:
			return r, errTimeout
		}
	}
	t.StopTimer()
	return r, nil
}

type pairPinger struct {
	phony.Inbox
	pong *ponger
	sent int
	r    workload.Result
}

// Throughput: per pair, each pong's handler on the pinger sends the next
// ping.
func Throughput(ctx context.Context, t workload.Timer, p workload.Throughput) (r workload.Result, err error) {
	results := make(chan workload.Result, p.Pairs)
	t.StartTimer()
	for range p.Pairs {
		ping := &pairPinger{pong: &ponger{}}
		var send func(n int)
		send = func(n int) {
			ping.pong.Act(ping, func() {
				ping.Act(nil, func() {
					ping.r.Count++
					ping.r.Check += int64(n)
					if ping.sent < p.PerPair {
						ping.sent++
						send(ping.sent)
					}
					if ping.r.Count == int64(p.PerPair) {
						results <- ping.r
					}
				})
			})
		}
		ping.Act(nil, func() {
			for ping.sent < min(p.InFlight, p.PerPair) {
				ping.sent++
				send(ping.sent)
			}
		})
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
