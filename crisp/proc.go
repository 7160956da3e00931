package crisp

import (
	"context"
	"time"
)

// Proc is a handler's view of the process it runs in: the message's
// deadline and other properties, the system's clock, and (for
// cooperative scheduling) the actor it may release while waiting.
//
// A Proc is valid only inside the handler it was passed to, on that
// handler's goroutine; keep it no longer than the handler runs.
type Proc struct {
	a *core
	m *message // the process running on this goroutine
}

// Deadline returns the start deadline of the running message (the zero
// time if it has none). The message has already started, so it can no
// longer miss it; handlers use it to pass a deadline on.
func (p *Proc) Deadline() time.Time { return p.m.item.Deadline }

// Now reads the system's clock.
func (p *Proc) Now() time.Time { return p.a.sys.clk.Now() }

// Priority returns the running message's priority.
func (p *Proc) Priority() int { return p.m.item.Priority }

// Tag returns the value the sender attached with Tag, or nil.
func (p *Proc) Tag() any { return p.m.item.Tag }

// Name returns the running message's name: its Name option, or its
// handler function's name.
func (p *Proc) Name() string { return p.m.name(p.m.item.Payload.(job)) }

// Context returns the context the message was sent with, or
// context.Background().
func (p *Proc) Context() context.Context {
	if p.m.ext != nil {
		return p.m.ext.ctx
	}
	return context.Background()
}

// System returns the system of the running actor.
func (p *Proc) System() *System { return p.a.sys }
