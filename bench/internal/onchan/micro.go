// Package onchan runs the workloads on plain goroutines and channels,
// written the way a Go programmer would without an actor library: the
// baseline every actor system is measured against. A process is a
// goroutine that owns its state and reads one channel; channels are
// buffered where that avoids needless hand-offs, and sized so that no
// send can block forever.
package onchan

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/crisprt/crisp/bench/internal/workload"
)

// errTimeout is returned when a timed request gets no answer in time.
var errTimeout = errors.New("onchan: request timed out")

// PingPong: the calling goroutine is the pinger; one goroutine answers.
// Unbuffered channels: with one message in flight a buffer only adds work.
func PingPong(ctx context.Context, t workload.Timer, p workload.PingPong) (workload.Result, error) {
	ping, pong := make(chan int), make(chan int)
	var wg sync.WaitGroup
	t.StartTimer()
	wg.Go(func() {
		for n := range ping {
			pong <- n
		}
	})
	var r workload.Result
	for n := 1; n <= p.RoundTrips; n++ {
		if workload.Cancelled(ctx, n) {
			break
		}
		ping <- n
		r.Check += int64(<-pong)
		r.Count++
	}
	t.StopTimer()
	close(ping)
	wg.Wait()
	return r, ctx.Err()
}

// RequestReply: a server goroutine answers requests that carry their
// reply channel; the client reuses one reply channel and one timer.
func RequestReply(ctx context.Context, t workload.Timer, p workload.RequestReply) (workload.Result, error) {
	type request struct {
		n     int
		reply chan<- int
	}
	reqs := make(chan request)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(reqs)
	t.StartTimer()
	wg.Go(func() {
		for r := range reqs {
			r.reply <- r.n + 1
		}
	})
	reply := make(chan int, 1)
	timer := time.NewTimer(p.Timeout)
	timer.Stop()
	var r workload.Result
	for n := 1; n <= p.Requests; n++ {
		if workload.Cancelled(ctx, n) {
			return r, ctx.Err()
		}
		reqs <- request{n, reply}
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

// Throughput: per pair, a pinger and a ponger goroutine joined by two
// channels of InFlight slots, so that no send waits.
func Throughput(ctx context.Context, t workload.Timer, p workload.Throughput) (workload.Result, error) {
	results := make(chan workload.Result, p.Pairs)
	var wg sync.WaitGroup
	t.StartTimer()
	for range p.Pairs {
		pings, pongs := make(chan int, p.InFlight), make(chan int, p.InFlight)
		wg.Go(func() {
			for n := range pings {
				pongs <- n
			}
		})
		wg.Go(func() {
			defer close(pings)
			sent := 0
			for ; sent < min(p.InFlight, p.PerPair); sent++ {
				pings <- sent + 1
			}
			var r workload.Result
			for r.Count < int64(p.PerPair) {
				n := <-pongs
				r.Count++
				r.Check += int64(n)
				if sent < p.PerPair {
					sent++
					pings <- sent
				}
			}
			results <- r
		})
	}
	var total workload.Result
	for range p.Pairs {
		r, err := workload.Await(ctx, results)
		if err != nil {
			break // the pairs finish their work and exit on their own
		}
		total.Count += r.Count
		total.Check += r.Check
	}
	t.StopTimer()
	wg.Wait()
	return total, ctx.Err()
}
