// Package replay replays a job log through the Controller of the
// paper's case study ("The Future of a Missed Deadline", §2.1 and §4),
// built from real crisp actors on a virtual clock, once for each
// strategy: the old Controller that polls, and the Controller with
// deadlines. It reports, per customer and in total, what became of the
// jobs and how long customers waited for a first answer.
//
// # The model
//
// Everything runs as crisp actors on a vclock.Clock: one Controller,
// the data-service nodes, and one actor per customer. A customer
// submits each of its jobs to the Controller at the job's logged time;
// the Controller sends it to a node with crisp.Call and tells the
// customer what became of it. A node runs one job at a time, never
// preempted, in the order of its policy; a job keeps its node busy for
// its logged duration (Proc.Sleep). A failed job fails, for bad data,
// at the end of its duration. A hung job never answers: it holds its
// node for its logged duration, the time until an operator cleared the
// node, and clearing restarts the node, which forgets every job waiting
// in its queue. Nobody is told of a forgotten job: its future resolves
// only with an internal error that stands for silence, which the
// Controller never passes on (so the job need not be kept). Both
// strategies replay the same jobs on the same nodes; only the
// Controller differs.
//
//   - Polling (the old Controller) sends each job without a deadline to
//     the node the log names and checks its status every PollInterval,
//     forever. It answers the customer at the first check after the job
//     ends. A job that hangs, or that the node forgets, is never
//     answered.
//   - Deadline (crisp) sends each job with the customer's start
//     deadline. A miss comes back through the future at the deadline,
//     even while the node is busy: the Controller tells the customer and
//     sends the job to another node, at most Retries times. It waits
//     for a started job's result until the start deadline plus the
//     result timeout, and then tells the customer the job's state is
//     unknown. Every job is answered within its agreement:
//     (1+Retries) start deadlines plus the result timeout.
//
// docs/replay.md in the repository gives the reasons for each choice
// and every default.
//
// # Determinism
//
// The same log and Config give the same Report, whatever the machine
// and the scheduling of goroutines. The clock fires one timer at a time
// and waits for the system to go idle in between; where several actors
// act at the same virtual instant (two nodes finishing together, a
// deadline missed as another job ends), everything whose outcome
// depends on their order (which node a retry goes to, the order in
// which jobs reach a node, whether a result beat its timeout) waits for
// a turn, given in a fixed order once the instant's other work is done.
//
// # Costs
//
// The log is streamed: it is read as the replay advances, a few hundred
// jobs ahead, and a job is garbage once it is answered or lost, so
// memory grows with the customers, nodes and jobs in flight, not with
// the log (under 40 MiB of RSS for a million jobs). The quantiles of
// the time to first answer are exact: each customer counts its jobs by
// distinct wait, and the waits that can occur are bounded by the
// agreements and the log's resolution, not by the number of jobs.
// The Controller waits with heap continuations (crisp.Then), so the
// jobs polling waits for cost no goroutine. The default log (24,784
// jobs) replays under both strategies in about a second on a 2-core
// machine; BenchmarkReplay measures it.
package replay

import (
	"errors"
	"fmt"
	"time"
)

// Strategy is how the Controller handles a job.
type Strategy uint8

// The strategies.
const (
	Polling  Strategy = iota + 1 // no deadline; status checks, forever
	Deadline                     // start deadline, retries, result timeout
)

