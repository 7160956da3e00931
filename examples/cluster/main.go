// Command cluster is the Controller case study of examples/controller
// across four OS processes: the Controller and three data-service
// nodes, each node a process of its own serving its actor over NATS
// (package remote, with a NATS server embedded in the Controller's
// process). It runs on the real clock, one minute of the story in 25ms.
//
// As in examples/controller, node-2 hangs on its first job, and a job
// queued behind it misses its start deadline and goes to another node.
// Then node-2's process is killed (SIGKILL) mid-run: the Controller
// learns that nobody serves node-2 any more and sends its next job
// elsewhere, and it gives up on the hung job when its bound passes
// (its start deadline plus the 30 minutes the Controller waits for a
// result: the node's allowance). Every request ends.
//
//	go run ./examples/cluster
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/remote"
)

// minute is one minute of the story on the real clock.
const minute = 25 * time.Millisecond

// job is a customer's request.
type job struct {
	id, customer string
	at           int // submitted, in minutes from the start
	node         int // where the Controller sends it first
	work         int // minutes it keeps its node; 0: it hangs
	start        int // agreement: it must start within this many minutes
}

// result is every job's agreement: its result within 30 minutes of its
// start deadline. It is the Controller node's allowance.
const result = 30

var jobs = []job{
	{"B-1", "B", 0, 0, 20, 10},
	{"C-1", "C", 0, 1, 0, 10}, // hangs node-2
	{"C-2", "C", 2, 0, 5, 30},
	{"A-1", "A", 3, 0, 5, 60},
	{"B-2", "B", 5, 1, 5, 14},
	{"A-2", "A", 24, 1, 5, 20}, // node-2 is dead by then
}

// killAt is when node-2's process is killed, in minutes.
const killAt = 22

var nodeNames = []string{"node-1", "node-2", "node-3"}

// Work is the request of a node's endpoint.
type Work struct {
	ID      string
	Minutes int // 0: hang
}

// Started is its response: when the node started the job.
type Started struct{ At time.Time }

func endpoint(node string) remote.Endpoint[Work, Started] {
	return remote.NewEndpoint[Work, Started]("datasvc." + node)
}

// Env tells a re-run of this binary to be the named node, joining the
// NATS server at URL.
const (
	envNode = "CRISP_CLUSTER_NODE"
	envURL  = "CRISP_CLUSTER_URL"
)

