package replay

import (
	"errors"
	"math"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
)

// controller is the state of the Controller's actor. One actor handles
// every job. A job's handler never blocks: each wait is a heap
// continuation (crisp.Then) that the actor runs when the awaited future
// resolves, so thousands of jobs are in hand at once, one step of one of
// them running at any instant, and no goroutine waits for any of them.
type controller struct {
	actor    *crisp.Actor[*controller]
	strategy Strategy
	nodes    []*crisp.Actor[*node]
	states   []*node
	retries  int
	poll     time.Duration
	alarms   alarms
	turns    *sequencer
	observe  func(Answer)
	literal  time.Time // tests: poll with every check, up to then (see pollLiterally)

	// inFlight counts, per node, the jobs sent to it whose end the
	// Controller has not seen yet: all it knows of the nodes' load.
	inFlight []int
}

// alarms sets timers: at instant t, call f. The replay's virtual clock
// is one.
type alarms interface {
	At(t time.Time, f func()) (stop func() bool)
}

// step is what the continuations of a job's handler return: they run
// detached (the handler is a Tell), so nobody reads their result.
type step = crisp.Next[*controller, struct{}]

// handle is the Controller's handler for a job that a customer
// submits.
func (c *controller) handle(p *crisp.Proc, j *job) {
	if c.strategy == Polling {
		if !c.literal.IsZero() {
			c.pollLiterally(p, j)
			return
		}
		c.polling(p, j)
		return
	}
	c.attempt(p, j, attempt{node: j.node})
}

// send sends job j to node n; a zero start deadline sends it without.
func (c *controller) send(j *job, n int, start time.Duration) *future.Future[result] {
	st := c.states[n]
	epoch := st.epoch.Load()
	run := func(p *crisp.Proc, s *node) (result, error) { return s.run(p, j, epoch) }
	if start > 0 {
		return crisp.Call(c.nodes[n], run, crisp.Within(start), crisp.Tag(j), crisp.Priority(j.priority))
	}
	return crisp.Call(c.nodes[n], run, crisp.Tag(j), crisp.Priority(j.priority))
}

// tell sends the customer an answer about job j.
func (c *controller) tell(j *job, k Kind, first, final bool) {
	a, observe := answer{j: j, kind: k, first: first, final: final}, c.observe
	crisp.Tell(j.cust.actor, func(p *crisp.Proc, s *customer) { s.hear(p, a, observe) })
}

// alarm returns a future that resolves at instant t.
func (c *controller) alarm(t time.Time) *future.Future[struct{}] {
	pr := new(future.Promise[struct{}])
	c.alarms.At(t, func() { pr.Resolve(struct{}{}, nil) })
	return pr.Future()
}

// answerOrTimeout returns a future that resolves when f brings an
// answer (anything but errForgotten, which stands for silence) or at
// instant t, whichever comes first.
func answerOrTimeout(c *controller, f *future.Future[result], t time.Time) *future.Future[struct{}] {
	pr := new(future.Promise[struct{}])
	stop := c.alarms.At(t, func() { pr.Resolve(struct{}{}, nil) })
	heard := func() {
		if answered(f) {
			stop()
			pr.Resolve(struct{}{}, nil)
		}
	}
	if !plumb.OnResolve(f, heard) {
		heard()
	}
	return pr.Future()
}

// answered reports whether the node answered f: it resolved, and not
// with errForgotten.
func answered(f *future.Future[result]) bool {
	if !f.Ready() {
		return false
	}
	_, err := f.Get()
	return !errors.Is(err, errForgotten)
}

// polling is the old Controller (Listing 2 of the paper): it sends the
// job to its node without a deadline and checks its status every poll
// interval, for as long as it takes, answering at the first check that
// finds the job ended. A job that never ends is checked for ever and
// never answered.
//
// A check that finds the job still running changes nothing, so the
// replay does not make those: it waits for the job's future, then until
// the next check, and answers there, at the very instant a loop of
// timed checks would. Checking literally would wake the Controller every
// interval for every job a node has forgotten, until the replay ends:
// some hundred million wake-ups for the default log, with nothing to
// show for them (TestPollingChecksLiterally compares the two).
func (c *controller) polling(p *crisp.Proc, j *job) {
	f := c.send(j, j.node, 0)
	crisp.Then(p, f, func(p *crisp.Proc, c *controller, _ result, err error) step {
		if errors.Is(err, errForgotten) {
			// Lost: every check would find the job still pending, for
			// ever. There is nothing more to do, and nothing to keep.
			return step{}
		}
		check := c.alarm(nextCheck(j.submitted, p.Now(), c.poll))
		return crisp.Then(p, check, func(*crisp.Proc, *controller, struct{}, error) step {
			c.tell(j, kindOf(err), true, true)
			return step{}
		})
	})
}

