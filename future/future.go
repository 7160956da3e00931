// Package future provides [Future], a result that arrives later and is
// set exactly once, and [Promise], the side that sets it.
//
// A Future is resolved once with a value and an error; every read after
// that returns the same pair. Giving up a wait never changes the future:
// a later Get still sees the result. Done gives a channel closed on
// resolution, for select.
//
// # Three ways to wait
//
// A future has three blocking reads, because callers bound their waits
// in three different ways:
//
//   - [Future.Get] waits until the result is there. In crisp that wait is
//     already bounded when the message has a deadline: a message that has
//     not started by then is failed by the watchdog at that instant, so
//     Get returns by the deadline or once the started handler returns.
//   - [Future.GetContext] gives up when a context ends. It is the Go
//     ecosystem's habit: cancellation and request-scoped deadlines reach
//     it from whoever made the context, and a context's deadline is
//     measured on the real clock.
//   - [Future.GetWithin] gives up after a duration measured on the
//     future's own clock, the clock of the system that made it. Under a
//     *clock.Mock, a vclock or inside a testing/synctest bubble it times
//     out at exactly that instant of virtual time, whereas a timeout from
//     context.WithTimeout runs on the wall clock, which a mock or a
//     vclock never moves. So code that runs on virtual time, tests and
//     simulations above all, waits with GetWithin.
//
// # Goroutines and costs
//
// All methods are safe for concurrent use. A future owns no goroutine
// and no timer: an unresolved future is one small struct, and waiting
// on it allocates only when the result is not there after a few
// scheduler yields (48 bytes for Get; for GetWithin on the real clock
// 48 bytes and a timer of the runtime's, kept for later waits outside
// synctest bubbles, on another clock a channel and the clock's timer;
// a channel for GetContext and Done). Beside
// code that never yields a waiter on one of crisp's calls does not
// wait for those yields: it parks at once. Resolving costs two atomic
// operations plus waking whoever waits; with an error, one more and a
// 32-byte allocation. A Future[T] is two words and a T. Futures are
// normally made by crisp.Call; [NewPromise] makes one for code outside
// the runtime to resolve.
//
//	p := future.NewPromise[int](nil)
//	go func() { p.Resolve(42, nil) }()
//	v, err := p.Future().GetWithin(time.Second)
package future

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/internal/park"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/ready"
)

// The runtime's access to what users do not see (see internal/plumb).
type (
	sourced  interface{ setSourceAt(*any) }
	observed interface {
		source() plumb.Source
		onResolve(w plumb.Waker) bool
		wait(spare *unsafe.Pointer) error
		waitWithin(d time.Duration, spare *unsafe.Pointer) error
	}
)

func init() {
	plumb.SetSourceAt = func(p any, cell *any) { p.(sourced).setSourceAt(cell) }
	plumb.SourceOf = func(f any) plumb.Source { return f.(observed).source() }
	plumb.OnResolve = func(f any, fn func()) bool { return f.(observed).onResolve(funcWaker(fn)) }
	plumb.OnResolveWaker = func(f any, w plumb.Waker) bool { return f.(observed).onResolve(w) }
	plumb.Wait = func(f any, spare *unsafe.Pointer) error { return f.(observed).wait(spare) }
	plumb.WaitWithin = func(f any, d time.Duration, spare *unsafe.Pointer) error {
		return f.(observed).waitWithin(d, spare)
	}
}

// ErrTimeout is returned by GetWithin when the future is still unresolved
// after the given duration. It reports Timeout() == true.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string { return "future: timed out before the result arrived" }
func (timeoutError) Timeout() bool { return true }

// spins is how many times a waiter yields the processor, re-checking,
// before it allocates a channel and parks. A result produced by a
// goroutine that is runnable right now (the usual case for a request to
// an idle actor) then costs no allocation and no park/unpark pair.
//
// Spinning is a bet, and a bad one on a busy machine: a goroutine that
// yields goes to the back of the global run queue, behind every
// CPU-bound goroutine, and a result that arrives meanwhile wakes nobody,
// so the waiter learns of it only when its turn comes round, up to a
// time slice per processor later. A parked waiter is woken straight onto
// the resolver's processor instead. So a waiter spins only if the
// future's source says the result is likely soon (see soonSource), and
// not while the machine is busy with code that does not yield (see
// spin); a future without a source spins as before.
const spins = 4

