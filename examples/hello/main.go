// Command hello is the program in the README: one actor, one call that
// must start within a second, and what to do when it could not.
//
//	go run ./examples/hello
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
)

type Counter struct{ n int }

func main() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())

	counter := crisp.Spawn(sys, &Counter{})
	f := crisp.Call(counter, func(p *crisp.Proc, c *Counter) (int, error) {
		c.n++ // runs on the actor's goroutine, one handler at a time
		return c.n, nil
	}, crisp.Within(time.Second)) // start within a second, or never

	n, err := f.Get()
	switch {
	case errors.Is(err, deadline.ErrMissed):
		fmt.Println("could not start in time, so it never ran")
	case err != nil:
		fmt.Println("failed:", err)
	default:
		fmt.Println("count:", n)
	}
}
