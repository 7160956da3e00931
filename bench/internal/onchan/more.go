package onchan

import (
	"context"
	"sync"

	"github.com/crisprt/crisp/bench/internal/workload"
)

// NQueens: a pool of worker goroutines takes boards from one shared
// channel; the master keeps the pending boards in a stack (deepest first)
// and, in one select, hands out the next board while taking back new
// boards and results, so that neither side waits on the other.
func NQueens(ctx context.Context, t workload.Timer, p workload.NQueens) (workload.Result, error) {
	type msg struct {
		board     []byte
		done      bool
		solutions int64
	}
	jobs := make(chan []byte)
	back := make(chan msg, p.Workers)
	var wg sync.WaitGroup
	t.StartTimer()
	for range p.Workers {
		wg.Go(func() {
			for board := range jobs {
				var found int64
				if len(board) >= p.Threshold || len(board) == p.Size {
					found = workload.QueensCount(board, p.Size)
				} else {
					for col := range byte(p.Size) {
						if workload.QueenFits(board, col) {
							back <- msg{board: append(board[:len(board):len(board)], col)}
						}
					}
				}
				back <- msg{done: true, solutions: found}
			}
		})
	}
	stack := [][]byte{{}}
	outstanding := 1
	var r workload.Result
	for outstanding > 0 {
		var out chan []byte
		var next []byte
		if len(stack) > 0 {
			out, next = jobs, stack[len(stack)-1]
		}
		select {
		case out <- next:
			stack = stack[:len(stack)-1]
		case m := <-back:
			if !m.done {
				stack = append(stack, m.board)
				outstanding++
				continue
			}
			outstanding--
			r.Check++
			r.Count += m.solutions
			if r.Count >= int64(p.Limit) || ctx.Err() != nil { // enough: drop what is not handed out
				outstanding -= len(stack)
				stack = nil
			}
		}
	}
	t.StopTimer()
	close(jobs)
	wg.Wait()
	r.Count = min(r.Count, int64(p.Limit))
	return r, ctx.Err()
}

// Bank: one goroutine per account. Each transfer has exactly one message
// in flight at any time (to its source, its destination, its source
// again, then the teller), so a teller that keeps at most bankWindow
// transfers outstanding can give every channel bankWindow slots and no
// send ever waits: the bounded-channel way to avoid the deadlock of
// accounts blocked on each other.
func Bank(ctx context.Context, t workload.Timer, p workload.Bank) (workload.Result, error) {
	const bankWindow = 256
	const (
		transfer = iota // to the source, from the teller
		deposit         // to the destination, from the source
		ack             // to the source, from the destination
	)
	type msg struct {
		kind   uint8
		peer   int32 // transfer: destination; deposit: source
		amount int64
	}
	inbox := make([]chan msg, p.Accounts)
	for i := range inbox {
		inbox[i] = make(chan msg, bankWindow)
	}
	replies := make(chan struct{}, bankWindow)
	balances := make([]int64, p.Accounts)
	var wg sync.WaitGroup
	t.StartTimer()
	for i := range p.Accounts {
		wg.Go(func() {
			var balance int64
			for m := range inbox[i] {
				switch m.kind {
				case transfer:
					balance -= m.amount
					inbox[m.peer] <- msg{kind: deposit, peer: int32(i), amount: m.amount}
				case deposit:
					balance += m.amount
					inbox[m.peer] <- msg{kind: ack}
				case ack:
					replies <- struct{}{}
				}
			}
			balances[i] = balance
		})
	}
	next := p.Transfers()
	var r workload.Result
	sent := 0
	for ; sent < p.Transactions && ctx.Err() == nil; sent++ {
		if sent >= bankWindow {
			<-replies
			r.Count++
		}
		src, dst, amount := next()
		inbox[src] <- msg{kind: transfer, peer: int32(dst), amount: amount}
	}
	for r.Count < int64(sent) {
		<-replies
		r.Count++
	}
	t.StopTimer()
	for _, c := range inbox {
		close(c)
	}
	wg.Wait()
	r.Check = workload.BankCheck(balances)
	return r, ctx.Err()
}

// Fib: a goroutine per call, answering on its parent's channel.
func Fib(ctx context.Context, t workload.Timer, p workload.Fib) (workload.Result, error) {
	var fib func(n int, out chan<- int64)
	fib = func(n int, out chan<- int64) {
		if n <= 2 {
			out <- 1
			return
		}
		c := make(chan int64, 2)
		go fib(n-1, c)
		go fib(n-2, c)
		out <- <-c + <-c
	}
	out := make(chan int64, 1)
	t.StartTimer()
	go fib(p.N, out)
	v := <-out
	t.StopTimer()
	return workload.Result{Count: v}, ctx.Err()
}

// Ring: one goroutine per process, each reading its own channel, which
// has a slot per token so that no pass waits.
func Ring(ctx context.Context, t workload.Timer, p workload.Ring) (workload.Result, error) {
	type token struct{ left int }
	in := make([]chan token, p.Processes)
	done := make(chan int, p.Tokens)
	var wg sync.WaitGroup
	t.StartTimer()
	for i := range in {
		in[i] = make(chan token, p.Tokens)
	}
	for i := range in {
		if workload.Cancelled(ctx, i) {
			for _, c := range in {
				close(c)
			}
			wg.Wait()
			return workload.Result{}, ctx.Err()
		}
		next := in[(i+1)%p.Processes]
		wg.Go(func() {
			for tok := range in[i] {
				if tok.left == 0 {
					done <- i
					continue
				}
				tok.left--
				next <- tok
			}
		})
	}
	for i := range p.Tokens {
		in[p.Start(i)] <- token{left: p.Hops}
	}
	var r workload.Result
	for range p.Tokens {
		r.Count++
		r.Check += int64(<-done)
	}
	t.StopTimer()
	for _, c := range in {
		close(c)
	}
	wg.Wait()
	return r, ctx.Err()
}