// pollLiterally is polling made of every check, each a timed wait for
// the next one followed by a look at the job: what polling stands for.
// Tests compare the two; this one costs a wake-up per job and interval,
// and stops checking at c.literal, since a forgotten job never ends.
// A check at the very instant the job ends sees it ended, as in polling:
// the look waits for the instant's other work.
func (c *controller) pollLiterally(p *crisp.Proc, j *job) {
	f := c.send(j, j.node, 0)
	at, n := j.submitted, 0
	var check func(p *crisp.Proc, c *controller, _ struct{}, _ error) step
	check = func(p *crisp.Proc, c *controller, _ struct{}, _ error) step {
		return crisp.Then(p, c.turns.next(turnKey{j.seq, n, phaseCheck}), func(p *crisp.Proc, c *controller, _ struct{}, _ error) step {
			if answered(f) {
				_, err := f.Get()
				c.tell(j, kindOf(err), true, true)
				return step{}
			}
			if at, n = at.Add(c.poll), n+1; at.After(c.literal) {
				return step{}
			}
			return crisp.Then(p, c.alarm(at), check)
		})
	}
	at = at.Add(c.poll)
	crisp.Then(p, c.alarm(at), check)
}

// nextCheck returns the first status check at or after now of a job
// submitted at from and checked every d from then on.
// Its arithmetic saturates: a check that would lie more than about 292
// years after from (beyond time.Duration) is at the latest instant the
// replay's clock reaches, which the caller clamps to.
func nextCheck(from, now time.Time, d time.Duration) time.Time {
	w := now.Sub(from) // saturates
	n := w / d
	if n*d < w {
		n++
	}
	n = max(n, 1)
	if n > math.MaxInt64/d {
		return from.Add(math.MaxInt64)
	}
	return from.Add(n * d)
}

// addSat returns a+b for non-negative a and b, saturating at the
// largest time.Duration (about 292 years) instead of wrapping to a
// negative one.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// kindOf maps a node's answer to what the customer is told.
func kindOf(err error) Kind {
	switch {
	case err == nil:
		return Completed
	case errors.Is(err, deadline.ErrMissed):
		return Missed
	}
	return Failed
}

// attempt is where a job stands with the Controller with deadlines.
type attempt struct {
	n     int   // attempts before this one
	node  int   // where this one goes
	tried []int // the nodes of earlier attempts
}

// attempt is the Controller with deadlines (Listing 3 of the paper).
// The job must start within the customer's start deadline. If it does
// not, the future says so at the deadline, even while the node is busy:
// the customer is told and the job goes to another node, at most
// c.retries times. A job that started is waited for until its start
// deadline plus the result timeout (the latest start, plus the longest
// the customer will wait for a result); the customer is then told its
// state is unknown. So every job is answered, at the latest (1+retries)
// start deadlines plus the result timeout after its submission.
func (c *controller) attempt(p *crisp.Proc, j *job, a attempt) {
	f := c.send(j, a.node, j.startDeadline)
	c.inFlight[a.node]++
	waited := answerOrTimeout(c, f, p.Now().Add(addSat(j.startDeadline, j.resultTimeout)))
	crisp.Then(p, waited, func(p *crisp.Proc, c *controller, _ struct{}, _ error) step {
		if answered(f) {
			c.ended(p, j, a, f)
			return step{}
		}
		// Timed out. A result due at this very instant may still be on
		// its way from a node: decide once the instant's other work is
		// done.
		return crisp.Then(p, c.turns.next(turnKey{j.seq, a.n, phaseTimeout}), func(p *crisp.Proc, c *controller, _ struct{}, _ error) step {
			if answered(f) {
				c.ended(p, j, a, f)
			} else {
				c.inFlight[a.node]--
				c.tell(j, Unknown, a.n == 0, true)
			}
			return step{}
		})
	})
}

// ended handles the answer of attempt a: tell the customer, and retry
// after a miss if the agreement allows.
func (c *controller) ended(p *crisp.Proc, j *job, a attempt, f *future.Future[result]) {
	c.inFlight[a.node]--
	_, err := f.Get()
	if !errors.Is(err, deadline.ErrMissed) || a.n == c.retries {
		c.tell(j, kindOf(err), a.n == 0, true)
		return
	}
	c.tell(j, Missed, a.n == 0, false)
	// Which node is least loaded depends on everything that happens at
	// this instant: choose in turn.
	crisp.Then(p, c.turns.next(turnKey{j.seq, a.n, phaseRetry}), func(p *crisp.Proc, c *controller, _ struct{}, _ error) step {
		a.tried = append(a.tried, a.node)
		a.node = c.another(a.node, a.tried)
		a.n++
		c.attempt(p, j, a)
		return step{}
	})
}

// another chooses the node for a retry: of the nodes the job has not
// tried, the one with the fewest jobs in flight, the first after from
// (in node order, wrapping) among equals. Once every node has been
// tried, any but from.
func (c *controller) another(from int, tried []int) int {
	best := -1
	for pass := 0; pass < 2 && best < 0; pass++ {
		for k := 1; k <= len(c.nodes); k++ {
			i := (from + k) % len(c.nodes)
			if (i == from && len(c.nodes) > 1) || (pass == 0 && contains(tried, i)) {
				continue
			}
			if best < 0 || c.inFlight[i] < c.inFlight[best] {
				best = i
			}
		}
	}
	return best
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
