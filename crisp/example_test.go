package crisp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
)

type Account struct{ Balance int }

func Example() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())

	acct := crisp.Spawn(sys, &Account{Balance: 100})
	crisp.Tell(acct, func(_ *crisp.Proc, a *Account) { a.Balance -= 30 })
	balance, err := crisp.Call(acct, func(_ *crisp.Proc, a *Account) (int, error) {
		return a.Balance, nil
	}).Get()
	fmt.Println(balance, err)
	// Output: 70 <nil>
}

// A message that cannot start by its deadline never runs, and its caller
// is told at the deadline, while the actor is still busy.
func ExampleWithin() {
	mock := clock.NewMock()
	sys := crisp.NewSystem(crisp.WithClock(mock))
	defer sys.Shutdown(context.Background())
	svc := crisp.Spawn(sys, &Account{}, crisp.WithName("data-service"))

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(svc, func(*crisp.Proc, *Account) { close(busy); <-release })
	<-busy

	f := crisp.Call(svc, func(*crisp.Proc, *Account) (string, error) {
		return "processed", nil
	}, crisp.Within(2*time.Second), crisp.MessageName("job-17"))

	mock.Add(2 * time.Second)
	_, err := f.Get()
	var miss *deadline.MissedError
	if errors.As(err, &miss) {
		fmt.Printf("%s on %s: missed, told %v after its deadline\n", miss.Message, miss.Actor, miss.Lateness())
	}
	close(release)
	// Output: job-17 on data-service: missed, told 0s after its deadline
}

// The data service of the paper's case study serves customer A first,
// whatever the deadlines, and the others earliest deadline first.
func ExampleWithPolicy() {
	customerAFirst := policy.Func(func(a, b *policy.Item) int {
		switch aA, bA := a.Tag == "A", b.Tag == "A"; {
		case aA && !bA:
			return -1
		case bA && !aA:
			return 1
		}
		return deadline.Compare(a.Deadline, b.Deadline)
	})

	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	svc := crisp.Spawn(sys, &Account{}, crisp.WithPolicy(customerAFirst))

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(svc, func(*crisp.Proc, *Account) { close(busy); <-release })
	<-busy

	job := func(p *crisp.Proc, _ *Account) { fmt.Println("job for", p.Tag()) }
	crisp.Tell(svc, job, crisp.Tag("B"), crisp.Within(time.Minute))
	crisp.Tell(svc, job, crisp.Tag("C"), crisp.Within(time.Second))
	crisp.Tell(svc, job, crisp.Tag("A"), crisp.Within(time.Hour))
	close(release)
	sys.WaitIdle(context.Background())
	// Output:
	// job for A
	// job for C
	// job for B
}

// WaitIdle returns once every message, including those that handlers
// sent on, has been handled. Tests use it between steps, and advance a
// mock clock only while the system is idle.
func ExampleSystem_WaitIdle() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())

	type player struct {
		name string
		peer *crisp.Actor[*player]
		hits int
	}
	ping, pong := &player{name: "ping"}, &player{name: "pong"}
	a, b := crisp.Spawn(sys, ping), crisp.Spawn(sys, pong)
	ping.peer, pong.peer = b, a

	var volley func(p *crisp.Proc, pl *player)
	volley = func(p *crisp.Proc, pl *player) {
		pl.hits++
		if pl.hits < 3 {
			crisp.Tell(pl.peer, volley)
		}
	}
	crisp.Tell(a, volley)
	sys.WaitIdle(context.Background())

	hits := func(_ *crisp.Proc, pl *player) (int, error) { return pl.hits, nil }
	pings, _ := crisp.Call(a, hits).Get()
	pongs, _ := crisp.Call(b, hits).Get()
	fmt.Println("ping hit", pings, "and pong", pongs)
	// Output: ping hit 3 and pong 2
}

// A handler that panics fails only its own message.
func ExamplePanicError() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	a := crisp.Spawn(sys, &Account{})

	_, err := crisp.Call(a, func(*crisp.Proc, *Account) (int, error) {
		panic("corrupt record")
	}).Get()
	var pe *crisp.PanicError
	fmt.Println(errors.As(err, &pe))

	v, err := crisp.Call(a, func(*crisp.Proc, *Account) (string, error) { return "still serving", nil }).Get()
	fmt.Println(v, err)
	// Output:
	// true
	// still serving <nil>
}

// A process that also serves requests or runs timers of its own can ask
// the system's runners to share the processors every 16 messages, as a
// fair neighbour, rather than only when crisp's own goroutines wait.
func ExampleWithYieldEvery() {
	sys := crisp.NewSystem(crisp.WithYieldEvery(16))
	defer sys.Shutdown(context.Background())
	counter := crisp.Spawn(sys, new(int))
	for range 1000 {
		crisp.Tell(counter, func(_ *crisp.Proc, n *int) { *n++ })
	}
	n, _ := crisp.Call(counter, func(_ *crisp.Proc, n *int) (int, error) { return *n, nil }).Get()
	fmt.Println(n)
	// Output: 1000
}
