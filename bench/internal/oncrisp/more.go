package oncrisp

import (
	"context"

	"github.com/crisprt/crisp/bench/internal/workload"
	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/policy"
)

type queensMaster struct {
	workers     []*crisp.Actor[*queensWorker]
	next        int // round robin
	outstanding int
	stopped     bool
	r           workload.Result
}

type queensWorker struct{}

// NQueens: as in Savina's priority variant, workers take the deepest
// boards first: they run policy.Priority and every board is sent with
// its depth as priority. The master keeps the default policy (EDF, which
// without deadlines is arrival order), because a worker's done message
// must not overtake the boards it sent before it.
func (c Config) NQueens(ctx context.Context, t workload.Timer, p workload.NQueens) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan workload.Result, 1)
	t.StartTimer()
	master := &queensMaster{workers: make([]*crisp.Actor[*queensWorker], p.Workers)}
	ma := crisp.Spawn(sys, master)
	for i := range master.workers {
		master.workers[i] = crisp.Spawn(sys, &queensWorker{}, crisp.WithPolicy(policy.ByPriority()))
	}
	var dispatch func(m *queensMaster, board []byte)
	work := func(board []byte) func(*crisp.Proc, *queensWorker) {
		return func(*crisp.Proc, *queensWorker) {
			var found int64
			if len(board) >= p.Threshold || len(board) == p.Size {
				found = workload.QueensCount(board, p.Size)
			} else {
				for col := range byte(p.Size) {
					if workload.QueenFits(board, col) {
						child := append(board[:len(board):len(board)], col)
						crisp.Tell(ma, func(_ *crisp.Proc, m *queensMaster) { dispatch(m, child) }, o...)
					}
				}
			}
			crisp.Tell(ma, func(_ *crisp.Proc, m *queensMaster) {
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
			}, o...)
		}
	}
	prio := make([]crisp.SendOption, 0, len(o)+1)
	prio = append(append(prio, o...), crisp.SendOption{})
	dispatch = func(m *queensMaster, board []byte) {
		if m.stopped {
			return
		}
		m.outstanding++
		w := m.workers[m.next]
		m.next = (m.next + 1) % len(m.workers)
		prio[len(prio)-1] = crisp.Priority(len(board)) // prio belongs to the master's handlers
		crisp.Tell(w, work(board), prio...)
	}
	crisp.Tell(ma, func(_ *crisp.Proc, m *queensMaster) { dispatch(m, nil) }, o...)
	r, err = workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type account struct {
	self    *crisp.Actor[*account]
	balance int64
}

type teller struct{ replies int64 }

// BankTell: crisp's Bank written with Tell continuations. The source
// account debits itself and sends the destination a closure that credits
// it and sends the source its continuation, which acknowledges to the
// teller: the source never waits, so accounts that transfer to each other
// cannot deadlock.
//
// Call+Get cannot be used here: a source that called Get inside its
// handler would block its actor, and two accounts transferring to each
// other at once would wait for each other for ever (the deadlock that
// Savina's blocking variant risks).
//
// BankAwait is the same bank written with Await, as Savina's peers use
// ask or reentrancy.
func (c Config) BankTell(ctx context.Context, t workload.Timer, p workload.Bank) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan int64, 1)
	t.StartTimer()
	accounts := make([]*account, p.Accounts)
	for i := range accounts {
		accounts[i] = &account{}
		accounts[i].self = crisp.Spawn(sys, accounts[i])
	}
	tl := crisp.Spawn(sys, &teller{})
	ack := func(_ *crisp.Proc, t *teller) {
		t.replies++
		if t.replies == int64(p.Transactions) {
			done <- t.replies
		}
	}
	acked := func(*crisp.Proc, *account) { crisp.Tell(tl, ack, o...) }
	transfer := func(dst int, amount int64) func(*crisp.Proc, *account) {
		return func(_ *crisp.Proc, src *account) {
			src.balance -= amount
			from := src.self
			crisp.Tell(accounts[dst].self, func(_ *crisp.Proc, d *account) {
				d.balance += amount
				crisp.Tell(from, acked, o...)
			}, o...)
		}
	}
	crisp.Tell(tl, func(*crisp.Proc, *teller) {
		next := p.Transfers()
		for range p.Transactions {
			src, dst, amount := next()
			crisp.Tell(accounts[src].self, transfer(dst, amount), o...)
		}
	}, o...)
	n, err := workload.Await(ctx, done)
	t.StopTimer()
	if err != nil {
		return r, err
	}
	// Every credit and debit happened before its acknowledgement reached
	// the teller, so the balances can be read directly now.
	balances := make([]int64, len(accounts))
	for i, a := range accounts {
		balances[i] = a.balance
	}
	return workload.Result{Count: n, Check: workload.BankCheck(balances)}, nil
}

