// Command controller is the case study of "The Future of a Missed
// Deadline" (§2.1, §4) in a few crisp actors on virtual time.
//
// A Controller sends customers' jobs to data-service nodes. Each job
// must start within its customer's deadline; the Controller learns of a
// miss at the deadline, even while the node is busy, tells the customer
// and tries another node. It waits for a started job's result for a
// bounded time, then tells the customer the job's state is unknown. So
// every request ends, although node-2 hangs on its first job. The nodes
// serve customer A first, whatever the deadlines.
//
//	go run ./examples/controller
//
// With --http ADDR it then serves the live page of its actors (package
// observe) at http://ADDR/debug/crisp until interrupted:
//
//	go run ./examples/controller --http localhost:6060
//
// crispbench replay runs the same Controller over two months of jobs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/observe"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/vclock"
)

// job is a customer's request.
type job struct {
	id, customer string
	at           time.Duration // submitted, from the start of the day
	node         int           // where the Controller sends it first
	work         time.Duration // how long it keeps its node; 0: it hangs
	start        time.Duration // agreement: it must start within this
	result       time.Duration // agreement: then its result within this
}

var jobs = []job{
	{"B-1", "B", 0, 0, 20 * time.Minute, 10 * time.Minute, 30 * time.Minute},
	{"C-1", "C", 0, 1, 0, 10 * time.Minute, 30 * time.Minute}, // hangs node-2
	{"C-2", "C", 2 * time.Minute, 0, 5 * time.Minute, 30 * time.Minute, 30 * time.Minute},
	{"A-1", "A", 3 * time.Minute, 0, 5 * time.Minute, time.Hour, 30 * time.Minute},
	{"B-2", "B", 5 * time.Minute, 1, 5 * time.Minute, 14 * time.Minute, 30 * time.Minute},
}

var day = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

// stamp is a virtual instant as hours:minutes since 9:00.
func stamp(t time.Time) string {
	d := t.Sub(day)
	return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60)
}

// node is a data-service node: it runs one job at a time.
type node struct{ name string }

// process is job j as a node's handler. A hung job holds its node and
// never answers.
func process(j job) func(*crisp.Proc, *node) crisp.Next[*node, string] {
	return func(p *crisp.Proc, _ *node) crisp.Next[*node, string] {
		started := stamp(p.Now())
		if j.work == 0 {
			p.Sleep(24 * time.Hour)
			return crisp.Then(p, new(future.Future[string]), func(*crisp.Proc, *node, string, error) crisp.Next[*node, string] {
				return crisp.Next[*node, string]{} // never: the future is never resolved
			})
		}
		p.Sleep(j.work)
		return crisp.Return[*node]("started "+started, nil)
	}
}

// customerAFirst is the nodes' policy (the paper's Listing 5): customer
// A's jobs first, whatever their deadlines; then earliest deadline first.
var customerAFirst = policy.Func(func(a, b *policy.Item) int {
	switch aA, bA := a.Tag == "A", b.Tag == "A"; {
	case aA && !bA:
		return -1
	case bA && !aA:
		return 1
	}
	return deadline.Compare(a.Deadline, b.Deadline)
})

// controller sends jobs to nodes and answers the customers. Its handlers
// never block: each wait is a continuation (crisp.Then) that runs on the
// Controller when the awaited future resolves.
type controller struct {
	clock    *vclock.Clock
	nodes    []*crisp.Actor[*node]
	out      io.Writer
	answered int
}

func (c *controller) say(p *crisp.Proc, format string, args ...any) {
	fmt.Fprintf(c.out, "%s  %s\n", stamp(p.Now()), fmt.Sprintf(format, args...))
}

// after returns a future that the clock resolves d from now.
func (c *controller) after(d time.Duration) *future.Future[struct{}] {
	timeout := new(future.Promise[struct{}])
	c.clock.At(c.clock.Now().Add(d), func() { timeout.Resolve(struct{}{}, nil) })
	return timeout.Future()
}

// send sends job j to node n, at most 3 times in all.
func (c *controller) send(p *crisp.Proc, j job, n, tries int) {
	name := c.nodes[n].Name()
	c.say(p, "%s sent to %s: must start by %s", j.id, name, stamp(p.Now().Add(j.start)))
	f := crisp.CallNext(c.nodes[n], process(j), crisp.Within(j.start), crisp.Tag(j.customer))
	ended := false
	crisp.Then(p, f, func(p *crisp.Proc, c *controller, out string, err error) done {
		if ended {
			return done{}
		}
		ended = true
		switch {
		case errors.Is(err, deadline.ErrMissed) && tries < 3:
			c.say(p, "%s missed its start deadline on %s: customer %s told, trying another node", j.id, name, j.customer)
			c.send(p, j, (n+1)%len(c.nodes), tries+1)
			return done{}
		case err != nil:
			c.say(p, "%s on %s: %v; customer %s told", j.id, name, err, j.customer)
		default:
			c.say(p, "%s completed on %s (%s); customer %s told", j.id, name, out, j.customer)
		}
		c.answered++
		return done{}
	})
	crisp.Then(p, c.after(j.start+j.result), func(p *crisp.Proc, c *controller, _ struct{}, _ error) done {
		if !ended {
			ended = true
			c.say(p, "%s: no result from %s in time: customer %s told its state is unknown", j.id, name, j.customer)
			c.answered++
		}
		return done{}
	})
}

// done is what the controller's continuations return: they run detached
// (sent from a Tell), so nobody reads their result.
type done = crisp.Next[*controller, struct{}]

func run(out io.Writer, opts ...crisp.Option) error {
	clock := vclock.New(day)
	sys := crisp.NewSystem(append([]crisp.Option{crisp.WithClock(clock)}, opts...)...)
	defer sys.Shutdown(context.Background())

	ctl := &controller{clock: clock, out: out}
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		ctl.nodes = append(ctl.nodes, crisp.Spawn(sys, &node{name}, crisp.WithName(name), crisp.WithPolicy(customerAFirst)))
	}
	ctlActor := crisp.Spawn(sys, ctl, crisp.WithName("controller"))
	for _, j := range jobs {
		clock.At(day.Add(j.at), func() {
			crisp.Tell(ctlActor, func(p *crisp.Proc, c *controller) { c.send(p, j, j.node, 1) })
		})
	}
	// Run the day's morning; node-2 is still stuck on C-1 at its end.
	if err := clock.RunUntil(context.Background(), sys.WaitIdle, day.Add(3*time.Hour)); err != nil {
		return err
	}
	answered, _ := crisp.Call(ctlActor, func(_ *crisp.Proc, c *controller) (int, error) { return c.answered, nil }).Get()
	fmt.Fprintf(out, "every request ended: %d of %d answered\n", answered, len(jobs))
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// runMain runs the day and, with --http, serves the page of its actors
// until ctx ends.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("http", "", "after the run, serve the live page of its actors at `ADDR`/debug/crisp (e.g. localhost:6060)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" {
		return run(stdout)
	}
	stats := observe.NewStats()
	if err := run(stdout, crisp.WithObserver(stats)); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/crisp", observe.Handler(stats))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stderr, "serving http://%s/debug/crisp; interrupt to stop\n", ln.Addr())
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
