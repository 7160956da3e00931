// Command bank is the bank of the multi-threaded actors paper: one actor,
// served by several workers, whose accounts are synchronised data.
// Operations on different accounts run in parallel; operations on the
// same account never overlap and take effect in the order they were sent.
// A transfer names both its accounts.
//
//	go run ./examples/bank
package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
)

// Bank holds the accounts. Every worker of the bank's group gets the same
// *Bank: the keys, not the workers, keep two operations from touching one
// account at once.
type Bank struct {
	balance []int64
	history [][]int // per account, the ids of the operations applied to it, in order
}

// ErrInsufficient is the outcome of a withdrawal or transfer the balance
// cannot cover.
var ErrInsufficient = errors.New("bank: insufficient funds")

// NewBank opens n accounts holding initial each.
func NewBank(n int, initial int64) *Bank {
	b := &Bank{balance: make([]int64, n), history: make([][]int, n)}
	for i := range b.balance {
		b.balance[i] = initial
	}
	return b
}

// Service is the bank as an actor group.
type Service struct{ g *crisp.Group[*Bank] }

// Workers reports how many workers serve the bank.
func (s Service) Workers() int { return s.g.Workers() }

// Open starts the bank's group with the given number of workers.
func Open(sys *crisp.System, b *Bank, workers int) Service {
	states := make([]*Bank, workers)
	for i := range states {
		states[i] = b
	}
	return Service{crisp.SpawnGroup(sys, states, crisp.WithName("bank"))}
}

// acct is the key of an account.
type acct int

// Deposit adds amount to account a; id names the operation in histories.
func (s Service) Deposit(id, a int, amount int64) {
	crisp.Tell(s.g, func(_ *crisp.Proc, b *Bank) {
		b.balance[a] += amount
		b.history[a] = append(b.history[a], id)
	}, crisp.Key(acct(a)))
}

// Withdraw takes amount from account a, if it holds that much.
func (s Service) Withdraw(id, a int, amount int64) *future.Future[int64] {
	return crisp.Call(s.g, func(_ *crisp.Proc, b *Bank) (int64, error) {
		b.history[a] = append(b.history[a], id)
		if b.balance[a] < amount {
			return b.balance[a], ErrInsufficient
		}
		b.balance[a] -= amount
		return b.balance[a], nil
	}, crisp.Key(acct(a)))
}

// Check reads account a's balance.
func (s Service) Check(id, a int) *future.Future[int64] {
	return crisp.Call(s.g, func(_ *crisp.Proc, b *Bank) (int64, error) {
		b.history[a] = append(b.history[a], id)
		return b.balance[a], nil
	}, crisp.Key(acct(a)))
}

// Transfer moves amount from account from to account to, if from holds
// that much: one message holding both accounts.
func (s Service) Transfer(id, from, to int, amount int64) *future.Future[int64] {
	return crisp.Call(s.g, func(_ *crisp.Proc, b *Bank) (int64, error) {
		b.history[from] = append(b.history[from], id)
		b.history[to] = append(b.history[to], id)
		if b.balance[from] < amount {
			return b.balance[from], ErrInsufficient
		}
		b.balance[from] -= amount
		b.balance[to] += amount
		return b.balance[from], nil
	}, crisp.Key(acct(from)), crisp.Key(acct(to)))
}

// Total reads every balance, holding every account.
func (s Service) Total(accounts int) (int64, error) {
	opts := make([]crisp.SendOption, accounts)
	for i := range opts {
		opts[i] = crisp.Key(acct(i))
	}
	return crisp.Call(s.g, func(_ *crisp.Proc, b *Bank) (int64, error) {
		var sum int64
		for _, v := range b.balance {
			sum += v
		}
		return sum, nil
	}, opts...).Get()
}

func main() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	const accounts, ops = 10, 1000
	bank := Open(sys, NewBank(accounts, 100), 4)
	r := rand.New(rand.NewPCG(1, 2))
	refused := 0
	var pending []*future.Future[int64]
	for id := range ops {
		from, to := r.IntN(accounts), r.IntN(accounts)
		switch r.IntN(4) {
		case 0:
			bank.Deposit(id, from, int64(r.IntN(50)))
		case 1:
			pending = append(pending, bank.Withdraw(id, from, int64(r.IntN(80))))
		case 2:
			pending = append(pending, bank.Check(id, from))
		default:
			if from != to {
				pending = append(pending, bank.Transfer(id, from, to, int64(r.IntN(80))))
			}
		}
	}
	for _, f := range pending {
		if _, err := f.Get(); errors.Is(err, ErrInsufficient) {
			refused++
		}
	}
	total, _ := bank.Total(accounts)
	fmt.Printf("%d operations on %d accounts by %d workers: %d refused for want of funds; total now %d\n",
		ops, accounts, bank.Workers(), refused, total)
}
