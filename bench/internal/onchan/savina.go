package onchan

import (
	"context"
	"sync"

	"github.com/crisprt/crisp/bench/internal/workload"
)

// Counting: the calling goroutine produces into a buffered channel; the
// counter goroutine counts until the channel is closed, then answers.
func Counting(ctx context.Context, t workload.Timer, p workload.Counting) (workload.Result, error) {
	incr := make(chan struct{}, 1024)
	count := make(chan int64, 1)
	t.StartTimer()
	go func() {
		var n int64
		for range incr {
			n++
		}
		count <- n
	}()
	for i := range p.N {
		if workload.Cancelled(ctx, i) {
			break
		}
		incr <- struct{}{}
	}
	close(incr)
	n := <-count
	t.StopTimer()
	return workload.Result{Count: n, Check: int64(p.N)}, ctx.Err()
}

// ThreadRing: one goroutine per ring member, each reading its own
// channel; one slot each is enough for the single token.
func ThreadRing(ctx context.Context, t workload.Timer, p workload.ThreadRing) (workload.Result, error) {
	in := make([]chan int, p.Actors)
	for i := range in {
		in[i] = make(chan int, 1)
	}
	done := make(chan int, 1)
	var wg sync.WaitGroup
	t.StartTimer()
	for i := range p.Actors {
		next := in[(i+1)%p.Actors]
		wg.Go(func() {
			for v := range in[i] {
				if v == 0 {
					done <- i
					continue
				}
				next <- v - 1
			}
		})
	}
	in[0] <- p.Passes
	last := <-done // the token is bounded work: no early exit, which would close a channel under a sender
	t.StopTimer()
	for _, c := range in {
		close(c)
	}
	wg.Wait()
	return workload.Result{Count: int64(last), Check: 1}, ctx.Err()
}

// ForkJoin: one goroutine per worker; the driver deals messages round
// robin into buffered channels and closes them; each worker reports its
// count when its channel is drained.
func ForkJoin(ctx context.Context, t workload.Timer, p workload.ForkJoin) (workload.Result, error) {
	counts := make(chan int64, p.Actors)
	in := make([]chan struct{}, p.Actors)
	t.StartTimer()
	for i := range in {
		in[i] = make(chan struct{}, 1024)
		go func(in <-chan struct{}) {
			var n int64
			var sum float64
			for range in {
				sum += workload.Spin(37.2)
				n++
			}
			if sum < 0 {
				panic("onchan: impossible sum")
			}
			counts <- n
		}(in[i])
	}
	for m := range p.Messages {
		if workload.Cancelled(ctx, m) {
			break
		}
		for _, c := range in {
			c <- struct{}{}
		}
	}
	for _, c := range in {
		close(c)
	}
	var r workload.Result
	for range p.Actors {
		r.Count += <-counts
		r.Check++
	}
	t.StopTimer()
	return r, ctx.Err()
}

// Chameneos: a mall goroutine and one goroutine per creature. Each
// creature has at most one request at the mall and one message coming to
// it, so the mall's channel has a slot per creature and each creature's
// one slot.
func Chameneos(ctx context.Context, t workload.Timer, p workload.Chameneos) (workload.Result, error) {
	type request struct{ from, color int }
	type note struct {
		exit    bool
		partner int // -1 for a colour change
		color   int
	}
	requests := make(chan request, p.Chameneos)
	reports := make(chan int64, p.Chameneos)
	inbox := make([]chan note, p.Chameneos)
	for i := range inbox {
		inbox[i] = make(chan note, 1)
	}
	var wg sync.WaitGroup
	t.StartTimer()
	for i := range p.Chameneos {
		wg.Go(func() {
			color, meetings := i%3, int64(0)
			for {
				requests <- request{i, color}
				n := <-inbox[i]
				switch {
				case n.exit:
					reports <- meetings
					return
				case n.partner >= 0: // the mall paired us: we lead the meeting
					color = workload.Complement(color, n.color)
					inbox[n.partner] <- note{partner: -1, color: color}
				default:
					color = n.color
				}
				meetings++
			}
		})
	}
	wg.Go(func() { // the mall
		meetings, exited := 0, 0
		waiting := -1
		for exited < p.Chameneos {
			r := <-requests
			switch {
			case meetings >= p.Meetings:
				inbox[r.from] <- note{exit: true}
				exited++
			case waiting < 0:
				waiting = r.from
			default:
				meetings++
				inbox[waiting] <- note{partner: r.from, color: r.color}
				waiting = -1
			}
		}
	})
	var res workload.Result
	for range p.Chameneos {
		m, err := workload.Await(ctx, reports)
		if err != nil {
			break
		}
		res.Count += m
		res.Check++
	}
	t.StopTimer()
	wg.Wait()
	return res, ctx.Err()
}

// Big: one goroutine per actor. An inbox may at once hold a ping from
// every actor and the pong of its owner's own ping, so it has that many
// slots and no send ever waits.
func Big(ctx context.Context, t workload.Timer, p workload.Big) (workload.Result, error) {
	type msg struct {
		pong bool
		from int
	}
	inbox := make([]chan msg, p.Actors)
	for i := range inbox {
		inbox[i] = make(chan msg, p.Actors+1)
	}
	sink := make(chan workload.Result, p.Actors)
	var wg sync.WaitGroup
	t.StartTimer()
	for i := range p.Actors {
		wg.Go(func() {
			rnd := workload.NewRand(uint64(i))
			inbox[rnd.IntN(p.Actors)] <- msg{from: i}
			var r workload.Result
			for m := range inbox[i] {
				if !m.pong {
					inbox[m.from] <- msg{pong: true, from: i}
					continue
				}
				r.Count++
				r.Check += int64(m.from)
				if r.Count == int64(p.Pings) {
					sink <- r
					continue
				}
				inbox[rnd.IntN(p.Actors)] <- msg{from: i}
			}
		})
	}
	// Bounded work, no early exit: once every actor has had its pongs no
	// message is in flight and the inboxes can be closed.
	var res workload.Result
	for range p.Actors {
		r := <-sink
		res.Count += r.Count
		res.Check += r.Check
	}
	t.StopTimer()
	for _, c := range inbox {
		close(c)
	}
	wg.Wait()
	return res, ctx.Err()
}
