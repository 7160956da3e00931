package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// op is one random operation, as sent.
type op struct {
	id, kind, from, to int
	amount             int64
}

func randomOps(r *rand.Rand, n, accounts, firstID int) []op {
	ops := make([]op, n)
	for i := range ops {
		o := op{id: firstID + i, kind: r.IntN(4), from: r.IntN(accounts), to: r.IntN(accounts), amount: int64(r.IntN(120))}
		if o.kind == 3 && o.from == o.to {
			o.kind = 2
		}
		ops[i] = o
	}
	return ops
}

func (o op) accounts() []int {
	if o.kind == 3 {
		return []int{o.from, o.to}
	}
	return []int{o.from}
}

// send sends o and returns its future, or nil for a deposit (a Tell).
func send(s Service, o op) *future.Future[int64] {
	switch o.kind {
	case 0:
		s.Deposit(o.id, o.from, o.amount)
		return nil
	case 1:
		return s.Withdraw(o.id, o.from, o.amount)
	case 2:
		return s.Check(o.id, o.from)
	}
	return s.Transfer(o.id, o.from, o.to, o.amount)
}

// run sends every sender's operations concurrently, one goroutine per
// sender, and returns the money that entered and left the bank.
func run(t *testing.T, s Service, senders [][]op) (in, out int64) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ops := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			futs := make([]*future.Future[int64], len(ops))
			for i, o := range ops {
				futs[i] = send(s, o)
			}
			var myIn, myOut int64
			for i, f := range futs {
				switch ops[i].kind {
				case 0:
					myIn += ops[i].amount
				case 1:
					if _, err := f.Get(); err == nil {
						myOut += ops[i].amount
					} else if !errors.Is(err, ErrInsufficient) {
						t.Error(err)
					}
				default:
					if _, err := f.Get(); err != nil && !errors.Is(err, ErrInsufficient) {
						t.Error(err)
					}
				}
			}
			mu.Lock()
			in, out = in+myIn, out+myOut
			mu.Unlock()
		}()
	}
	wg.Wait()
	return in, out
}

// histories reads every account's history through the bank itself.
func histories(t *testing.T, s Service, accounts int) [][]int {
	opts := make([]crisp.SendOption, accounts)
	for i := range opts {
		opts[i] = crisp.Key(acct(i))
	}
	h, err := crisp.Call(s.g, func(_ *crisp.Proc, b *Bank) ([][]int, error) {
		out := make([][]int, len(b.history))
		for i := range out {
			out[i] = slices.Clone(b.history[i])
		}
		return out, nil
	}, opts...).Get()
	require.NoError(t, err)
	return h
}

func TestEachAccountSeesItsOperationsInSendOrder(t *testing.T) {
	const accounts, workers, initial = 50, 8, 1000
	for _, senders := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d senders", senders), func(t *testing.T) {
			sys := crisp.NewSystem()
			defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
			s := Open(sys, NewBank(accounts, initial), workers)
			r := rand.New(rand.NewPCG(uint64(senders), 7))
			per := 10_000 / senders
			sent := make([][]op, senders)
			for i := range sent {
				sent[i] = randomOps(r, per, accounts, i*per)
			}
			in, out := run(t, s, sent)

			total, err := s.Total(accounts)
			require.NoError(t, err)
			assert.Equal(t, int64(accounts*initial)+in-out, total, "money is conserved")

			sender := func(id int) int { return id / per }
			got := histories(t, s, accounts)
			for a := range accounts {
				// For each sender, the operations on account a must have
				// been applied in the order that sender sent them.
				for i, ops := range sent {
					var want []int
					for _, o := range ops {
						if slices.Contains(o.accounts(), a) {
							want = append(want, o.id)
						}
					}
					var applied []int
					for _, id := range got[a] {
						if sender(id) == i {
							applied = append(applied, id)
						}
					}
					require.Equal(t, want, applied, "account %d, sender %d", a, i)
				}
			}
		})
	}
}

// BenchmarkBank is §5.2 of the paper: 1, 2 and 4 workers serve requests
// spread over accounts in runs of 10 per account, each a little work.
// ns/op is per request; compare worker counts by their ratio to one.
// "keyless" runs the same requests without keys: the cost of key
// tracking.
func BenchmarkBank(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		for _, workers := range []int{1, 2, 4} {
			for _, keyed := range []bool{true, false} {
				name := fmt.Sprintf("requests=%d/workers=%d", n, workers)
				if !keyed {
					name += "/keyless"
				}
				b.Run(name, func(b *testing.B) { benchBank(b, n, workers, keyed) })
			}
		}
	}
}

func benchBank(b *testing.B, requests, workers int, keyed bool) {
	const accounts = 1000
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	s := Open(sys, NewBank(accounts, 1<<40), workers)
	work := func(_ *crisp.Proc, bank *Bank, a int) {
		// About ten microseconds of work, so that the work, not the one
		// sending goroutine, bounds throughput; only keyed requests may
		// write the account (keyless ones would race).
		x := int64(a)
		for i := range 3000 {
			x = x*31 + int64(i)
		}
		if keyed {
			bank.balance[a] += x & 1
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i := range requests {
			a := (i / 10) % accounts // runs of 10 per account
			var opts []crisp.SendOption
			if keyed {
				opts = []crisp.SendOption{crisp.Key(acct(a))}
			}
			crisp.Tell(s.g, func(p *crisp.Proc, bank *Bank) { work(p, bank, a) }, opts...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := sys.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*requests), "ns/request")
}
