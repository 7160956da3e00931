package crisp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
)

// A bounded mailbox refuses a message at once when it is full, rather
// than letting a backlog grow without end.
func ExampleWithCapacity() {
	sys := crisp.NewSystem(crisp.WithClock(clock.NewMock()))
	defer sys.Shutdown(context.Background())
	svc := crisp.Spawn(sys, &Account{}, crisp.WithName("ledger"), crisp.WithCapacity(1, crisp.FailWhenFull))

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(svc, func(*crisp.Proc, *Account) { close(busy); <-release }) // running: holds no place
	<-busy
	queued := crisp.Call(svc, func(*crisp.Proc, *Account) (int, error) { return 1, nil }) // takes the one place
	_, err := crisp.Call(svc, func(*crisp.Proc, *Account) (int, error) { return 2, nil }, crisp.MessageName("second")).Get()
	fmt.Println(errors.Is(err, crisp.ErrFull), err)
	close(release)
	fmt.Println(queued.Get())
	// Output:
	// true crisp: mailbox of actor ledger full (capacity 1): message second refused
	// 1 <nil>
}

// With admission control an actor refuses at once the work it could not
// start in time, by its estimate, instead of failing it at its deadline.
func ExampleWithAdmission() {
	mock := clock.NewMock()
	sys := crisp.NewSystem(crisp.WithClock(mock))
	defer sys.Shutdown(context.Background())
	svc := crisp.Spawn(sys, &Account{}, crisp.WithName("reports"), crisp.WithAdmission())

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(svc, func(*crisp.Proc, *Account) { close(busy); <-release })
	<-busy
	report := func(*crisp.Proc, *Account) (string, error) { return "report", nil }
	// Each report takes about 40ms and is worthless after 100ms.
	first := crisp.Call(svc, report, crisp.Within(100*time.Millisecond), crisp.Cost(40*time.Millisecond))
	second := crisp.Call(svc, report, crisp.Within(100*time.Millisecond), crisp.Cost(40*time.Millisecond))
	_, err := crisp.Call(svc, report, crisp.Within(100*time.Millisecond), crisp.Cost(40*time.Millisecond)).Get()
	var inf *crisp.InfeasibleError
	if errors.As(err, &inf) {
		fmt.Printf("refused at once: would start in %v, must start within %v; a miss? %v\n",
			inf.Wait, inf.Deadline.Sub(inf.At), errors.Is(err, deadline.ErrMissed))
	}
	close(release)
	for _, f := range []interface{ Get() (string, error) }{first, second} {
		fmt.Println(f.Get())
	}
	// Output:
	// refused at once: would start in 80ms, must start within 60ms; a miss? false
	// report <nil>
	// report <nil>
}

// A message sent from a handler inherits the handler's finishing
// deadline: here the lookup must start by the time the request it serves
// must be finished, 100ms after it was sent, whatever deadline it asks
// for itself. Detached opts out.
func ExampleDetached() {
	mock := clock.NewMock()
	sys := crisp.NewSystem(crisp.WithClock(mock))
	defer sys.Shutdown(context.Background())
	frontend := crisp.Spawn(sys, &Account{}, crisp.WithName("frontend"))
	db := crisp.Spawn(sys, &Account{}, crisp.WithName("db"))

	busy, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(db, func(*crisp.Proc, *Account) { close(busy); <-release })
	<-busy
	lookup := func(*crisp.Proc, *Account) (int, error) { return 42, nil }
	type pair struct{ inherited, detached *future.Future[int] }
	sent, _ := crisp.Call(frontend, func(p *crisp.Proc, _ *Account) (pair, error) {
		return pair{
			crisp.Call(db, lookup, crisp.Within(time.Hour)),
			crisp.Call(db, lookup, crisp.Within(time.Hour), crisp.Detached()),
		}, nil
	}, crisp.Within(100*time.Millisecond), crisp.Cost(30*time.Millisecond)).Get()

	mock.Add(100 * time.Millisecond)
	_, err := sent.inherited.Get()
	var miss *deadline.MissedError
	if errors.As(err, &miss) {
		fmt.Println("inherited: missed at", miss.Deadline.Sub(time.Unix(0, 0).UTC()))
	}
	close(release)
	fmt.Println(sent.detached.Get())
	// Output:
	// inherited: missed at 100ms
	// 42 <nil>
}

// The dead-letter hook hears of every Tell that could not be delivered
// or run to its end, with the reason.
func ExampleWithDeadLetters() {
	sys := crisp.NewSystem(crisp.WithClock(clock.NewMock()), crisp.WithDeadLetters(func(d crisp.DeadLetter) {
		fmt.Printf("dead letter: %s to %s: %v\n", d.Message, d.Actor, errors.Is(d.Reason, crisp.ErrStopped))
	}))
	defer sys.Shutdown(context.Background())
	acct := crisp.Spawn(sys, &Account{}, crisp.WithName("account-7"))
	acct.Stop()
	crisp.Tell(acct, func(_ *crisp.Proc, a *Account) { a.Balance += 10 }, crisp.MessageName("deposit"))
	// Output: dead letter: deposit to account-7: true
}
