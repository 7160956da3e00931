// Command supervisor runs a data-service node that crashes now and then,
// under supervision, on a virtual clock, and prints its timeline.
//
// A client sends the node a request every 100 ms for three seconds; each
// must start within 15 ms. Every seventh request (and request 18) hits
// a corrupt record and the node's handler panics. The node restarts with a fresh state
// (an empty cache) after a backoff that doubles while crashes come close
// together (30 ms, 60 ms, 120 ms...), and gives up if it crashes more
// than three times in a second. The request that crashed gets the panic
// as its error; requests queued during the backoff run after it, or miss
// their deadline at the deadline; nothing is lost.
//
//	go run ./examples/supervisor
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/vclock"
)

var start = time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)

// Limits of the node's supervision.
const (
	maxRestarts = 3
	window      = time.Second
	requests    = 30
)

// timeline is what happened, in order, with virtual instants.
type timeline struct {
	mu    sync.Mutex
	lines []string
	// restarts are the instants the node restarted at.
	restarts []time.Time
}

func (t *timeline) add(at time.Time, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf("%6.3fs  ", at.Sub(start).Seconds())+fmt.Sprintf(format, args...))
}

// node is the data service's state: a cache it fills from its store. A
// restart gives it a fresh one.
type node struct {
	tl          *timeline
	incarnation int
	cache       map[int]string
}

// Started runs on the node before any request: at spawn, and after
// each restart.
func (n *node) Started(p *crisp.Proc) {
	if n.incarnation > 1 {
		n.tl.mu.Lock()
		n.tl.restarts = append(n.tl.restarts, p.Now())
		n.tl.mu.Unlock()
	}
	n.tl.add(p.Now(), "node #%d started, cache empty", n.incarnation)
}

// get serves request i for key k.
func (n *node) get(i, k int) (string, error) {
	if i%7 == 3 || i == 18 {
		panic(fmt.Sprintf("corrupt record %d", k))
	}
	v, ok := n.cache[k]
	if !ok {
		v = fmt.Sprintf("value-%d", k)
		n.cache[k] = v
		return v + " (loaded)", nil
	}
	return v + " (cached)", nil
}

// client sends the requests and notes their outcomes.
type client struct{}

// Result is what the run saw.
type Result struct {
	Answered, Crashed, Missed, Other int
	Restarts                         []time.Time
	Escalated                        bool
}

func run(out io.Writer) (Result, error) {
	clock := vclock.New(start)
	var escalated bool
	sys := crisp.NewSystem(crisp.WithClock(clock), crisp.WithEscalation(func(*crisp.EscalationError) { escalated = true }))
	defer sys.Shutdown(context.Background())

	tl := &timeline{}
	made := 0
	fresh := func() *node {
		made++
		return &node{tl: tl, incarnation: made, cache: map[int]string{}}
	}
	svc := crisp.Spawn(sys, fresh(), crisp.WithName("data-node"),
		crisp.Restart(fresh),
		crisp.Backoff(30*time.Millisecond, time.Second),
		crisp.RestartLimit(maxRestarts, window))
	cl := crisp.Spawn(sys, &client{}, crisp.WithName("client"))

	var res Result
	var mu sync.Mutex
	for i := range requests {
		clock.At(start.Add(time.Duration(i)*100*time.Millisecond+37*time.Millisecond), func() {
			crisp.Tell(cl, func(p *crisp.Proc, _ *client) {
				k := i % 5
				f := crisp.Call(svc, func(_ *crisp.Proc, n *node) (string, error) { return n.get(i, k) },
					crisp.Within(15*time.Millisecond))
				v, err := crisp.Await(p, f)
				var pe *crisp.PanicError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					res.Answered++
					tl.add(p.Now(), "request %2d key %d: %s", i, k, v)
				case errors.As(err, &pe):
					res.Crashed++
					tl.add(p.Now(), "request %2d key %d: node crashed: %v", i, k, pe.Value)
				case errors.Is(err, deadline.ErrMissed):
					res.Missed++
					tl.add(p.Now(), "request %2d key %d: missed its deadline while the node restarted", i, k)
				default:
					res.Other++
					tl.add(p.Now(), "request %2d key %d: %v", i, k, err)
				}
			})
		})
	}
	if err := clock.Run(context.Background(), sys.WaitIdle); err != nil {
		return res, err
	}
	for _, l := range tl.lines {
		fmt.Fprintln(out, l)
	}
	res.Restarts = tl.restarts
	res.Escalated = escalated
	fmt.Fprintf(out, "every request ended: %d answered, %d crashed, %d missed, %d other; %d restarts\n",
		res.Answered, res.Crashed, res.Missed, res.Other, len(res.Restarts))
	return res, nil
}

func main() {
	if _, err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(1)
	}
}
