package crisp

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/policy"
)

// A message's life. Exactly one of run, miss, stop, cancel or a policy
// failure happens to it: every transition out of stQueued is a
// compare-and-swap. Whoever wins it delivers the outcome; taking the
// message out of the actor's list and queue is separate bookkeeping,
// done under the actor's lock by whoever gets there first.
const (
	stQueued    uint32 = iota // in the actor's queue, not started
	stTaken                   // taken off the queue; the runner is deciding whether it may start
	stRunning                 // started: its handler runs, or ran
	stMissed                  // its deadline passed before it started
	stStopped                 // its actor stopped before it started
	stCancelled               // its context ended before it started
	stFailed                  // the policy panicked while ordering it
)

// message is the untyped part of every Call and Tell: what the policy,
// the watchdog and the actor's bookkeeping need.
type message struct {
	item  policy.Item // item.Payload holds the job
	state atomic.Uint32

	// Guarded by the actor's mu once queued. Before that, next links the
	// actor's intake.
	linked     bool     // in the actor's list and policy queue
	prev, next *message // the actor's list of queued messages
	dli        int      // position in the actor's deadline index

	ext *msgContext // non-nil for messages sent with a context
}

// msgContext is the plumbing of a message sent with a context.
type msgContext struct {
	ctx  context.Context
	stop func() bool // from context.AfterFunc; nil if ctx cannot end
}

// release stops watching the context once the message has started or
// left the queue. It accepts a nil receiver (no context).
func (c *msgContext) release() {
	if c != nil && c.stop != nil {
		c.stop()
	}
}

// job is the typed part of a message: a Call's or a Tell's handler and
// where its outcome goes.
type job interface {
	hdr() *message
	actor() *core
	// run calls the handler with the actor's state and delivers the
	// result. It runs on the goroutine holding the actor.
	run(p *Proc)
	// fail delivers err as the message's outcome (nobody hears it for a
	// Tell).
	fail(err error)
	// handler returns the handler function, for naming the message.
	handler() any
	// answered reports whether a future receives the outcome (false for
	// a Tell, whose failures only the log hears of).
	answered() bool
}

// call is a message sent with Call.
type call[S, T any] struct {
	message
	a  *Actor[S]
	fn func(*Proc, S) (T, error)
	// pr is embedded: one allocation per Call. A caller holding the
	// future holds the message; run drops fn so that at least what the
	// handler captured can be collected.
	pr future.Promise[T]
}

func (c *call[S, T]) hdr() *message  { return &c.message }
func (c *call[S, T]) actor() *core   { return &c.a.core }
func (c *call[S, T]) handler() any   { return c.fn }
func (c *call[S, T]) answered() bool { return true }
func (c *call[S, T]) fail(err error) { c.pr.Fail(err) }

func (c *call[S, T]) run(p *Proc) {
	v, err := c.fn(p, c.a.state)
	c.fn = nil // nothing reads it once the handler has returned
	// The handler is done: a caller woken by the result may send at once,
	// and must find the actor free rather than busy.
	p.a.flags.And(^uint32(fHandling))
	c.pr.Resolve(v, err)
}

// tell is a message sent with Tell.
type tell[S any] struct {
	message
	a  *Actor[S]
	fn func(*Proc, S)
}

func (t *tell[S]) hdr() *message  { return &t.message }
func (t *tell[S]) actor() *core   { return &t.a.core }
func (t *tell[S]) handler() any   { return t.fn }
func (t *tell[S]) answered() bool { return false }
func (t *tell[S]) fail(error)     {}
func (t *tell[S]) run(p *Proc)    { t.fn(p, t.a.state) }

// name is the message's name for errors: its Name option, else its
// handler function's name.
func (m *message) name(j job) string {
	if m.item.Name != "" {
		return m.item.Name
	}
	return funcName(j.handler())
}

func funcName(fn any) string {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return ""
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return ""
	}
	name := f.Name()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}
