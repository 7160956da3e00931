package crisp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/future"
)

// A handler that awaits another actor's reply releases its actor
// meanwhile: the shop serves the next customer while the first waits
// for the warehouse.
func ExampleAwait() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	warehouse := crisp.Spawn(sys, map[string]int{"tea": 12})
	shop := crisp.Spawn(sys, &Account{})

	open := make(chan struct{}) // the warehouse answers once it is open
	stock := crisp.Call(shop, func(p *crisp.Proc, _ *Account) (string, error) {
		n, err := crisp.Await(p, crisp.Call(warehouse, func(_ *crisp.Proc, w map[string]int) (int, error) {
			<-open
			return w["tea"], nil
		}))
		return fmt.Sprint(n, " tea in stock"), err
	})
	next, _ := crisp.Call(shop, func(*crisp.Proc, *Account) (string, error) {
		return "next customer served", nil
	}).Get()
	fmt.Println(next)

	close(open)
	fmt.Println(stock.Get())
	// Output:
	// next customer served
	// 12 tea in stock <nil>
}

// Then waits with no goroutine parked: the handler returns at once, and
// each continuation runs later on the actor, with its state. A
// continuation returns the next step (another Then) or the result
// (Return), which resolves the future CallNext returned.
func ExampleThen() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	type shop struct{ quotes int }
	prices := crisp.Spawn(sys, map[string]int{"tea": 300, "cake": 450})
	s := crisp.Spawn(sys, &shop{})
	price := func(item string) *future.Future[int] {
		return crisp.Call(prices, func(_ *crisp.Proc, m map[string]int) (int, error) { return m[item], nil })
	}

	f := crisp.CallNext(s, func(p *crisp.Proc, _ *shop) crisp.Next[*shop, string] {
		return crisp.Then(p, price("tea"), func(p *crisp.Proc, _ *shop, tea int, err error) crisp.Next[*shop, string] {
			if err != nil {
				return crisp.Return[*shop]("", err)
			}
			return crisp.Then(p, price("cake"), func(p *crisp.Proc, sh *shop, cake int, err error) crisp.Next[*shop, string] {
				sh.quotes++
				return crisp.Return[*shop](fmt.Sprintf("quote %d: %d cents", sh.quotes, tea+cake), err)
			})
		})
	})
	fmt.Println(f.Get())
	// Output: quote 1: 750 cents <nil>
}

// A handler sent with CallNext answers now with Return, or later with
// Then: here a cache answers from its state when it can, and asks the
// database otherwise.
func ExampleCallNext() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	type cache struct{ users map[int]string }
	db := crisp.Spawn(sys, map[int]string{7: "ada"})
	c := crisp.Spawn(sys, &cache{users: map[int]string{}})

	lookup := func(id int) func(*crisp.Proc, *cache) crisp.Next[*cache, string] {
		return func(p *crisp.Proc, c *cache) crisp.Next[*cache, string] {
			if name, ok := c.users[id]; ok {
				return crisp.Return[*cache](name+" (cached)", nil)
			}
			f := crisp.Call(db, func(_ *crisp.Proc, db map[int]string) (string, error) { return db[id], nil })
			return crisp.Then(p, f, func(_ *crisp.Proc, c *cache, name string, err error) crisp.Next[*cache, string] {
				if err == nil {
					c.users[id] = name
				}
				return crisp.Return[*cache](name, err)
			})
		}
	}
	fmt.Println(crisp.CallNext(c, lookup(7)).Get())
	fmt.Println(crisp.CallNext(c, lookup(7)).Get())
	// Output:
	// ada <nil>
	// ada (cached) <nil>
}

// A long handler that calls Suspend between its parts lets work that
// arrived meanwhile run first when the policy says so: under EDF, the
// deadlined alarm goes before the rest of the batch, which has none.
func ExampleProc_Suspend() {
	sys := crisp.NewSystem(crisp.WithClock(clock.NewMock()))
	defer sys.Shutdown(context.Background())
	a := crisp.Spawn(sys, &Account{})

	started, alarmSent := make(chan struct{}), make(chan struct{})
	crisp.Tell(a, func(p *crisp.Proc, _ *Account) {
		close(started)
		<-alarmSent
		fmt.Println("batch: part 1")
		p.Suspend()
		fmt.Println("batch: part 2")
	})
	<-started
	crisp.Tell(a, func(*crisp.Proc, *Account) { fmt.Println("alarm") }, crisp.Within(time.Second))
	close(alarmSent)
	sys.WaitIdle(context.Background())
	// Output:
	// batch: part 1
	// alarm
	// batch: part 2
}

// A withdrawal waits until the balance covers it, releasing the account
// so that the deposits can run. The condition is checked again only
// when another message of the actor finishes or releases it.
func ExampleProc_AwaitCond() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	acct := crisp.Spawn(sys, &Account{})

	f := crisp.Call(acct, func(p *crisp.Proc, a *Account) (int, error) {
		p.AwaitCond(func() bool { return a.Balance >= 50 })
		a.Balance -= 50
		return a.Balance, nil
	})
	deposit := func(_ *crisp.Proc, a *Account) { a.Balance += 30; fmt.Println("deposited 30") }
	crisp.Tell(acct, deposit)
	crisp.Tell(acct, deposit)
	fmt.Println(f.Get())
	// Output:
	// deposited 30
	// deposited 30
	// 10 <nil>
}
