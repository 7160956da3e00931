package future_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/future"
)

func Example() {
	p := future.NewPromise[int](nil) // nil: timeouts use the real clock
	go func() { p.Resolve(6*7, nil) }()

	v, err := p.Future().Get()
	fmt.Println(v, err)
	// Output: 42 <nil>
}

func ExamplePromise_Fail() {
	p := future.NewPromise[string](nil)
	f := p.Future()

	fmt.Println(p.Fail(errors.New("disk full")))
	fmt.Println(p.Resolve("saved", nil)) // too late: the first resolution wins

	v, err := f.Get()
	fmt.Printf("%q %v\n", v, err)
	// Output:
	// true
	// false
	// "" disk full
}

// watchedClock is a mock clock that says when a timer starts on it, so
// the example moves the mock only once GetWithin is timing.
type watchedClock struct {
	*clock.Mock
	timerStarted chan struct{}
}

func (c watchedClock) Timer(d time.Duration) *clock.Timer {
	t := c.Mock.Timer(d)
	c.timerStarted <- struct{}{}
	return t
}

// GetWithin measures its timeout on the future's clock, so a test can
// time it out exactly, without waiting in real time.
func ExampleFuture_GetWithin() {
	mock := clock.NewMock()
	clk := watchedClock{Mock: mock, timerStarted: make(chan struct{})}
	p := future.NewPromise[string](clk)
	f := p.Future()
	start := mock.Now()

	errc := make(chan error)
	go func() {
		_, err := f.GetWithin(5 * time.Second)
		errc <- err
	}()

	<-clk.timerStarted // the waiter is timing on the mock
	mock.Add(5 * time.Second)
	err := <-errc
	fmt.Println(errors.Is(err, future.ErrTimeout), "after", mock.Since(start))

	// The timeout did not touch the future: it can still be resolved.
	p.Resolve("late but delivered", nil)
	v, _ := f.Get()
	fmt.Println(v)
	// Output:
	// true after 5s
	// late but delivered
}

func ExampleFuture_GetContext() {
	p := future.NewPromise[int](nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := p.Future().GetContext(ctx)
	fmt.Println(err)
	// Output: context canceled
}

func ExampleFuture_Done() {
	p := future.NewPromise[string](nil)
	f := p.Future()
	go p.Resolve("pong", nil)

	select {
	case <-f.Done():
		v, _ := f.Get() // resolved: returns at once
		fmt.Println(v)
	case <-time.After(time.Minute):
		fmt.Println("no answer")
	}
	// Output: pong
}
