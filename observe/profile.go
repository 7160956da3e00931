package observe

import (
	"context"
	"runtime/pprof"
	"runtime/trace"
	"sync"

	"github.com/crisprt/crisp/crisp"
)

// Profiling returns an observer (crisp.WithObserver) that makes the
// runtime's own tools split their findings by actor:
//
//   - pprof: while a handler runs, its goroutine carries the labels
//     crisp.actor and crisp.message (over any labels of the message's
//     context), so a CPU profile splits by actor and message (go tool
//     pprof -tagfocus crisp.actor=name).
//   - runtime/trace: while a trace is being taken, each message is a
//     task ("crisp.message") from its send to its end, logging its
//     deadline and outcome, and each run of its handler (up to a
//     suspension) a region named actor/message, so go tool trace shows
//     every handler with its deadline.
//
// Both cost time (a labels map per start, a task per message while
// tracing): use them when looking for where time goes. The labels are
// set on the goroutine that runs the handler and taken off when it
// finishes or suspends; a message sent before tracing began gets regions
// but no task.
func Profiling() crisp.Observer { return new(profiling) }

type profiling struct {
	tasks sync.Map // message ID -> *traced, while a trace is taken
}

// traced is a message's task and its open region. The events of one
// message come one after another (each transition happens after the one
// before), so its fields need no lock.
type traced struct {
	ctx    context.Context
	task   *trace.Task
	region *trace.Region
}

func (p *profiling) Observe(e crisp.Event) {
	switch e.Kind {
	case crisp.EventSent:
		if trace.IsEnabled() {
			ctx, task := trace.NewTask(base(e), "crisp.message")
			trace.Log(ctx, "crisp.actor", e.Actor)
			trace.Log(ctx, "crisp.message", e.Message)
			if !e.Deadline.IsZero() {
				trace.Log(ctx, "crisp.deadline", e.Deadline.String())
			}
			p.tasks.Store(e.ID, &traced{ctx: ctx, task: task})
		}
	case crisp.EventStarted, crisp.EventResumed:
		ctx := base(e)
		if t := p.traced(e.ID); t != nil {
			ctx = t.ctx
			t.region = trace.StartRegion(ctx, e.Actor+"/"+e.Message)
		} else if trace.IsEnabled() {
			// Sent before the trace began: a region of its own.
			t := &traced{ctx: ctx, region: trace.StartRegion(ctx, e.Actor+"/"+e.Message)}
			p.tasks.Store(e.ID, t)
		}
		pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("crisp.actor", e.Actor, "crisp.message", e.Message)))
	case crisp.EventSuspended:
		p.endRegion(e.ID)
		pprof.SetGoroutineLabels(context.Background())
	}
	if e.Kind.Terminal() {
		if e.Kind == crisp.EventFinished || e.Kind == crisp.EventPanicked {
			p.endRegion(e.ID)
			pprof.SetGoroutineLabels(context.Background())
		}
		if t, ok := p.tasks.LoadAndDelete(e.ID); ok {
			t := t.(*traced)
			if t.task != nil {
				trace.Log(t.ctx, "crisp.outcome", e.Kind.String())
				t.task.End()
			}
		}
	}
}

func (p *profiling) traced(id uint64) *traced {
	if t, ok := p.tasks.Load(id); ok {
		return t.(*traced)
	}
	return nil
}

func (p *profiling) endRegion(id uint64) {
	if t := p.traced(id); t != nil && t.region != nil {
		t.region.End()
		t.region = nil
	}
}

// base is the context an event's labels and task hang from.
func base(e crisp.Event) context.Context {
	if e.Context != nil {
		return e.Context
	}
	return context.Background()
}