// soonSource is a source that can tell whether the result is likely
// within a few scheduler yields: crisp's calls say yes while the message
// runs or its actor is free to start it, and no while it waits behind
// another handler or its actor's runner waits for a processor. Waiters
// park at once when it says no, and stop spinning when it comes to say
// no.
type soonSource interface {
	ResultSoon() bool
}

// node is one entry of a future's waiter list: a channel to close, for
// the goroutines blocked in GetWithin and GetContext and for Done; a
// goroutine blocked in Get (a getWaiter, which holds its node); or a
// callback of the runtime's. One interface holds any of them, so that a
// node is 32 bytes: a channel, a func, a getWaiter and the runtime's own
// wakers (crisp's suspended processes and continuations) are all
// pointers, which an interface holds without allocating.
type node struct {
	next *node
	w    plumb.Waker // a chanWaker, a *getWaiter, a funcWaker (plumb.OnResolve) or the runtime's (plumb.OnResolveWaker)
	// parked counts the goroutines blocked on the node's channel in
	// GetWithin or GetContext (enter, leave), until the resolver takes
	// the count (leaving it negative) to count them as ready (package
	// ready) before it closes the channel.
	parked atomic.Int32
}

// chanWaker is the channel of a node that goroutines wait on. wake
// closes it before it calls any callback; its Wake does nothing.
type chanWaker chan struct{}

func (chanWaker) Wake() {}

// funcWaker is a callback registered through plumb.OnResolve.
type funcWaker func()

func (f funcWaker) Wake() { f() }

// ch returns n's channel, or nil if n is a callback.
func (n *node) ch() chan struct{} {
	c, _ := n.w.(chanWaker)
	return c
}

// Sentinels for Future.w. A fresh future holds nil.
var (
	resolving = new(node) // a resolver owns the value fields
	resolved  = new(node) // value fields are final
)

// closed is returned by Done for resolved futures.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

var realClock = clock.New()

// Future is a value of type T (and an error) that becomes available
// later. The zero Future is never resolved; futures come from a Promise or
// from crisp.Call. A Future must not be copied after first use.
type Future[T any] struct {
	// w is the whole synchronisation state: nil or a list of waiters
	// while pending, then resolving, then resolved. Writes to val and,
	// for an error, x happen only between the CAS to resolving and the
	// store of resolved.
	w atomic.Pointer[node]
	// x serves two purposes that are never needed at once, in one word:
	// crisp embeds a future in every Call's message, and each word decides
	// the message's size class (issue 13).
	//
	// While the future is pending, x is nil (the real clock) or points to
	// a cell holding a clock.Clock or a plumb.Source. The cell is not the
	// future's: crisp points x at the reference its message already
	// carries (see plumb.SetSourceAt), so the source costs a Call one
	// word. Once the future is resolved with an error, x points to the
	// cell of a *failure holding the error; resolved without one, it
	// keeps the source. Its only write after the future is shared is the
	// resolver's, between the CAS to resolving and the store of resolved.
	x   atomic.Pointer[any]
	val T
}

// failure is what a future resolved with an error holds: the error, and
// the cell its x points to, which holds the failure itself, so that one
// allocation makes both and no source or clock can be taken for one.
type failure struct {
	err  error
	cell any // holds the *failure itself
}

// src returns the future's clock.Clock or plumb.Source, or nil if it has
// neither or has been resolved with an error (a wait is over then, and
// what it would have asked of its source is moot).
func (f *Future[T]) src() any {
	if c := f.x.Load(); c != nil {
		if v := *c; !isFailure(v) {
			return v
		}
	}
	return nil
}

func isFailure(v any) bool { _, ok := v.(*failure); return ok }

