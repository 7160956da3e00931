package crisp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/crisp"
)

// Cache is a state that a panic may leave broken: a supervised actor
// starts over with a fresh one.
type Cache struct{ entries map[string]string }

func NewCache() *Cache { return &Cache{entries: map[string]string{}} }

// A handler's panic restarts the actor with a fresh state; the caller of
// the message that panicked gets the panic, the messages after it run
// on the fresh state.
func ExampleRestart() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	cache := crisp.Spawn(sys, NewCache(), crisp.Restart(NewCache), crisp.RestartLimit(5, time.Minute))

	crisp.Tell(cache, func(_ *crisp.Proc, c *Cache) { c.entries["k"] = "v" })
	_, err := crisp.Call(cache, func(*crisp.Proc, *Cache) (int, error) { panic("corrupt entry") }).Get()
	fmt.Println(err)
	n, _ := crisp.Call(cache, func(_ *crisp.Proc, c *Cache) (int, error) { return len(c.entries), nil }).Get()
	fmt.Println("entries after the restart:", n)
	// Output:
	// crisp: handler panicked: corrupt entry
	// entries after the restart: 0
}

// Heartbeat counts its ticks.
type Heartbeat struct{ beats []time.Duration }

// A periodic timer sends a message at every multiple of its period on
// the system's clock: on a mock clock, at exactly those instants.
func ExampleEvery() {
	mock := clock.NewMock()
	start := mock.Now()
	sys := crisp.NewSystem(crisp.WithClock(mock))
	defer sys.Shutdown(context.Background())
	hb := crisp.Spawn(sys, &Heartbeat{})

	t := crisp.Every(hb, time.Second, crisp.SkipMissed, func(p *crisp.Proc, h *Heartbeat) {
		h.beats = append(h.beats, p.Now().Sub(start))
	})
	for range 3 {
		mock.Add(time.Second)
		sys.WaitIdle(context.Background())
	}
	t.Stop()
	mock.Add(time.Second)
	sys.WaitIdle(context.Background())
	beats, _ := crisp.Call(hb, func(_ *crisp.Proc, h *Heartbeat) ([]time.Duration, error) { return h.beats, nil }).Get()
	fmt.Println(beats)
	// Output: [1s 2s 3s]
}

// Drain lets the work already queued finish and then stops the actor;
// Done closes when it has.
func ExampleActor_Drain() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	acct := crisp.Spawn(sys, &Account{Balance: 100})

	deposit := crisp.Call(acct, func(_ *crisp.Proc, a *Account) (int, error) { a.Balance += 20; return a.Balance, nil })
	acct.Drain()
	late := crisp.Call(acct, func(_ *crisp.Proc, a *Account) (int, error) { return a.Balance, nil })
	<-acct.Done()
	fmt.Println(deposit.Get())
	fmt.Println(late.Get())
	// Output:
	// 120 <nil>
	// 0 crisp: actor stopped
}

// Supervisor hears of the actors it watches.
type Supervisor struct{ heard []string }

// Watch tells one actor when another ends, and why.
func ExampleWatch() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	sup := crisp.Spawn(sys, &Supervisor{})
	worker := crisp.Spawn(sys, &Account{}, crisp.WithName("worker"), crisp.StopOnPanic())

	crisp.Watch(sup, worker, func(_ *crisp.Proc, s *Supervisor, err error) {
		s.heard = append(s.heard, fmt.Sprintf("worker ended: %v", err))
	})
	crisp.Tell(worker, func(*crisp.Proc, *Account) { panic("disk full") })
	<-worker.Done()
	sys.WaitIdle(context.Background())
	heard, _ := crisp.Call(sup, func(_ *crisp.Proc, s *Supervisor) ([]string, error) { return s.heard, nil }).Get()
	fmt.Println(heard)
	// Output: [worker ended: crisp: handler panicked: disk full]
}
