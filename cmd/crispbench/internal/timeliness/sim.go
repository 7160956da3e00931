package timeliness

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/vclock"
)

// Variant is how a trace's messages are scheduled: a policy, and whether
// senders attach the handler's cost (crisp.Cost).
type Variant int

// The variants.
const (
	EDF      Variant = iota // policy.EDF, start deadline = arrival + relative deadline
	FIFO                    // policy.FIFO, same deadlines
	Priority                // policy.ByPriority with deadline-monotonic priorities, same deadlines
	// EDFCost is policy.EDF with crisp.Cost(cost) on every message: the
	// message must start by arrival + relative deadline − cost, so that
	// it finishes in time, or it is dropped.
	EDFCost
)

// Variants lists the variants in the order reports show them.
var Variants = []Variant{EDF, FIFO, Priority, EDFCost}

// MarshalText writes the variant's name, for JSON.
func (v Variant) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a variant's name.
func (v *Variant) UnmarshalText(b []byte) error { return unmarshalName(v, b, Variants) }

// String returns the variant's name, as reports show it.
func (v Variant) String() string {
	switch v {
	case EDF:
		return "EDF"
	case FIFO:
		return "FIFO"
	case Priority:
		return "Priority"
	case EDFCost:
		return "EDF+Cost"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

func (v Variant) policy() policy.Policy {
	switch v {
	case FIFO:
		return policy.FIFO()
	case Priority:
		return policy.ByPriority()
	}
	return policy.EDF()
}

// Outcome is what happened to one job of a trace.
type Outcome struct {
	Started    bool          // false: it missed its start deadline and never ran
	Start, End time.Duration // when its handler began and returned, from the trace's start
}

// epoch is the virtual instant at which every simulated trace starts.
var epoch = time.Date(2013, 2, 1, 0, 0, 0, 0, time.UTC)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Simulate runs jobs on a crisp actor served by workers workers (a
// single actor for 1, crisp.SpawnGroup otherwise) on a virtual clock,
// and reports each job's outcome. Each job is sent with crisp.Tell at
// its arrival instant, with crisp.By(arrival + relative deadline) and,
// depending on v, crisp.Priority or crisp.Cost; its handler holds its
// worker for its cost with Proc.Sleep. The run is deterministic.
func Simulate(ctx context.Context, jobs []Job, v Variant, workers int) ([]Outcome, error) {
	vc := vclock.New(epoch)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(discard))
	type worker struct{}
	states := make([]*worker, max(workers, 1))
	var a crisp.Ref[*worker]
	if len(states) == 1 {
		a = crisp.Spawn(sys, states[0], crisp.WithPolicy(v.policy()))
	} else {
		a = crisp.SpawnGroup(sys, states, crisp.WithPolicy(v.policy()))
	}
	out := make([]Outcome, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		vc.At(epoch.Add(j.Arrival), func() {
			opts := make([]crisp.SendOption, 1, 2)
			opts[0] = crisp.By(epoch.Add(j.Arrival + j.Deadline))
			switch v {
			case Priority:
				opts = append(opts, crisp.Priority(j.Priority))
			case EDFCost:
				opts = append(opts, crisp.Cost(j.Cost))
			}
			crisp.Tell(a, func(p *crisp.Proc, _ *worker) {
				o := &out[i]
				o.Started, o.Start = true, p.Now().Sub(epoch)
				p.Sleep(j.Cost)
				o.End = p.Now().Sub(epoch)
			}, opts...)
		})
	}
	err := vc.Run(ctx, sys.WaitIdle)
	// Shutdown wakes sleeping handlers, so it ends promptly even when
	// ctx has ended and Run stopped halfway.
	if serr := sys.Shutdown(context.WithoutCancel(ctx)); err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueuedAtOnce queues one message per deadline (relative to the instant
// they are sent) on a single actor, all at once, each costing cost, and
// reports how many missed their deadline. The messages are queued while
// a first handler holds the actor, so that the policy, not the order of
// sending, decides which runs first. Virtual time; deterministic.
func QueuedAtOnce(ctx context.Context, deadlines []time.Duration, cost time.Duration, v Variant) (missed int, err error) {
	vc := vclock.New(epoch)
	sys := crisp.NewSystem(crisp.WithClock(vc), crisp.WithLogger(discard))
	type worker struct{ ran int }
	a := crisp.Spawn(sys, &worker{}, crisp.WithPolicy(v.policy()))
	vc.At(epoch, func() {
		holding, release := make(chan struct{}), make(chan struct{})
		crisp.Tell(a, func(*crisp.Proc, *worker) {
			close(holding)
			<-release // until every message below is queued
		})
		<-holding
		for _, d := range deadlines {
			crisp.Tell(a, func(p *crisp.Proc, w *worker) {
				w.ran++
				p.Sleep(cost)
			}, crisp.By(epoch.Add(d)))
		}
		close(release)
	})
	err = vc.Run(ctx, sys.WaitIdle)
	var ran int
	if err == nil {
		ran, err = crisp.Call(a, func(_ *crisp.Proc, w *worker) (int, error) { return w.ran, nil }).Get()
	}
	if serr := sys.Shutdown(context.WithoutCancel(ctx)); err == nil {
		err = serr
	}
	return len(deadlines) - ran, err
}
