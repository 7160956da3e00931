package ongoakt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/tochemey/goakt/v3/actor"
	"github.com/tochemey/goakt/v3/reentrancy"

	"github.com/crisprt/crisp/bench/internal/ongoakt/msg"
	"github.com/crisprt/crisp/bench/internal/workload"
)

type queensMaster struct {
	base
	workers     []*actor.PID
	next        int
	outstanding int
	stopped     bool
	limit       int
	r           workload.Result
	done        chan<- workload.Result
}

func (a *queensMaster) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Work:
		if a.stopped {
			return
		}
		a.outstanding++
		c.Tell(a.workers[a.next], m)
		a.next = (a.next + 1) % len(a.workers)
	case *msg.WorkDone:
		a.outstanding--
		a.r.Check++
		a.r.Count += m.Found
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
	base
	master          *actor.PID
	size, threshold int
}

func (a *queensWorker) Receive(c *actor.ReceiveContext) {
	m, ok := c.Message().(*msg.Work)
	if !ok {
		return
	}
	board := m.Board
	var found int64
	if len(board) >= a.threshold || len(board) == a.size {
		found = workload.QueensCount(board, a.size)
	} else {
		for col := range byte(a.size) {
			if workload.QueenFits(board, col) {
				c.Tell(a.master, &msg.Work{Board: append(board[:len(board):len(board)], col)})
			}
		}
	}
	c.Tell(a.master, &msg.WorkDone{Found: found})
}

// NQueens: goakt has a priority mailbox, which could order boards by
// depth as crisp's workers do, but the answer does not depend on the
// order and the default mailbox is the one its benchmarks use; boards go
// in arrival order.
func NQueens(ctx context.Context, t workload.Timer, p workload.NQueens) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	done := make(chan workload.Result, 1)
	t.StartTimer()
	master := &queensMaster{workers: make([]*actor.PID, p.Workers), limit: p.Limit, done: done}
	mp, err := rn.spawn("master", 0, master)
	if err != nil {
		return r, err
	}
	for i := range master.workers {
		if master.workers[i], err = rn.spawn("worker", i, &queensWorker{master: mp, size: p.Size, threshold: p.Threshold}); err != nil {
			return r, err
		}
	}
	if err := actor.Tell(ctx, mp, &msg.Work{}); err != nil {
		return r, err
	}
	r, err = workload.Await(ctx, done)
	t.StopTimer()
	return r, err
}

type account struct {
	base
	accounts []*actor.PID
	teller   *actor.PID
	balance  int64
	err      error
}

func (a *account) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Transfer: // we are the source: ask the destination, serve others meanwhile
		a.balance -= m.Amount
		self, teller := c.Self(), a.teller
		call := c.Request(a.accounts[m.Dst], &msg.Credit{Amount: m.Amount})
		if call == nil {
			a.err = errors.Join(a.err, errors.New("ongoakt: request refused"))
			return
		}
		call.Then(func(_ proto.Message, err error) {
			if err == nil {
				err = self.Tell(context.Background(), teller, ackMsg)
			}
			if err != nil {
				a.err = errors.Join(a.err, err)
			}
		})
	case *msg.Credit: // we are the destination
		a.balance += m.Amount
		c.Response(creditedMsg)
	}
}

type teller struct {
	base
	accounts []*actor.PID
	bank     workload.Bank
	replies  int64
	done     chan<- int64
}

func (a *teller) Receive(c *actor.ReceiveContext) {
	switch c.Message().(type) {
	case *msg.Start:
		next := a.bank.Transfers()
		for range a.bank.Transactions {
			src, dst, amount := next()
			c.Tell(a.accounts[src], &msg.Transfer{Dst: int32(dst), Amount: amount})
		}
	case *msg.Ack:
		a.replies++
		if a.replies == int64(a.bank.Transactions) {
			a.done <- a.replies
		}
	}
}

// Bank: the source asks the destination with Request and continues with
// Then, goakt's reentrancy: the source's mailbox keeps running while the
// request is out.
func Bank(ctx context.Context, t workload.Timer, p workload.Bank) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	done := make(chan int64, 1)
	t.StartTimer()
	pids := make([]*actor.PID, p.Accounts)
	accounts := make([]*account, p.Accounts)
	tl := &teller{accounts: pids, bank: p, done: done}
	tp, err := rn.spawn("teller", 0, tl)
	if err != nil {
		return r, err
	}
	allowAll := actor.WithReentrancy(reentrancy.New(reentrancy.WithMode(reentrancy.AllowAll)))
	for i := range accounts {
		accounts[i] = &account{accounts: pids, teller: tp}
		if pids[i], err = rn.spawn("account", i, accounts[i], allowAll); err != nil {
			return r, err
		}
	}
	if err := actor.Tell(ctx, tp, startMsg); err != nil {
		return r, err
	}
	n, err := workload.Await(ctx, done)
	t.StopTimer()
	if err != nil {
		return r, err
	}
	// Every balance change happened before its acknowledgement reached
	// the teller, so the accounts can be read directly now.
	balances := make([]int64, len(accounts))
	for i, a := range accounts {
		if a.err != nil {
			return r, a.err
		}
		balances[i] = a.balance
	}
	return workload.Result{Count: n, Check: workload.BankCheck(balances)}, nil
}

