package onphony

import (
	"context"

	"github.com/Arceliar/phony"

	"github.com/crisprt/crisp/bench/internal/workload"
)

type queensMaster struct {
	phony.Inbox
	workers     []*queensWorker
	next        int
	outstanding int
	stopped     bool
	r           workload.Result
}

type queensWorker struct{ phony.Inbox }

// NQueens: phony has no priorities; boards are handled in arrival order.
func NQueens(ctx context.Context, t workload.Timer, p workload.NQueens) (workload.Result, error) {
	done := make(chan workload.Result, 1)
	t.StartTimer()
	m := &queensMaster{workers: make([]*queensWorker, p.Workers)}
	for i := range m.workers {
		m.workers[i] = &queensWorker{}
	}
	var dispatch func(board []byte)
	work := func(w *queensWorker, board []byte) func() {
		return func() {
			var found int64
			if len(board) >= p.Threshold || len(board) == p.Size {
				found = workload.QueensCount(board, p.Size)
			} else {
				for col := range byte(p.Size) {
					if workload.QueenFits(board, col) {
						child := append(board[:len(board):len(board)], col)
						m.Act(w, func() { dispatch(child) })
					}
				}
			}
			m.Act(w, func() {
				m.outstanding--
				m.r.Check++
				m.r.Count += found
				if m.stopped {
					return
				}
				if m.r.Count >= int64(p.Limit) || m.outstanding == 0 {
					m.stopped = true
					m.r.Count = min(m.r.Count, int64(p.Limit))
					done <- m.r
				}
			})
		}
	}
	dispatch = func(board []byte) { // runs on the master
		if m.stopped {
			return
		}
		m.outstanding++
		w := m.workers[m.next]
		m.next = (m.next + 1) % len(m.workers)
		w.Act(m, work(w, board))
	}
	m.Act(nil, func() { dispatch(nil) })
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type account struct {
	phony.Inbox
	balance int64
}

type teller struct {
	phony.Inbox
	replies int64
}

// Bank: the source debits itself and sends the destination a closure
// that credits it and answers the source with a continuation, which
// acknowledges to the teller; nobody waits.
func Bank(ctx context.Context, t workload.Timer, p workload.Bank) (workload.Result, error) {
	done := make(chan int64, 1)
	t.StartTimer()
	accounts := make([]*account, p.Accounts)
	for i := range accounts {
		accounts[i] = &account{}
	}
	tl := &teller{}
	ack := func() {
		tl.replies++
		if tl.replies == int64(p.Transactions) {
			done <- tl.replies
		}
	}
	tl.Act(nil, func() {
		next := p.Transfers()
		for range p.Transactions {
			s, d, amount := next()
			src, dst := accounts[s], accounts[d]
			src.Act(tl, func() {
				src.balance -= amount
				dst.Act(src, func() {
					dst.balance += amount
					src.Act(nil, func() { tl.Act(nil, ack) })
				})
			})
		}
	})
	n, err := workload.Await(ctx, done)
	t.StopTimer()
	if err != nil {
		return workload.Result{}, err
	}
	// Every balance change happened before its acknowledgement reached
	// the teller, so the balances can be read directly now.
	balances := make([]int64, len(accounts))
	for i, a := range accounts {
		balances[i] = a.balance
	}
	return workload.Result{Count: n, Check: workload.BankCheck(balances)}, nil
}

type fibActor struct {
	phony.Inbox
	pending int
	sum     int64
}

// Fib: an actor per call; an answered actor is garbage.
func Fib(ctx context.Context, t workload.Timer, p workload.Fib) (workload.Result, error) {
	done := make(chan int64, 1)
	var ask func(parent phony.Actor, n int, reply func(int64))
	ask = func(parent phony.Actor, n int, reply func(int64)) {
		f := &fibActor{}
		f.Act(parent, func() {
			if n <= 2 {
				reply(1)
				return
			}
			add := func(v int64) {
				f.Act(nil, func() {
					f.sum += v
					if f.pending--; f.pending == 0 {
						reply(f.sum)
					}
				})
			}
			f.pending = 2
			ask(f, n-1, add)
			ask(f, n-2, add)
		})
	}
	t.StartTimer()
	ask(nil, p.N, func(v int64) { done <- v })
	v, err := workload.Await(ctx, done)
	t.StopTimer()
	return workload.Result{Count: v}, err
}

type process struct {
	phony.Inbox
	id   int
	next *process
}

// Ring: one actor per process; a token is a closure carrying its hops
// left, sent by each process as itself.
func Ring(ctx context.Context, t workload.Timer, p workload.Ring) (r workload.Result, err error) {
	done := make(chan int, p.Tokens)
	t.StartTimer()
	ring := make([]process, p.Processes)
	for i := range ring {
		if workload.Cancelled(ctx, i) {
			return r, ctx.Err()
		}
		ring[i].id = i
		ring[i].next = &ring[(i+1)%len(ring)]
	}
	var pass func(from phony.Actor, to *process, left int)
	pass = func(from phony.Actor, to *process, left int) {
		to.Act(from, func() {
			if left == 0 {
				done <- to.id
				return
			}
			pass(to, to.next, left-1)
		})
	}
	for i := range p.Tokens {
		pass(nil, &ring[p.Start(i)], p.Hops)
	}
	for range p.Tokens {
		id, err := workload.Await(ctx, done)
		if err != nil {
			return r, err
		}
		r.Count++
		r.Check += int64(id)
	}
	t.StopTimer()
	return r, nil
}