// failed returns the error the future was resolved with. Called once
// the future is resolved.
func (f *Future[T]) failed() error {
	if c := f.x.Load(); c != nil {
		if fl, ok := (*c).(*failure); ok {
			return fl.err
		}
	}
	return nil
}

// waitEnder is a source that wants to know when a wait ends.
type waitEnder interface{ EndWait() }

// endWait tells src, the source checkWait asked, if it wants to know,
// that a wait it allowed has ended.
func endWait(src any) {
	if e, ok := src.(waitEnder); ok {
		e.EndWait()
	}
}

// source returns the future's source, or nil if it has none.
func (f *Future[T]) source() plumb.Source {
	s, _ := f.src().(plumb.Source)
	return s
}

// Ready reports, without blocking, whether the future is resolved.
func (f *Future[T]) Ready() bool { return f.w.Load() == resolved }

// Get waits for the result and returns it.
func (f *Future[T]) Get() (T, error) {
	if f.w.Load() != resolved && !f.spin() {
		src := f.src()
		if err := checkWait(src); err != nil {
			var zero T
			return zero, err
		}
		defer endWait(src)
		f.park()
	}
	return f.val, f.failed()
}

// park blocks until the future is resolved. Get's waiter parks on a
// spot of its own (package park), not on a channel: no channel to make,
// and no record per waiter for the runtime to allocate. The resolver
// counts it as ready, so that runners with a backlog yield to it.
func (f *Future[T]) park() {
	w := &getWaiter{}
	w.n.w = w
	w.spot.Expect()
	if !f.add(&w.n) {
		return
	}
	w.spot.Wait()
	ready.Done()
}

// getWaiter is a goroutine blocked in Get: its node in the waiter list,
// and the spot it waits on (48 bytes in all; a channel's node was 32
// and the channel 96).
type getWaiter struct {
	n    node
	spot park.Spot
}

// Wake counts the waiter as ready and wakes it. wake calls it with the
// channels, before any callback.
func (w *getWaiter) Wake() {
	ready.Add(1)
	w.spot.Signal()
}

// enter registers the calling goroutine as about to block on the
// returned node's channel, to be counted as ready by the resolver (see
// node.parked), and reports whether it will be: not if the resolver has
// taken the count already. Once the future is resolved it returns a node
// whose channel is closed.
func (f *Future[T]) enter() (*node, bool) {
	n := f.waiter()
	if n == nil {
		return closedNode, false
	}
	return n, n.parked.Add(1) > 0
}

// leave ends a wait entered on n; counted is what enter reported, and
// woken whether the wait ended because n's channel was closed. A
// goroutine the resolver counted as ready is done being ready; one that
// leaves for another reason (a timeout, a context) takes itself off the
// count the resolver has yet to take, or, if the resolver took it
// meanwhile, is done being ready all the same.
func (n *node) leave(counted, woken bool) {
	if !counted {
		return
	}
	if woken || n.parked.Add(-1) < 0 {
		ready.Done()
	}
}

// closedNode stands for the node of a resolved future: waits on it end
// at once and count nothing.
var closedNode = &node{w: chanWaker(closed)}

// checkWait asks src, the future's source if it has one, whether the
// caller may block. The caller passes the same src to endWait once the
// wait is over: the future's x may by then hold its error instead.
func checkWait(src any) error {
	if s, ok := src.(plumb.Source); ok {
		return s.CheckWait()
	}
	return nil
}

// GetWithin waits at most d, measured on the future's clock, for the
// result. If it has not arrived by then it returns ErrTimeout and leaves
// the future as it was. A d of zero or less only checks.
func (f *Future[T]) GetWithin(d time.Duration) (T, error) {
	if f.w.Load() != resolved {
		if err := f.waitWithin(d, nil); err != nil {
			var zero T
			return zero, err
		}
	}
	return f.val, f.failed()
}

