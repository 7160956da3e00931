package onproto

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/crisprt/crisp/bench/internal/workload"
)

type work struct{ board []byte }
type workDone struct{ found int64 }

type queensMaster struct {
	workers     []*actor.PID
	next        int
	outstanding int
	stopped     bool
	limit       int
	r           workload.Result
	done        chan<- workload.Result
}

func (a *queensMaster) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case work:
		if a.stopped {
			return
		}
		a.outstanding++
		c.Send(a.workers[a.next], m)
		a.next = (a.next + 1) % len(a.workers)
	case workDone:
		a.outstanding--
		a.r.Check++
		a.r.Count += m.found
		if a.stopped {
			return
		}
		if a.r.Count >= int64(a.limit) || a.outstanding == 0 {
			a.stopped = true
			a.r.Count = min(a.r.Count, int64(a.limit))
			a.done <- a.r
		}
	}
}

type queensWorker struct {
	master          *actor.PID
	size, threshold int
}

func (a *queensWorker) Receive(c actor.Context) {
	m, ok := c.Message().(work)
	if !ok {
		return
	}
	var found int64
	if len(m.board) >= a.threshold || len(m.board) == a.size {
		found = workload.QueensCount(m.board, a.size)
	} else {
		for col := range byte(a.size) {
			if workload.QueenFits(m.board, col) {
				c.Send(a.master, work{append(m.board[:len(m.board):len(m.board)], col)})
			}
		}
	}
	c.Send(a.master, workDone{found})
}

// NQueens: protoactor has a priority mailbox, which could order boards by
// depth as crisp's workers do, but the answer does not depend on the
// order and the default mailbox is the one its benchmarks use; boards go
// in arrival order.
func NQueens(ctx context.Context, t workload.Timer, p workload.NQueens) (workload.Result, error) {
	sys := newSystem()
	defer sys.Shutdown()
	done := make(chan workload.Result, 1)
	t.StartTimer()
	master := &queensMaster{workers: make([]*actor.PID, p.Workers), limit: p.Limit, done: done}
	mp := spawn(sys, master)
	for i := range master.workers {
		master.workers[i] = spawn(sys, &queensWorker{master: mp, size: p.Size, threshold: p.Threshold})
	}
	sys.Root.Send(mp, work{})
	r, err := workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

// bankTimeout bounds each inter-account request (RequestFuture needs
// one); it is never reached.
const bankTimeout = time.Minute

type transfer struct {
	dst    int
	amount int64
}
type credit struct{ amount int64 }
type credited struct{}
type ack struct{ err error }

type account struct {
	accounts []*actor.PID
	teller   *actor.PID
	balance  int64
}

func (a *account) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case transfer: // we are the source: ask the destination, serve others meanwhile
		a.balance -= m.amount
		f := c.RequestFuture(a.accounts[m.dst], credit{m.amount}, bankTimeout)
		c.ReenterAfter(f, func(_ any, err error) { c.Send(a.teller, ack{err}) })
	case credit: // we are the destination
		a.balance += m.amount
		c.Respond(credited{})
	}
}

type teller struct {
	accounts []*actor.PID
	bank     workload.Bank
	replies  int64
	err      error
	done     chan<- int64
}

func (a *teller) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case start:
		next := a.bank.Transfers()
		for range a.bank.Transactions {
			src, dst, amount := next()
			c.Send(a.accounts[src], transfer{dst, amount})
		}
	case ack:
		a.replies++
		a.err = errors.Join(a.err, m.err)
		if a.replies == int64(a.bank.Transactions) {
			a.done <- a.replies
		}
	}
}