// BankAwait: crisp's Bank written with Await, as the peers use their
// ask or reentrancy. The source account debits itself, calls the
// destination's credit and awaits it: its actor serves other messages
// meanwhile (a transfer to it included, so accounts that transfer to
// each other cannot deadlock), and its handler resumes, in the actor's
// policy order, when the credit is done; it then acknowledges to the
// teller.
func (c Config) BankAwait(ctx context.Context, t workload.Timer, p workload.Bank) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan int64, 1)
	failed := make(chan error, 1)
	t.StartTimer()
	accounts := make([]*account, p.Accounts)
	for i := range accounts {
		accounts[i] = &account{}
		accounts[i].self = crisp.Spawn(sys, accounts[i])
	}
	tl := crisp.Spawn(sys, &teller{})
	ack := func(_ *crisp.Proc, t *teller) {
		t.replies++
		if t.replies == int64(p.Transactions) {
			done <- t.replies
		}
	}
	credit := func(amount int64) func(*crisp.Proc, *account) (struct{}, error) {
		return func(_ *crisp.Proc, d *account) (struct{}, error) {
			d.balance += amount
			return struct{}{}, nil
		}
	}
	transfer := func(dst int, amount int64) func(*crisp.Proc, *account) {
		return func(p *crisp.Proc, src *account) {
			src.balance -= amount
			if _, err := crisp.Await(p, crisp.Call(accounts[dst].self, credit(amount), o...)); err != nil {
				select {
				case failed <- err:
				default:
				}
				return
			}
			crisp.Tell(tl, ack, o...)
		}
	}
	crisp.Tell(tl, func(*crisp.Proc, *teller) {
		next := p.Transfers()
		for range p.Transactions {
			src, dst, amount := next()
			crisp.Tell(accounts[src].self, transfer(dst, amount), o...)
		}
	}, o...)
	var n int64
	select {
	case n = <-done:
	case err = <-failed:
	case <-ctx.Done():
		err = ctx.Err()
	}
	t.StopTimer()
	if err != nil {
		return r, err
	}
	balances := make([]int64, len(accounts))
	for i, a := range accounts {
		balances[i] = a.balance
	}
	return workload.Result{Count: n, Check: workload.BankCheck(balances)}, nil
}

type fibActor struct {
	sys     *crisp.System
	self    *crisp.Actor[*fibActor]
	parent  *crisp.Actor[*fibActor] // nil: the root, which answers on done
	o       []crisp.SendOption
	done    chan<- int64
	pending int
	sum     int64
}

// spawnFib spawns the actor of a call under parent (nil: the root) and
// sends it n.
func spawnFib(sys *crisp.System, parent *crisp.Actor[*fibActor], n int, o []crisp.SendOption, done chan<- int64) {
	f := &fibActor{sys: sys, parent: parent, o: o, done: done}
	f.self = crisp.Spawn(sys, f)
	crisp.Send(f.self, fibCall, n, o...)
}

// fibCall computes fib(n): at once for n <= 2, else by two children.
func fibCall(_ *crisp.Proc, f *fibActor, n int) {
	if n <= 2 {
		f.answer(1)
		return
	}
	f.pending = 2
	spawnFib(f.sys, f.self, n-1, f.o, f.done)
	spawnFib(f.sys, f.self, n-2, f.o, f.done)
}

// fibAdd adds a child's answer, and answers once both are in.
func fibAdd(_ *crisp.Proc, f *fibActor, v int64) {
	f.sum += v
	if f.pending--; f.pending == 0 {
		f.answer(f.sum)
	}
}

// answer sends v to the parent, or on done from the root.
func (f *fibActor) answer(v int64) {
	if f.parent == nil {
		f.done <- v
		return
	}
	crisp.Send(f.parent, fibAdd, v, f.o...)
}

// Fib: every call is an actor spawned by its parent's handler, sent its
// n, and answering its parent with a Send; an actor that has answered
// is idle and unreferenced, so it is garbage: crisp needs no stop for
// it.
func (c Config) Fib(ctx context.Context, t workload.Timer, p workload.Fib) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan int64, 1)
	t.StartTimer()
	spawnFib(sys, nil, p.N, o, done)
	v, err := workload.Await(ctx, done)
	t.StopTimer()
	return workload.Result{Count: v}, err
}

type process struct {
	id   int
	next *crisp.Actor[*process]
	ring *ringOf // what every process shares, once
}

// ringOf is what a ring's processes share: the send options and where
// a token's last hop reports.
type ringOf struct {
	o    []crisp.SendOption
	done chan<- int
}

// hop takes a token with left hops to go, and passes it on.
func hop(_ *crisp.Proc, pr *process, left int) {
	if left == 0 {
		pr.ring.done <- pr.id
		return
	}
	crisp.Send(pr.next, hop, left-1, pr.ring.o...)
}

// Ring: one actor per process; a token is a Send of its hops left to
// one handler (the ring's links are in the processes' states). The
// actors are made together (SpawnEach), as phony's processes embed
// their inboxes in one slice.
func (c Config) Ring(ctx context.Context, t workload.Timer, p workload.Ring) (r workload.Result, err error) {
	sys := crisp.NewSystem()
	defer shutdown(sys, &err)
	o := c.opts()
	done := make(chan int, p.Tokens)
	t.StartTimer()
	shared := &ringOf{o: o, done: done}
	procs := make([]process, p.Processes)
	states := make([]*process, p.Processes)
	for i := range procs {
		if workload.Cancelled(ctx, i) {
			return r, ctx.Err()
		}
		procs[i] = process{id: i, ring: shared}
		states[i] = &procs[i]
	}
	ring := crisp.SpawnEach(sys, states)
	for i := range procs {
		procs[i].next = ring[(i+1)%len(ring)]
	}
	for i := range p.Tokens {
		crisp.Send(ring[p.Start(i)], hop, p.Hops, o...)
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
