package crisp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
)

// Tell sends work with no future to wait on. Messages from one sender
// with no deadline run in the order sent; WaitIdle waits for them all.
func ExampleTell() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	audit := crisp.Spawn(sys, &[]string{})

	for _, event := range []string{"login", "transfer", "logout"} {
		crisp.Tell(audit, func(_ *crisp.Proc, log *[]string) {
			*log = append(*log, event)
		})
	}
	sys.WaitIdle(context.Background())

	log, _ := crisp.Call(audit, func(_ *crisp.Proc, log *[]string) ([]string, error) { return *log, nil }).Get()
	fmt.Println(log)
	// Output: [login transfer logout]
}

// Send is a Tell whose handler takes a value: the handler can be one
// function for every message, and the value travels in the message, so
// a flood of Sends of numbers or pointers allocates nothing per message
// once the actor has a backlog.
func ExampleSend() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	meter := crisp.Spawn(sys, &Meter{})

	for _, kwh := range []int64{3, 5, 2} {
		crisp.Send(meter, addReading, kwh)
	}
	total, _ := crisp.Call(meter, func(_ *crisp.Proc, m *Meter) (int64, error) { return m.total, nil }).Get()
	fmt.Println(total)
	// Output: 10
}

// SpawnEach makes many actors at once, one per state, in one
// allocation: here a ring of five cells, each passing a token on to the
// next until its hops run out.
func ExampleSpawnEach() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	cells := make([]*Cell, 5)
	for i := range cells {
		cells[i] = &Cell{id: i, done: make(chan int, 1)}
	}
	ring := crisp.SpawnEach(sys, cells)
	for i, c := range cells {
		c.next = ring[(i+1)%len(ring)]
	}

	crisp.Send(ring[0], pass, 12)
	sys.WaitIdle(context.Background())
	for _, c := range cells {
		select {
		case id := <-c.done:
			fmt.Println("the token stopped at cell", id)
		default:
		}
	}
	// Output: the token stopped at cell 2
}

// Cell is one actor of a ring.
type Cell struct {
	id   int
	next *crisp.Actor[*Cell]
	done chan int
}

// pass hands the token to the next cell, or stops it there when no hops
// are left.
func pass(_ *crisp.Proc, c *Cell, hops int) {
	if hops == 0 {
		c.done <- c.id
		return
	}
	crisp.Send(c.next, pass, hops-1)
}

// Meter sums readings.
type Meter struct{ total int64 }

// addReading is a handler for Send: the Proc, the actor's state, then the
// value.
func addReading(_ *crisp.Proc, m *Meter, kwh int64) { m.total += kwh }

// Messages that share a key start in the order they were sent, whatever
// their deadlines; the policy orders the others around them. Under EDF
// alone the deposit, due first, would run before the account is opened.
func ExampleKey() {
	sys := crisp.NewSystem(crisp.WithClock(clock.NewMock()))
	defer sys.Shutdown(context.Background())
	bank := crisp.Spawn(sys, &Account{})

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(bank, func(*crisp.Proc, *Account) { close(busy); <-release })
	<-busy

	say := func(what string) func(*crisp.Proc, *Account) {
		return func(*crisp.Proc, *Account) { fmt.Println(what) }
	}
	crisp.Tell(bank, say("open account 7"), crisp.Key(7), crisp.Within(time.Hour))
	crisp.Tell(bank, say("deposit to account 7"), crisp.Key(7), crisp.Within(time.Second))
	crisp.Tell(bank, say("daily report"), crisp.Within(time.Minute))
	close(release)
	sys.WaitIdle(context.Background())
	// Output:
	// daily report
	// open account 7
	// deposit to account 7
}

// A message sent with a context is dropped when the context ends before
// the message starts: the caller gave up, so the work is not done.
func ExampleContext() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	svc := crisp.Spawn(sys, &Account{})

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(svc, func(*crisp.Proc, *Account) { close(busy); <-release })
	<-busy

	ctx, cancel := context.WithCancel(context.Background())
	f := crisp.Call(svc, func(p *crisp.Proc, _ *Account) (string, error) {
		return "report", p.Context().Err()
	}, crisp.Context(ctx))
	cancel() // the request that wanted the report is gone
	_, err := f.Get()
	fmt.Println(err)
	close(release)
	// Output: context canceled
}

// Cost turns a deadline to finish into a deadline to start: a job due
// within 10s that takes 4s must start within 6s. When the actor is still
// busy at 6s, the job is dropped then rather than run late.
func ExampleCost() {
	mock := clock.NewMock()
	sys := crisp.NewSystem(crisp.WithClock(mock))
	defer sys.Shutdown(context.Background())
	svc := crisp.Spawn(sys, &Account{})
	start := mock.Now()

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(svc, func(*crisp.Proc, *Account) { close(busy); <-release })
	<-busy

	f := crisp.Call(svc, func(*crisp.Proc, *Account) (string, error) {
		return "rendered", nil
	}, crisp.Within(10*time.Second), crisp.Cost(4*time.Second))
	mock.Add(6 * time.Second)

	_, err := f.Get()
	var miss *deadline.MissedError
	if errors.As(err, &miss) {
		fmt.Println("missed: had to start by", miss.Deadline.Sub(start))
	}
	close(release)
	// Output: missed: had to start by 6s
}

// Ask sends a handler and waits for its result, for a caller with
// nothing to do meanwhile; AskWithin bounds the wait. A loop of them
// allocates only what the handlers capture: the message is reused.
func ExampleAsk() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	acct := crisp.Spawn(sys, &Account{})

	for _, amount := range []int{50, 25} {
		balance, err := crisp.AskWithin(acct, time.Second, func(_ *crisp.Proc, a *Account) (int, error) {
			a.Balance += amount
			return a.Balance, nil
		})
		fmt.Println(balance, err)
	}
	_, err := crisp.Ask(acct, func(*crisp.Proc, *Account) (int, error) {
		return 0, errors.New("account frozen")
	})
	fmt.Println(err)
	// Output:
	// 50 <nil>
	// 75 <nil>
	// account frozen
}
