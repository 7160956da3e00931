package remote_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/remote"
)

// Account is the state of the example's actor.
type Account struct{ Balance int }

// Deposit is the request of the "bank.deposit" endpoint.
type Deposit struct{ Amount int }

func Example() {
	ctx := context.Background()
	sys := crisp.NewSystem()
	defer sys.Shutdown(ctx)

	// A node with a NATS server of its own; other processes join it
	// with remote.Start(remote.URL(node.URL())).
	node, err := remote.Start(remote.WithClock(sys.Clock()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close(ctx)

	deposit := remote.NewEndpoint[Deposit, int]("bank.deposit")
	acct := crisp.Spawn(sys, &Account{})
	_, err = remote.Serve(node, deposit, acct, func(_ *crisp.Proc, a *Account, d Deposit) (int, error) {
		if d.Amount <= 0 {
			return a.Balance, errors.New("a deposit must be positive")
		}
		a.Balance += d.Amount
		return a.Balance, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	balance, err := remote.Call(node, deposit, Deposit{Amount: 50}, remote.Within(time.Second)).Get()
	fmt.Println(balance, err)

	_, err = remote.Call(node, deposit, Deposit{Amount: -1}).Get()
	var rerr *remote.Error
	if errors.As(err, &rerr) {
		fmt.Printf("%s at the %s: %v\n", rerr.Endpoint, rerr.Where, rerr.Err)
	}

	_, err = remote.Call(node, deposit, Deposit{Amount: 1}, remote.Within(0)).Get()
	fmt.Println(errors.Is(err, deadline.ErrMissed))
	// Output:
	// 50 <nil>
	// bank.deposit at the receiver: a deposit must be positive
	// true
}