// waitWithin is GetWithin but for reading the result: it returns nil
// once the future is resolved, or the error GetWithin returns instead of
// the result (ErrTimeout, or the source's refusal).
//
// spare, if not nil, is a record of a parked wait kept between waits
// (plumb.WaitWithin): a wait on the real clock that parks uses the
// waiter *spare holds, if any, rather than a new one, and one that the
// resolution ends leaves in *spare a waiter that nothing else will
// touch. The caller must be the only goroutine that waits on the
// futures it passes a spare for, and must pass it only once the
// future of its last wait has been resolved and done waking its
// waiters: crisp's Ask, whose message (and future) a later Ask reuses
// only after its runner has finished resolving it.
func (f *Future[T]) waitWithin(d time.Duration, spare *unsafe.Pointer) error {
	if f.w.Load() == resolved || (d > 0 && f.spin()) {
		return nil
	}
	if d <= 0 {
		return ErrTimeout
	}
	src := f.src()
	if err := checkWait(src); err != nil {
		return err
	}
	defer endWait(src)
	clk := clockOf(src)
	if reflect.TypeOf(clk) == realClockType {
		w := f.timedWaiter(spare)
		if w == nil || w.waitTimed(d, spare) || f.Ready() { // Ready: resolved at the very instant of the timeout
			return nil
		}
		return ErrTimeout
	}
	// Another clock (a mock, a virtual one): its Timer, on which tests
	// may hook to know that the wait has begun (see the examples).
	t := clk.Timer(d)
	n, counted := f.enter()
	select {
	case <-n.ch():
		n.leave(counted, true)
		t.Stop()
		return nil
	case <-t.C:
		n.leave(counted, false)
		if f.Ready() { // resolved at the very instant of the timeout
			return nil
		}
		return ErrTimeout
	}
}

// wait is Get but for reading the result, with a spare as waitWithin
// has one: a wait that parks does so on a timedWaiter with no timer
// (its Wake is the resolution's), taken from *spare if it holds one,
// and leaves it there once woken.
func (f *Future[T]) wait(spare *unsafe.Pointer) error {
	if f.w.Load() == resolved || f.spin() {
		return nil
	}
	src := f.src()
	if err := checkWait(src); err != nil {
		return err
	}
	defer endWait(src)
	if w := f.timedWaiter(spare); w != nil {
		w.spot.Wait()
		ready.Done()
		if spare != nil {
			*spare = unsafe.Pointer(w)
		}
	}
	return nil
}

// GetContext waits for the result or for ctx to end, whichever is first;
// in the second case it returns ctx.Err() and leaves the future as it was.
func (f *Future[T]) GetContext(ctx context.Context) (T, error) {
	if f.w.Load() == resolved {
		return f.val, f.failed()
	}
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		return f.Get()
	}
	if f.spin() {
		return f.val, f.failed()
	}
	src := f.src()
	if err := checkWait(src); err != nil {
		return zero, err
	}
	defer endWait(src)
	n, counted := f.enter()
	select {
	case <-n.ch():
		n.leave(counted, true)
		return f.val, f.failed()
	case <-ctx.Done():
		n.leave(counted, false)
		if f.Ready() {
			return f.val, f.failed()
		}
		return zero, ctx.Err()
	}
}

// Done returns a channel that is closed when the future is resolved.
// Calls made before resolution return the same channel, so polling Done
// in a loop does not allocate; calls made after may return another,
// already closed, channel.
func (f *Future[T]) Done() <-chan struct{} {
	if n := f.waiter(); n != nil {
		return n.ch()
	}
	return closed
}

// waiter returns the waiter list's node with a channel, adding one if
// there is none, or nil once the future is resolved.
func (f *Future[T]) waiter() *node {
	var n *node
	for {
		h := f.w.Load()
		switch h {
		case resolved:
			return nil
		case resolving:
			runtime.Gosched()
			continue
		}
		for w := h; w != nil; w = w.next {
			if w.ch() != nil {
				return w
			}
		}
		if n == nil {
			n = &node{w: chanWaker(make(chan struct{}))}
		}
		n.next = h
		if f.w.CompareAndSwap(h, n) {
			return n
		}
	}
}

// onResolve is plumb.OnResolve and plumb.OnResolveWaker: crisp makes a
// waiting process ready the moment its future resolves, without a
// goroutine parked per wait.
func (f *Future[T]) onResolve(w plumb.Waker) bool {
	return f.add(&node{w: w})
}

