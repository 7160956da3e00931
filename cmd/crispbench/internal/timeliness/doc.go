// Package timeliness measures how well crisp meets deadlines and how
// promptly it reports the ones it misses: the work behind `crispbench
// timeliness`.
//
// It has four sections, each a function that runs its measurements and
// returns a result that renders as markdown tables, as JSON, and as an
// SVG chart:
//
//   - Lag (real clock): the time from a message's deadline to the moment
//     a goroutine blocked in the future's Get returns the miss, against
//     a time.AfterFunc per message, a context.WithDeadline per message
//     and a goroutine blocked on a bare time.Timer (the floor for any
//     Go code woken at a deadline); VirtualLag runs the same scenario
//     on virtual time.
//   - Lateness (virtual time): how long before its deadline each message
//     that runs starts, and how long it waits behind a message that
//     was already running (non-preemptive blocking), per policy.
//   - Quality (virtual time): miss ratio and useful work of random
//     sporadic workloads against utilisation, per policy.
//   - Overhead (real clock): throughput and allocations with deadlines on
//     and off, and the watchdog's CPU time per second.
//
// The virtual-time sections run crisp systems on package vclock, whose
// handlers spend time with Proc.Sleep: their results depend only on the
// seed. The real-clock sections are measurements of the machine they run
// on and vary from run to run.
//
// Every function takes a context and returns early with its error when
// it ends. The functions start and end their own crisp systems and
// goroutines; none is left running when they return. They are not meant
// to run concurrently with one another: the real-clock sections measure
// the whole process.
package timeliness
