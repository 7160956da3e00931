package crisp_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crisprt/crisp/crisp"
)

// An observer hears of every transition of every message: here one
// message runs and one misses its deadline while the actor is busy.
func ExampleWithObserver() {
	var mu sync.Mutex
	var seen []string
	obs := crisp.ObserverFunc(func(e crisp.Event) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s %s", e.Message, e.Kind))
	})
	mock := newMock()
	sys := crisp.NewSystem(crisp.WithClock(mock), crisp.WithObserver(obs))
	defer sys.Shutdown(context.Background())
	a := crisp.Spawn(sys, &state{})

	started, release := make(chan struct{}), make(chan struct{})
	crisp.Tell(a, func(*crisp.Proc, *state) { close(started); <-release }, crisp.MessageName("busy"))
	<-started
	late := crisp.Call(a, record("late"), crisp.Within(time.Second), crisp.MessageName("late"))
	mock.Add(time.Second)
	late.Get()
	close(release)
	sys.WaitIdle(context.Background())

	for _, s := range seen {
		fmt.Println(s)
	}
	// Output:
	// busy sent
	// busy started
	// late sent
	// late missed
	// busy finished
}