// add pushes n on the waiter list and reports true, or reports false
// once the future is resolved.
func (f *Future[T]) add(n *node) bool {
	for {
		h := f.w.Load()
		switch h {
		case resolved:
			return false
		case resolving:
			runtime.Gosched()
			continue
		}
		n.next = h
		if f.w.CompareAndSwap(h, n) {
			return true
		}
	}
}

// spin yields the processor a few times, reporting whether the future
// got resolved meanwhile. It does not yield at all when the source says
// the result is not coming soon, and stops when it comes to say so.
func (f *Future[T]) spin() bool {
	s, _ := f.src().(soonSource)
	if s != nil && !s.ResultSoon() {
		return false
	}
	// Beside code that never yields the bet is always bad (see spins):
	// a waiter's yield puts it behind a preempted CPU-bound goroutine,
	// which a processor taking both from the global queue runs first,
	// for a whole time slice. The first yield of each spin is timed, and
	// a slow one ends the spin and marks the machine busy (ready.Busy);
	// then, until ready.ParkInstead finds the machine quiet again,
	// waiters with a source park at once. Measured (20,000 Calls with
	// timed Gets beside two such goroutines, a fresh process each run;
	// BENCHMARKS.md, nineteenth session): before, 4 runs of 32 were cut
	// off at 20 s and 3 more took 1.3-11 s; with this (and a caller's
	// runner not lingering on a busy machine: crisp's parkLinger), 27
	// runs took at most 0.31 s. Parking allocates (see timedWaiter), and
	// beside such goroutines each collection costs about one of their
	// time slices: in a process where the stall did not come, the median
	// call got slower (see BENCHMARKS.md). A future without a source (a
	// plain Promise's) spins as before: parking there too made the
	// waiters of crispbench's AfterFunc mechanism, beside ten actors with
	// CPU-bound handlers, wait 230 ms at p99 for their results, not 3.5
	// ms. Their spinning made the runners yield (ready.Spinning), and so
	// let the timers' goroutines run.
	if s != nil && ready.ParkInstead() {
		return false
	}
	// While it spins, the waiter is runnable but not running: it counts
	// as ready, so that a runner with a backlog yields to it as it would
	// to a parked waiter it woke, and as spinning: it waits in the global
	// run queue, which a yield to the runner's own processor would not
	// reach (ready.AddSpinning).
	ready.AddSpinning()
	for i := range spins {
		slow := ready.SpinYield(i == 0)
		if f.w.Load() == resolved {
			ready.DoneSpinning()
			return true
		}
		if slow || (s != nil && !s.ResultSoon()) {
			break // the bet went bad meanwhile: park
		}
	}
	ready.DoneSpinning()
	return false
}

// clockOf returns the clock of a future whose src is src.
func clockOf(src any) clock.Clock {
	switch s := src.(type) {
	case plumb.Source:
		if c := s.Clock(); c != nil {
			return c
		}
	case clock.Clock:
		return s
	}
	return realClock
}

// resolve sets the result if nobody has, then wakes the waiters in the
// order they arrived. It reports whether this call set the result.
func (f *Future[T]) resolve(v T, err error) bool {
	if f.w.Load() == resolved {
		return false // before allocating for a resolution that lost
	}
	var fl *failure
	if err != nil { // made before the CAS: waiters spin while it is held
		fl = &failure{err: err}
		fl.cell = fl
	}
	for {
		h := f.w.Load()
		if h == resolving || h == resolved {
			return false
		}
		if f.w.CompareAndSwap(h, resolving) {
			f.val = v
			if fl != nil {
				f.x.Store(&fl.cell)
			}
			f.w.Store(resolved)
			if h != nil {
				wake(h)
			}
			return true
		}
	}
}

