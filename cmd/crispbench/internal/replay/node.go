package replay

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

// job is one job of the log, as the replay uses it. It is made by the
// feeder and never changed afterwards, so any actor may read it.
type job struct {
	seq       uint64 // position in the log, from 1: the order of turns
	id        string
	cust      *customer
	submitted time.Time
	duration  time.Duration
	outcome   joblog.Outcome
	node      int // the node the log sends it to
	priority  int // the log's priority class
	first     bool

	startDeadline, resultTimeout time.Duration
}

// errForgotten is what a node answers for a job it lost: one that hung,
// or one that waited in its queue when it restarted. It stands for
// silence. In the case study nobody is told of a lost job; its answer
// never comes. The Controller treats this error exactly so: it never
// tells the customer anything on its account and acts as if the answer
// were still to come (polling checks for ever; the deadline Controller
// waits for its timeout). It never reaches a customer.
//
// The replay could leave the job's future unresolved instead, and did:
// but then the Controller's continuation on it, the job, and everything
// they hold stay in memory until the replay ends, some 3 KB for each of
// the 190,000 jobs polling loses in a million (issue 14, item 8). An
// answer that the Controller ignores lets them go, and changes nothing
// anyone sees.
var errForgotten = errors.New("the job was lost: its node hung or restarted")

// errBadData is the error of a job that fails: the log's "failed".
var errBadData = errors.New("the job failed: bad data or wrong parameters")

// result is what a node answers for a job that ends. The replay needs
// only the error; the type stands for the data a real job would return.
type result struct{}

// node is the state of a data-service node's actor.
type node struct {
	// epoch counts the node's restarts. A job remembers the epoch it
	// was sent in; the node has forgotten it if it restarted since. The
	// node's handlers write it and senders read it, hence atomic.
	epoch atomic.Uint64
}

// run is a job on its node: the handler of the Controller's Call. epoch
// is the node's epoch when the job was sent.
func (n *node) run(p *crisp.Proc, j *job, epoch uint64) (result, error) {
	if n.epoch.Load() != epoch {
		// The node restarted while the job waited in its queue: the
		// job is lost, and nobody is told.
		return result{}, errForgotten
	}
	p.Sleep(j.duration) // the node works on the job, and on nothing else
	switch j.outcome {
	case joblog.Completed:
		return result{}, nil
	case joblog.Failed:
		return result{}, errBadData
	}
	// Hung: the job held the node until an operator cleared it, which
	// restarts the node. Neither the job nor those waiting behind it
	// will ever answer.
	n.epoch.Add(1)
	return result{}, errForgotten
}

// nodePolicy returns the crisp policy of the nodes' actors.
func nodePolicy(p Policy) policy.Policy {
	switch p {
	case FIFO:
		return policy.FIFO()
	case Priority:
		return policy.ByPriority()
	case CustomerFirst:
		return customerFirst
	}
	return policy.EDF()
}

// customerFirst is the paper's custom scheduler of the data service
// (§4, Listing 5): the jobs of some customers go first whatever their
// deadlines; among equals, earliest deadline first. Every job is
// tagged with its *job.
var customerFirst = policy.Func(func(a, b *policy.Item) int {
	fa, fb := a.Tag.(*job).first, b.Tag.(*job).first
	switch {
	case fa && !fb:
		return -1
	case fb && !fa:
		return 1
	}
	return deadline.Compare(a.Deadline, b.Deadline)
})