// String returns "polling" or "deadline".
func (s Strategy) String() string {
	switch s {
	case Polling:
		return "polling"
	case Deadline:
		return "deadline"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// Policy is the order in which a node takes the jobs waiting for it.
type Policy uint8

// The nodes' policies.
const (
	EDF           Policy = iota + 1 // earliest start deadline first (crisp's default); arrival order without deadlines
	FIFO                            // arrival order
	Priority                        // the log's priority class first, then earliest deadline
	CustomerFirst                   // the paper's scheduler: Config.First's customers first, whatever the deadlines, then earliest deadline
)

var policyNames = [...]string{EDF: "edf", FIFO: "fifo", Priority: "priority", CustomerFirst: "customer"}

// String returns the policy's name on the command line: "edf", "fifo",
// "priority" or "customer".
func (p Policy) String() string {
	if p >= EDF && p <= CustomerFirst {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// ParsePolicy returns the policy named s.
func ParsePolicy(s string) (Policy, error) {
	for p := EDF; p <= CustomerFirst; p++ {
		if policyNames[p] == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown policy %q (edf, fifo, priority or customer)", s)
}

// Config says how to replay a log. Start from Defaults and change what
// you need.
type Config struct {
	// Strategies to replay, in this order; each gets its own actors
	// and clock, fed the same jobs.
	Strategies []Strategy

	// Nodes is how many data-service nodes there are. The nodes the
	// log names are mapped onto them in order of first appearance: the
	// k-th distinct name goes to node k mod Nodes. Nodes the log never
	// names serve only retries.
	Nodes int
	// Policy orders each node's waiting jobs.
	Policy Policy
	// First lists the customers that CustomerFirst puts first. When it
	// is empty, the customers whose jobs carry a priority class above 0
	// in the log are first.
	First []string

	// StartDeadline and ResultTimeout, if positive, replace every job's
	// own terms. Otherwise a job has the terms its log row gives, and
	// DefaultStartDeadline and DefaultResultTimeout if it gives none.
	StartDeadline, ResultTimeout               time.Duration
	DefaultStartDeadline, DefaultResultTimeout time.Duration
	// Retries bounds how often the deadline Controller sends a job that
	// missed its start deadline to another node.
	Retries int
	// PollInterval is how often the polling Controller checks a job's
	// status.
	PollInterval time.Duration

	// SkipBad passes over malformed and out-of-order rows of the log
	// (counted in the Report) instead of stopping at the first.
	SkipBad bool
	// Name names the log in the Report.
	Name string

	// Progress, if set, is called now and then with how many bytes of
	// the log have been read, from a goroutine of Run's.
	Progress func(read int64)
	// Observe, if set, is told of every answer a customer receives, on
	// the customer's actor: calls for different customers may come at
	// once. Tests use it.
	Observe func(Strategy, Answer)

	literalPolling time.Time // tests: poll check by check, up to then
}

// Defaults returns the default configuration: both strategies, 8 nodes
// taking jobs earliest deadline first, the log's own agreements (1 h to
// start and 2 h for the result where it gives none), 2 retries, and a
// status check every minute. docs/replay.md gives the reasons.
func Defaults() Config {
	return Config{
		Strategies:           []Strategy{Polling, Deadline},
		Nodes:                8,
		Policy:               EDF,
		DefaultStartDeadline: time.Hour,
		DefaultResultTimeout: 2 * time.Hour,
		Retries:              2,
		PollInterval:         time.Minute,
	}
}

// Validate reports the first setting out of range.
func (c *Config) Validate() error {
	if len(c.Strategies) == 0 {
		return errors.New("no strategy to replay")
	}
	for i, s := range c.Strategies {
		if s != Polling && s != Deadline {
			return fmt.Errorf("unknown strategy %v", s)
		}
		for _, t := range c.Strategies[:i] {
			if s == t {
				return fmt.Errorf("strategy %v given twice", s)
			}
		}
	}
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("nodes must be at least 1, not %d", c.Nodes)
	case c.Policy < EDF || c.Policy > CustomerFirst:
		return fmt.Errorf("unknown policy %v", c.Policy)
	case c.StartDeadline < 0:
		return fmt.Errorf("start deadline must not be negative, not %v", c.StartDeadline)
	case c.ResultTimeout < 0:
		return fmt.Errorf("result timeout must not be negative, not %v", c.ResultTimeout)
	case c.DefaultStartDeadline <= 0:
		return fmt.Errorf("default start deadline must be positive, not %v", c.DefaultStartDeadline)
	case c.DefaultResultTimeout <= 0:
		return fmt.Errorf("default result timeout must be positive, not %v", c.DefaultResultTimeout)
	case c.Retries < 0:
		return fmt.Errorf("retries must not be negative, not %d", c.Retries)
	case c.PollInterval <= 0:
		return fmt.Errorf("poll interval must be positive, not %v", c.PollInterval)
	}
	return nil
}

// Kind is what a customer is told about a job.
type Kind uint8

// The kinds of answer.
const (
	Completed Kind = iota + 1 // the job ran and delivered its result
	Failed                    // the job ran and failed for bad data
	Missed                    // the job could not start by its deadline (retried unless final)
	Unknown                   // the job started, but no result came within the result timeout
)

var kindNames = [...]string{Completed: "completed", Failed: "failed", Missed: "missed", Unknown: "unknown"}

func (k Kind) String() string {
	if k >= Completed && k <= Unknown {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Answer is one thing a customer is told about one of its jobs.
type Answer struct {
	Job, Customer string
	Submitted     time.Time // when the customer submitted the job
	At            time.Time // when the customer was told
	Kind          Kind
	// First is set on the first answer about the job, Final on the last:
	// a job that missed its deadline and was sent elsewhere gets a Missed
	// answer that is not final, then another.
	First, Final bool
	// StartDeadline and ResultTimeout are the terms the job was replayed
	// with.
	StartDeadline, ResultTimeout time.Duration
}