// ErrSpawnFailed wraps the error of a Spawn that failed during a run.
//
// goakt v3.14.0's Spawn checks the new actor with an Ask (a readiness
// probe) and fails if no answer comes within 5 s. When many actors spawn
// while others exchange messages, as in Fib, that answer is sometimes
// lost and Spawn fails; the likely cause is in Ask (actor/pid.go), which
// marks the request's ReceiveContext as answered after reading the reply,
// when the target may already have returned that context to goakt's pool
// and another Ask may have taken it, whose reply is then dropped.
var ErrSpawnFailed = errors.New("ongoakt: spawn failed")

// fibRun is what all fib actors of a run share.
type fibRun struct {
	names atomic.Uint64
	errs  chan error // the first spawn failure
}

type fibActor struct {
	base
	run     *fibRun
	parent  *actor.PID
	pending int
	sum     int64
}

func (a *fibActor) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.FibRequest:
		a.parent = c.Sender()
		if m.N <= 2 {
			a.answer(c, 1)
			return
		}
		a.pending = 2
		for _, n := range [2]int32{m.N - 1, m.N - 2} {
			child := a.run.spawn(c)
			if child == nil {
				return // the run has failed
			}
			c.Tell(child, &msg.FibRequest{N: n})
		}
	case *msg.FibResponse:
		a.sum += m.V
		if a.pending--; a.pending == 0 {
			a.answer(c, a.sum)
		}
	}
}

// answer replies to the parent and stops the actor, as Savina's does.
func (a *fibActor) answer(c *actor.ReceiveContext, v int64) {
	c.Tell(a.parent, &msg.FibResponse{V: v})
	c.Shutdown()
}

// spawn spawns a fib actor at the top level (as the other systems do,
// rather than as a child) with a name unique in the system, or reports
// the failure to the run and returns nil.
func (r *fibRun) spawn(c *actor.ReceiveContext) *actor.PID {
	name := "fib-" + strconv.FormatUint(r.names.Add(1), 10)
	pid, err := c.ActorSystem().Spawn(context.Background(), name, &fibActor{run: r}, actor.WithLongLived())
	if err != nil {
		select {
		case r.errs <- fmt.Errorf("%w: %w", ErrSpawnFailed, err):
		default:
		}
		return nil
	}
	return pid
}

type fibRoot struct {
	base
	n    int
	run  *fibRun
	done chan<- int64
}

func (a *fibRoot) Receive(c *actor.ReceiveContext) {
	switch m := c.Message().(type) {
	case *msg.Start:
		if child := a.run.spawn(c); child != nil {
			c.Tell(child, &msg.FibRequest{N: int32(a.n)})
		}
	case *msg.FibResponse:
		a.done <- m.V
	}
}

// Fib: an actor per call, spawned by its parent, stopped once it has
// answered.
func Fib(ctx context.Context, t workload.Timer, p workload.Fib) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	done := make(chan int64, 1)
	t.StartTimer()
	fr := &fibRun{errs: make(chan error, 1)}
	root, err := rn.spawn("root", 0, &fibRoot{n: p.N, run: fr, done: done})
	if err != nil {
		return r, err
	}
	if err := actor.Tell(ctx, root, startMsg); err != nil {
		return r, err
	}
	select {
	case v := <-done:
		t.StopTimer()
		return workload.Result{Count: v}, nil
	case err := <-fr.errs:
		return r, err
	case <-ctx.Done():
		return r, ctx.Err()
	}
}

type process struct {
	base
	id   int
	next *actor.PID
	done chan<- int
}

func (a *process) Receive(c *actor.ReceiveContext) {
	if m, ok := c.Message().(*msg.Token); ok {
		if m.Left == 0 {
			a.done <- a.id
			return
		}
		c.Tell(a.next, &msg.Token{Left: m.Left - 1})
	}
}

// Ring: one actor per process.
func Ring(ctx context.Context, t workload.Timer, p workload.Ring) (r workload.Result, err error) {
	rn, err := start(ctx)
	if err != nil {
		return r, err
	}
	defer rn.stop(&err)
	done := make(chan int, p.Tokens)
	t.StartTimer()
	procs := make([]*process, p.Processes)
	pids := make([]*actor.PID, p.Processes)
	for i := range procs {
		if workload.Cancelled(ctx, i) {
			return r, ctx.Err()
		}
		procs[i] = &process{id: i, done: done}
		if pids[i], err = rn.spawn("process", i, procs[i]); err != nil {
			return r, err
		}
	}
	for i, pr := range procs { // before any message: the sends publish it
		pr.next = pids[(i+1)%len(pids)]
	}
	for i := range p.Tokens {
		if err := actor.Tell(ctx, pids[p.Start(i)], &msg.Token{Left: int64(p.Hops)}); err != nil {
			return r, err
		}
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
