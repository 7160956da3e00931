package vclock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// WithDeadline returns a copy of parent that ends when parent does, when
// its cancel function is called, or with context.DeadlineExceeded when
// the clock reaches d, whichever is first. Its Deadline reports d (or
// parent's, if earlier: then the copy is context.WithCancel(parent)).
// Like every context not made by the context package, it learns of the
// end of a parent that is not one of this package's on a goroutine that
// context.AfterFunc starts then.
func (c *Clock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("vclock: WithDeadline with a nil parent")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(d) {
		return context.WithCancel(parent)
	}
	x := &deadlineCtx{parent: parent, deadline: d, clk: c, done: make(chan struct{})}
	x.causes, x.setCause = context.WithCancelCause(context.Background())
	cancel := func() { x.cancel(context.Canceled, context.Canceled) }
	c.mu.Lock()
	if !c.now.Before(d) {
		c.mu.Unlock()
		x.cancel(context.DeadlineExceeded, context.DeadlineExceeded)
		return x, cancel
	}
	e := &event{kind: evExpire, ctx: x}
	c.push(e, c.keyOf(d))
	x.ev = e
	c.mu.Unlock()
	x.follow(parent)
	return x, cancel
}

// deadlineCtx is a context ended by the clock.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time
	clk      *Clock
	ev       *event // the pending expiry; guarded by clk.mu
	// causes is ended with this context's cause; it answers Value for the
	// key context.Cause asks, so that Cause reports this context's cause,
	// not an ancestor's.
	causes   context.Context
	setCause context.CancelCauseFunc

	mu       sync.Mutex // guards err, hooks, nextHook, unfollow
	done     chan struct{}
	err      error
	hooks    map[*hook]struct{} // functions to call when done, from AfterFunc
	nextHook uint64
	unfollow func() bool // ends the link to parent
}

// hook is a function registered with AfterFunc; order is the order of
// registration, which is the order they are called in.
type hook struct {
	f     func()
	order uint64
}

func (x *deadlineCtx) Deadline() (time.Time, bool) { return x.deadline, true }

func (x *deadlineCtx) Done() <-chan struct{} { return x.done }

func (x *deadlineCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

func (x *deadlineCtx) Value(key any) any {
	if v := x.causes.Value(key); v != nil {
		return v
	}
	return x.parent.Value(key)
}

func (x *deadlineCtx) String() string {
	return fmt.Sprintf("%v.WithDeadline(%s)", x.parent, x.deadline)
}

// AfterFunc arranges for f to be called once x is done, on the goroutine
// that ends it (at once if it has ended), and returns a function that
// undoes that if f has not been called yet, reporting whether it did.
// context.AfterFunc and the context package's derived contexts use it,
// which spares them a goroutine of their own waiting for x to end.
func (x *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		f()
		return func() bool { return false }
	}
	if x.hooks == nil {
		x.hooks = make(map[*hook]struct{})
	}
	x.nextHook++
	h := &hook{f: f, order: x.nextHook}
	x.hooks[h] = struct{}{}
	x.mu.Unlock()
	return func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		_, ok := x.hooks[h]
		delete(x.hooks, h)
		return ok
	}
}

// follow links x to parent, so that x ends when parent does.
func (x *deadlineCtx) follow(parent context.Context) {
	var stop func() bool
	end := func() { x.cancel(parent.Err(), context.Cause(parent)) }
	switch p, ours := parent.(*deadlineCtx); {
	case ours:
		stop = p.AfterFunc(end)
	case parent.Done() == nil:
		return
	case parent.Err() != nil:
		end()
		return
	default:
		stop = context.AfterFunc(parent, end)
	}
	x.mu.Lock()
	if x.err == nil {
		x.unfollow, stop = stop, nil
	}
	x.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// cancel ends x with err, if it has not ended, and then calls the
// functions registered with AfterFunc, in the order they were registered.
func (x *deadlineCtx) cancel(err, cause error) {
	// The expiry leaves the clock before done closes, so that a waiter
	// woken by done finds it gone (Next). It closed first once in 60
	// loaded runs of TestContexts under -race.
	x.clk.mu.Lock()
	if e := x.ev; e != nil && e.index >= 0 {
		x.clk.dropLocked(e)
	}
	x.ev = nil
	x.clk.mu.Unlock()

	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		return
	}
	x.setCause(cause) // before done closes, so that a woken waiter sees it
	x.err = err
	close(x.done)
	hooks, unfollow := x.hooks, x.unfollow
	x.hooks, x.unfollow = nil, nil
	x.mu.Unlock()

	if unfollow != nil {
		unfollow()
	}
	fs := make([]*hook, 0, len(hooks))
	for h := range hooks {
		fs = append(fs, h)
	}
	slices.SortFunc(fs, func(a, b *hook) int { return cmp.Compare(a.order, b.order) })
	for _, h := range fs {
		h.f()
	}
}