func main() {
	var err error
	if name := os.Getenv(envNode); name != "" {
		err = runNode(name, os.Getenv(envURL), os.Stdin, os.Stdout)
	} else {
		err = run(os.Stdout, os.Args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
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

type node struct{}

// runNode is a data-service node process: it serves its endpoint until
// its stdin closes.
func runNode(name, url string, stdin io.Reader, stdout io.Writer) error {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	n, err := remote.Start(remote.URL(url), remote.WithClock(sys.Clock()))
	if err != nil {
		return err
	}
	defer n.Close(context.Background())
	a := crisp.Spawn(sys, &node{}, crisp.WithName(name), crisp.WithPolicy(customerAFirst))
	_, err = remote.Serve(n, endpoint(name), a, func(p *crisp.Proc, _ *node, w Work) (Started, error) {
		at := p.Now()
		if w.Minutes == 0 {
			p.Sleep(24 * time.Hour) // hangs, holding the node
		}
		p.Sleep(time.Duration(w.Minutes) * minute)
		return Started{at}, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}

// controller sends jobs to nodes and answers the customers. Its
// handlers never block: each wait is a continuation (crisp.Then) on a
// remote future, run on the Controller when the future resolves.
type controller struct {
	hub      *remote.Node
	begin    time.Time
	out      io.Writer
	answered int
	all      chan struct{} // closed when every job is answered
}

type done = crisp.Next[*controller, struct{}]

// stamp is an instant as hours:minutes of the story.
func (c *controller) stamp(t time.Time) string {
	m := int((t.Sub(c.begin) + minute/2) / minute)
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

func (c *controller) say(p *crisp.Proc, format string, args ...any) {
	fmt.Fprintf(c.out, "%s  %s\n", c.stamp(p.Now()), fmt.Sprintf(format, args...))
}

// send sends job j to node n, at most 3 times in all.
func (c *controller) send(p *crisp.Proc, j job, n, tries int) {
	name := nodeNames[n]
	startBy := p.Now().Add(time.Duration(j.start) * minute)
	c.say(p, "%s sent to %s: must start by %s", j.id, name, c.stamp(startBy))
	f := remote.Call(c.hub, endpoint(name), Work{j.id, j.work}, remote.By(startBy), remote.Tag(j.customer))
	crisp.Then(p, f, func(p *crisp.Proc, c *controller, s Started, err error) done {
		retry := tries < 3
		switch {
		case errors.Is(err, deadline.ErrMissed) && retry:
			c.say(p, "%s missed its start deadline on %s: customer %s told, trying another node", j.id, name, j.customer)
			c.send(p, j, (n+1)%len(nodeNames), tries+1)
			return done{}
		case errors.Is(err, remote.ErrNoResponders) && retry:
			c.say(p, "%s: nobody serves %s: trying another node", j.id, name)
			c.send(p, j, (n+1)%len(nodeNames), tries+1)
			return done{}
		case errors.Is(err, remote.ErrNoAnswer):
			c.say(p, "%s: no result from %s in time: customer %s told its state is unknown", j.id, name, j.customer)
		case err != nil:
			c.say(p, "%s on %s: %v; customer %s told", j.id, name, err, j.customer)
		default:
			c.say(p, "%s completed on %s (started %s); customer %s told", j.id, name, c.stamp(s.At), j.customer)
		}
		c.answered++
		if c.answered == len(jobs) {
			close(c.all)
		}
		return done{}
	})
}

// startNode runs this binary again as a node process.
func startNode(self, name, url string) (*exec.Cmd, io.WriteCloser, error) {
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envNode+"="+name, envURL+"="+url)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, nil, fmt.Errorf("node %s did not start: %q %v", name, line, err)
	}
	return cmd, stdin, nil
}

// run is the Controller's process: it starts the nodes, runs the story
// and reports.
func run(out io.Writer, self string) error {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())
	hub, err := remote.Start(remote.WithClock(sys.Clock()), remote.Allowance(result*minute))
	if err != nil {
		return err
	}
	defer hub.Close(context.Background())

	var (
		cmds   []*exec.Cmd
		stdins []io.WriteCloser
	)
	defer func() { // let the live nodes exit, reap the killed one
		for i, cmd := range cmds {
			_ = stdins[i].Close()
			_ = cmd.Wait()
		}
	}()
	for _, name := range nodeNames {
		cmd, stdin, err := startNode(self, name, hub.URL())
		if err != nil {
			return err
		}
		cmds, stdins = append(cmds, cmd), append(stdins, stdin)
	}

	ctl := &controller{hub: hub, out: out, all: make(chan struct{}), begin: sys.Clock().Now()}
	ctlActor := crisp.Spawn(sys, ctl, crisp.WithName("controller"))
	clk := sys.Clock()
	var timers []interface{ Stop() bool }
	for _, j := range jobs {
		timers = append(timers, clk.AfterFunc(time.Duration(j.at)*minute, func() {
			crisp.Tell(ctlActor, func(p *crisp.Proc, c *controller) { c.send(p, j, j.node, 1) })
		}))
	}
	timers = append(timers, clk.AfterFunc(killAt*minute, func() {
		_ = cmds[1].Process.Kill()
		crisp.Tell(ctlActor, func(p *crisp.Proc, c *controller) { c.say(p, "node-2's process killed (SIGKILL)") })
	}))
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	// Every remote future resolves by its bound, so this ends; the
	// guard only turns a bug into an error instead of a hang.
	select {
	case <-ctl.all:
	case <-time.After(time.Minute): // clock seam: a hang guard in a command, not the story's time
		return errors.New("not every request ended within a minute")
	}
	answered, _ := crisp.Call(ctlActor, func(_ *crisp.Proc, c *controller) (int, error) { return c.answered, nil }).Get()
	fmt.Fprintf(out, "every request ended: %d of %d answered\n", answered, len(jobs))
	return nil
}