// Bank: the source asks the destination with RequestFuture and continues
// with ReenterAfter, protoactor's reentrancy: the source's mailbox keeps
// running while the request is out.
func Bank(ctx context.Context, t workload.Timer, p workload.Bank) (workload.Result, error) {
	sys := newSystem()
	defer sys.Shutdown()
	done := make(chan int64, 1)
	t.StartTimer()
	pids := make([]*actor.PID, p.Accounts)
	accounts := make([]*account, p.Accounts)
	tl := &teller{accounts: pids, bank: p, done: done}
	tp := spawn(sys, tl)
	for i := range accounts {
		accounts[i] = &account{accounts: pids, teller: tp}
		pids[i] = spawn(sys, accounts[i])
	}
	sys.Root.Send(tp, start{})
	n, err := workload.Await(ctx, done)
	t.StopTimer()
	if err != nil {
		return workload.Result{}, err
	}
	if tl.err != nil {
		return workload.Result{}, tl.err
	}
	// Every balance change happened before its acknowledgement reached
	// the teller, so the balances can be read directly now.
	balances := make([]int64, len(accounts))
	for i, a := range accounts {
		balances[i] = a.balance
	}
	return workload.Result{Count: n, Check: workload.BankCheck(balances)}, nil
}

type fibRequest struct{ n int }

type fibActor struct {
	replyTo *actor.PID
	pending int
	sum     int64
}

var fibProps = actor.PropsFromProducer(func() actor.Actor { return &fibActor{} }, actor.WithMailbox(actor.UnboundedLockfree()))

func (a *fibActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case fibRequest:
		a.replyTo = c.Sender()
		if m.n <= 2 {
			a.answer(c, 1)
			return
		}
		a.pending = 2
		for _, n := range [2]int{m.n - 1, m.n - 2} {
			c.Request(c.ActorSystem().Root.Spawn(fibProps), fibRequest{n})
		}
	case int64:
		a.sum += m
		if a.pending--; a.pending == 0 {
			a.answer(c, a.sum)
		}
	}
}

// answer replies to the requester and stops the actor, as Savina's does.
func (a *fibActor) answer(c actor.Context, v int64) {
	c.Send(a.replyTo, v)
	c.Stop(c.Self())
}

type fibRoot struct {
	n    int
	done chan<- int64
}

func (a *fibRoot) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case start:
		c.Request(c.ActorSystem().Root.Spawn(fibProps), fibRequest{a.n})
	case int64:
		a.done <- m
	}
}

// Fib: an actor per call, spawned at the root as protoactor's spawn
// benchmark does, asked with Request so that it can answer its Sender,
// and stopped once it has answered.
func Fib(ctx context.Context, t workload.Timer, p workload.Fib) (workload.Result, error) {
	sys := newSystem()
	defer sys.Shutdown()
	done := make(chan int64, 1)
	t.StartTimer()
	sys.Root.Send(spawn(sys, &fibRoot{n: p.N, done: done}), start{})
	v, err := workload.Await(ctx, done)
	t.StopTimer()
	return workload.Result{Count: v}, err
}

type ringToken struct{ left int }

type process struct {
	id   int
	next *actor.PID
	done chan<- int
}

func (a *process) Receive(c actor.Context) {
	if m, ok := c.Message().(ringToken); ok {
		if m.left == 0 {
			a.done <- a.id
			return
		}
		c.Send(a.next, ringToken{m.left - 1})
	}
}

// Ring: one actor per process, with the mailbox that is cheapest to
// allocate.
func Ring(ctx context.Context, t workload.Timer, p workload.Ring) (r workload.Result, err error) {
	sys := newSystem()
	defer sys.Shutdown()
	done := make(chan int, p.Tokens)
	t.StartTimer()
	procs := make([]*process, p.Processes)
	pids := make([]*actor.PID, p.Processes)
	for i := range procs {
		if workload.Cancelled(ctx, i) {
			return r, ctx.Err()
		}
		procs[i] = &process{id: i, done: done}
		pids[i] = spawn(sys, procs[i], actor.WithMailbox(actor.UnboundedLockfree()))
	}
	for i, pr := range procs { // before any message: the sends publish it
		pr.next = pids[(i+1)%len(pids)]
	}
	for i := range p.Tokens {
		sys.Root.Send(pids[p.Start(i)], ringToken{p.Hops})
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