// wake notifies every waiter in the order they arrived. The list was
// pushed newest first and other goroutines may still be walking it (Done
// looks for an existing channel), so it is read, never relinked. Channels
// are closed before any callback runs; a panicking callback does not stop
// the others, and the first panic is raised again once all have run.
//
// A lone waiter, the usual case, is woken without the buffer and the
// deferred recover that several need: their frames (over 350 bytes) lay
// under every callback, and a new runner whose handler resolved a
// future that an Await waits on outgrew its 2 KiB starting stack there:
// all 2,000 of them in crisp's stack test did, none since.
func wake(h *node) {
	if h.next == nil {
		switch w := h.w.(type) {
		case chanWaker:
			wakeChan(h, w)
		default:
			w.Wake() // a panic here is the only one: it is raised as is
		}
		return
	}
	wakeAll(h)
}

// wakeAll is wake for more than one waiter. It is kept out of line so
// that its buffer and callFrom's frame stay off wake's lone-waiter path.
//
//go:noinline
func wakeAll(h *node) {
	var buf [8]*node
	ns := buf[:0]
	for n := h; n != nil; n = n.next {
		ns = append(ns, n)
	}
	for _, n := range ns {
		switch w := n.w.(type) {
		case chanWaker:
			wakeChan(n, w)
		case *getWaiter, *timedWaiter:
			w.Wake()
		}
	}
	var first any
	for i := len(ns) - 1; i >= 0; {
		i, first = callFrom(ns, i, first)
	}
	if first != nil {
		panic(first)
	}
}

// wakeChan closes waiter n's channel w, counting the goroutines parked
// on it as ready first (they are runnable from the close on).
func wakeChan(n *node, w chanWaker) {
	if k := n.parked.Swap(math.MinInt32); k > 0 {
		ready.Add(int(k))
	}
	close(w)
}

// callFrom calls the callbacks of ns[i], ns[i-1], ..., ns[0] until one
// panics, and returns where to go on (-1 when done) and the first panic
// seen. One deferred recover covers the whole run rather than one per
// callback: the watchdog resolves futures by the hundred thousand a
// second.
func callFrom(ns []*node, i int, first any) (next int, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			next, panicked = i-1, first
			if panicked == nil {
				panicked = r
			}
		}
	}()
	for ; i >= 0; i-- {
		switch ns[i].w.(type) {
		case chanWaker, *getWaiter, *timedWaiter: // woken already
		default:
			ns[i].w.Wake()
		}
	}
	return -1, first
}

// Promise is the writing side of a Future: whoever holds it resolves the
// future. Its methods are safe for concurrent use; the first resolution
// wins and later ones report false.
//
// The zero Promise is ready to use, with the real clock. A Promise may be
// embedded in a larger struct, saving an allocation; it must not be
// copied after first use.
type Promise[T any] struct {
	f Future[T]
}

// SetClock makes the future measure GetWithin timeouts on clk (the real
// clock if nil), as NewPromise does, for a Promise embedded in a larger
// struct. Call it before the future is shared. A clock other than nil
// costs a 16-byte allocation: the future keeps one word for its clock,
// source or error (see Future), pointing at the clock's cell.
func (p *Promise[T]) SetClock(clk clock.Clock) {
	if clk == nil {
		p.f.x.Store(nil)
		return
	}
	c := new(any)
	*c = clk
	p.f.x.Store(c)
}

// setSourceAt is plumb.SetSourceAt.
func (p *Promise[T]) setSourceAt(cell *any) { p.f.x.Store(cell) }

// NewPromise returns an unresolved promise whose future measures
// GetWithin timeouts on clk (the real clock if clk is nil).
func NewPromise[T any](clk clock.Clock) *Promise[T] {
	p := new(Promise[T])
	p.SetClock(clk)
	return p
}

// Future returns the future this promise resolves.
func (p *Promise[T]) Future() *Future[T] { return &p.f }

// Resolve sets the future's value and error, waking every waiter. It
// reports false, changing nothing, if the future was already resolved.
func (p *Promise[T]) Resolve(v T, err error) bool { return p.f.resolve(v, err) }

// Fail resolves the future with the zero value and err. It reports false
// if the future was already resolved.
func (p *Promise[T]) Fail(err error) bool {
	var zero T
	return p.f.resolve(zero, err)
}
