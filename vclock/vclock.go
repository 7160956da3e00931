// Package vclock is a virtual clock for discrete-event simulation of
// crisp code: a clock.Clock whose time never moves on its own. A driver
// moves it, whenever the system under test is idle, straight to the next
// instant at which a timer is due, and fires that timer there. Months of
// timed events run in seconds, and two runs of the same scenario see the
// same instants in the same order.
//
//	vc := vclock.New(start)
//	sys := crisp.NewSystem(crisp.WithClock(vc))
//	defer sys.Shutdown(context.Background())
//	// ... spawn actors; schedule work with vc.AfterFunc or vc.At, crisp.Tell ...
//	err := vc.RunUntil(ctx, sys.WaitIdle, start.Add(30*24*time.Hour))
//
// # Driving
//
// Run, RunUntil and Step take an idle function, normally
// (*crisp.System).WaitIdle: it returns once nothing in the system can act
// without time moving. Each round waits for idle, then takes the pending
// timer with the earliest instant (the one set first among equals), moves
// the clock to that instant and fires it; the next round waits for idle
// again before firing the next timer, even at the same instant. So
// everything a timer sets off (handlers, the timers they set, the
// messages they send) is done before the next timer fires, and the order
// of events never depends on how goroutines happen to be scheduled, only
// on the order in which timers were set. Run stops when no timer is
// pending; RunUntil when the next one is after its end instant, and then
// moves the clock to that end; Step after the timers due at the next
// instant. Each returns once the system is idle again, or at once, with
// the error, if ctx ends or idle fails.
//
// A timer fires as follows. An AfterFunc or At function runs on the
// driving goroutine, synchronously, one after another: it must be quick
// and must not wait for the clock (it holds up the driver, but not the
// clock's lock, so it may use the clock freely). A Timer, After, Ticker or
// Tick channel receives the virtual instant by a non-blocking send on a
// channel of capacity 1: a tick nobody has taken yet makes the next one be
// dropped, as with the time package. Sleep returns when its wake-up fires.
// A WithDeadline or WithTimeout context ends with
// context.DeadlineExceeded when its deadline fires; its Deadline reports
// the virtual instant. Timers of zero or negative duration are due at
// once: channels receive at the call, functions run at the next round.
//
// # Limits
//
// Time moves only when idle says the system is idle, and idle knows only
// the system's own goroutines. A goroutine outside the system that is
// about to act (to send a message, to set a timer) is not waited for: it
// acts at whatever virtual instant it happens to reach, and a run that
// depends on it is not repeatable. Give such work to an actor, or to an
// AfterFunc or At function, which runs on the driver at a known instant.
//
// Anything that waits for time to pass while the system counts it as
// busy stalls the clock for good: a handler blocked in Sleep, in a
// receive from After or Timer, or in a timed Get (GetWithin, GetContext
// with a context of this clock) keeps its actor busy, so idle never
// returns and time never reaches the instant the handler waits for. Pass
// Run a context with a real deadline to turn such a stall into an error.
// Inside a handler, wait through the runtime instead: suspend with
// crisp.Await on a future that an AfterFunc function resolves, or use the
// system's own timed waits, which its watchdog ends without holding the
// actor. Code that must block on time in handlers is better tested inside
// a testing/synctest bubble on the real clock, where the Go runtime knows
// which goroutines are durably blocked.
//
// Handlers take no virtual time: a message that is queued when its actor
// is idle starts at the instant it was sent, so under sys.WaitIdle a
// deadline can be missed only if it is not after the instant of sending.
// To model service times, schedule a job's completion with a timer.
//
// # Concurrency
//
// A Clock is safe for concurrent use. Now, Since, Until and the methods
// that set timers may be called from any goroutine, while a driver runs:
// from handlers, from timer functions, from outside. Timers may be
// stopped and reset from anywhere too. Only one of Run, RunUntil and Step
// may run at a time (a second one panics), and never from a timer
// function. Sleep blocks only its caller. The clock starts no goroutine;
// the driver's goroutine is the caller's.
//
// # Timers of the clock package
//
// clock.Clock's Timer, AfterFunc and Ticker return *clock.Timer and
// *clock.Ticker: structs whose Stop and Reset know only two clocks, the
// real one and clock.Mock, and tell nobody when they are called. So the
// timers this clock hands out belong to a clock.Mock of its own, made
// with that Mock's AfterFunc and Ticker; their Stop and Reset are the
// Mock's own code and return its answers (Stop: whether the timer was
// pending; Reset: the same, before arming it again). The Mock is never
// advanced with Add, which sleeps a millisecond of real time per timer
// and runs functions on goroutines of their own. Instead, every round the
// driver looks at all the Mock's pending timers, under the Mock's own
// lock, to see what Stop and Reset changed, and takes a fired timer out
// as Add would. The Mock keeps its timers in unexported fields, which the
// driver reaches through reflect and unsafe, at offsets it looks up by
// name and type when the first Clock is made: New panics if they are not
// those of github.com/benbjohnson/clock v1.3.5, the version crisp
// requires and the module's last (it is archived). After, Sleep, Tick,
// At and the contexts hand out no such struct and are plain entries in
// the clock's own heap.
//
// Reset is seen at the next round rather than at the call; a timer reset
// to an instant at which other timers are due fires after the ones set
// meanwhile by other means. As with clock.Mock (and with timers of Go
// before 1.23), a value already in a Timer's channel stays there across
// Stop and Reset.
//
// # Costs
//
// Now takes a mutex. After, Sleep, Tick, At and WithDeadline cost O(log n)
// in the number of pending timers. Timer, AfterFunc and Ticker cost O(1)
// to make, but every round looks at every pending *clock.Timer and
// *clock.Ticker, about 20ns each: with 1024 of them pending, a round
// costs some 21µs, against 0.3µs with At (and 0.17µs for a bare
// container/heap). Set timers that nobody will stop or reset, such as the
// events of a log loaded up front, with At. Driving a crisp system adds
// what it takes the system to go idle after each event: with each event a
// Tell to an actor, about half a million events a second (2-core VM; see
// BenchmarkDrive).
package vclock

import (
	"container/heap"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// Clock is a virtual clock. Make one with New.
type Clock struct {
	start time.Time // instant zero of the keys below
	led   *ledger   // the Mock behind *clock.Timer and *clock.Ticker values

	mu    sync.Mutex // guards now, key, seq, queue, and led's bookkeeping
	now   time.Time
	key   int64  // now, as nanoseconds since start
	seq   uint64 // last set order given out
	queue events // timers of After, Sleep, Tick, At and contexts

	driving atomic.Bool // Run, RunUntil or Step is running
}

var _ clock.Clock = (*Clock)(nil)

// New returns a clock that reads start until a driver moves it. A
// monotonic clock reading in start is dropped. New panics if the clock
// package is not the version this package reads (see the package
// documentation).
func New(start time.Time) *Clock {
	start = start.Round(0)
	c := &Clock{start: start, now: start}
	c.led = newLedger(start)
	return c
}

// Now returns the clock's current instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the virtual time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the virtual time from now until t.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// After returns a channel that receives the instant d from now, when the
// clock reaches it (at once if d <= 0).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.push(&event{kind: evSend, ch: ch}, c.keyAfter(d))
	return ch
}

// Sleep blocks until the clock reaches the instant d from now; it returns
// at once if d <= 0. Only a driver moves the clock: see the package
// documentation before sleeping in a handler.
func (c *Clock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	wake := make(chan struct{})
	c.mu.Lock()
	c.push(&event{kind: evWake, wake: wake}, c.keyAfter(d))
	c.mu.Unlock()
	<-wake
}

// Tick returns a channel that receives the instant every d, for as long as
// the clock exists; nil if d <= 0. Its ticker cannot be stopped, so Run
// never runs out of timers once Tick has been called: use RunUntil or a
// Ticker.
func (c *Clock) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.push(&event{kind: evTick, ch: ch, period: int64(d)}, c.keyAfter(d))
	return ch
}

// Timer returns a timer whose channel receives the instant d from now,
// when the clock reaches it (at once if d <= 0).
func (c *Clock) Timer(d time.Duration) *clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.led.timer(c, d, nil)
}

// AfterFunc returns a timer that calls f on the driving goroutine when
// the clock reaches the instant d from now (at the next round if d <= 0).
func (c *Clock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	if f == nil {
		panic("vclock: AfterFunc with a nil function")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.led.timer(c, d, f)
}

// Ticker returns a ticker whose channel receives the instant every d. It
// panics if d <= 0, as time.NewTicker does.
func (c *Clock) Ticker(d time.Duration) *clock.Ticker {
	if d <= 0 {
		panic("vclock: non-positive interval for Ticker")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.led.ticker(c, d)
}

// At arranges for f to be called on the driving goroutine when the clock
// reaches t (at the next round if it has), like AfterFunc(c.Until(t), f).
// Unlike AfterFunc, it hands out no *clock.Timer: f waits in the clock's
// own heap, at O(log n), and adds nothing to the cost of a round (see
// Costs in the package documentation). Use it to load many events at
// once, such as the arrivals of a job log. The returned function takes f
// out if it has not been called, reporting whether it did.
func (c *Clock) At(t time.Time, f func()) (stop func() bool) {
	if f == nil {
		panic("vclock: At with a nil function")
	}
	e := &event{kind: evFunc, fn: f}
	c.mu.Lock()
	c.push(e, c.keyOf(t))
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if e.index < 0 {
			return false
		}
		c.dropLocked(e)
		return true
	}
}

// WithTimeout is WithDeadline(parent, c.Now().Add(d)).
func (c *Clock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return c.WithDeadline(parent, c.Now().Add(d))
}

// Run drives the clock until no timer is pending: it waits for idle,
// fires the earliest pending timer at its instant, and so on, as the
// package documentation describes. It returns nil when no timer is left,
// or the error of ctx or idle.
func (c *Clock) Run(ctx context.Context, idle func(context.Context) error) error {
	_, err := c.drive(ctx, idle, math.MaxInt64, false)
	return err
}

// RunUntil drives the clock like Run, firing every timer due at or before
// end, then moves it to end (if it is not there already) and returns nil.
// Timers due after end stay pending. If ctx ends or idle fails first, it
// returns that error and leaves the clock where it was.
func (c *Clock) RunUntil(ctx context.Context, idle func(context.Context) error, end time.Time) error {
	if _, err := c.drive(ctx, idle, c.keyOf(end), false); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.keyOf(end); k > c.key {
		c.led.lock()
		c.moveTo(k)
		c.led.unlock()
	}
	return nil
}

// Step waits for idle, then moves the clock to the instant of the
// earliest pending timer and fires every timer due there, waiting for idle
// after each. It reports whether it fired any: false, with the clock
// unmoved, if no timer was pending.
func (c *Clock) Step(ctx context.Context, idle func(context.Context) error) (bool, error) {
	return c.drive(ctx, idle, math.MaxInt64, true)
}

// Next reports the instant of the earliest pending timer, and false if no
// timer is pending.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.led.lock()
	defer c.led.unlock()
	k, _, ok := c.earliest()
	if !ok {
		return time.Time{}, false
	}
	return c.start.Add(time.Duration(k)), true
}

// drive fires timers due at or before limit, one per round, waiting for
// idle before each, until none is due. With oneInstant it stops at the
// first instant at which it fired something.
func (c *Clock) drive(ctx context.Context, idle func(context.Context) error, limit int64, oneInstant bool) (fired bool, err error) {
	if !c.driving.CompareAndSwap(false, true) {
		panic("vclock: Run, RunUntil or Step called while another is driving the clock")
	}
	defer c.driving.Store(false)
	for {
		if err := ctx.Err(); err != nil {
			return fired, err
		}
		if err := idle(ctx); err != nil {
			return fired, err
		}
		c.mu.Lock()
		f, at, ok := c.claim(limit)
		c.mu.Unlock()
		if !ok {
			return fired, nil
		}
		f.run()
		fired = true
		if oneInstant {
			limit = at
		}
	}
}

// earliest finds the next timer to fire: its key, and its index in the
// ledger's list, or -1 if it is the queue's first. Called with mu and the
// ledger's lock held.
func (c *Clock) earliest() (key int64, ledgerIndex int, ok bool) {
	lk, ls, li, lok := c.led.scan(c)
	if len(c.queue) == 0 {
		return lk, li, lok
	}
	top := c.queue[0]
	if lok && (lk < top.key || lk == top.key && ls < top.seq) {
		return lk, li, true
	}
	return top.key, -1, true
}

// claim takes the next timer due at or before limit out of the pending
// ones, moving the clock to its instant if that is later, and returns
// what firing it means and the instant. Called with mu held.
func (c *Clock) claim(limit int64) (firing, int64, bool) {
	c.led.lock()
	defer c.led.unlock()
	k, li, ok := c.earliest()
	if !ok || k > limit {
		return firing{}, 0, false
	}
	if k > c.key {
		c.moveTo(k)
	}
	if li >= 0 {
		return c.led.claim(c, li), c.key, true
	}
	e := heap.Pop(&c.queue).(*event)
	f := firing{at: c.now}
	switch e.kind {
	case evSend:
		f.ch = e.ch
	case evTick:
		f.ch = e.ch
		if c.key < math.MaxInt64 { // at the end of time it ticks once more, no more
			c.push(e, satAdd(c.key, e.period))
		}
	case evWake:
		f.wake = e.wake
	case evExpire:
		f.ctx = e.ctx
	case evFunc:
		f.fn = e.fn
	}
	return f, c.key, true
}

// moveTo sets the clock to key k. Called with mu and the ledger's lock
// held.
func (c *Clock) moveTo(k int64) {
	c.key = k
	c.now = c.start.Add(time.Duration(k))
	c.led.setNow(c.now)
}

// push queues e at key k, in set order. Called with mu held.
func (c *Clock) push(e *event, k int64) {
	e.key, e.seq = k, c.nextSeq()
	heap.Push(&c.queue, e)
}

// dropLocked takes e, which is in the queue, out of it. Called with mu
// held.
func (c *Clock) dropLocked(e *event) { heap.Remove(&c.queue, e.index) }

// nextSeq gives out the next set order. Called with mu held.
func (c *Clock) nextSeq() uint64 {
	c.seq++
	return c.seq
}

// keyOf maps an instant to nanoseconds since start, saturating some 292
// years away.
func (c *Clock) keyOf(t time.Time) int64 { return int64(t.Sub(c.start)) }

// keyAfter is the key d after now. Called with mu held.
func (c *Clock) keyAfter(d time.Duration) int64 { return satAdd(c.key, int64(d)) }

func satAdd(k, d int64) int64 {
	s := k + d
	switch {
	case d > 0 && s < k:
		return math.MaxInt64
	case d < 0 && s > k:
		return math.MinInt64
	}
	return s
}

// firing is what firing one timer does, carried out by the driver after
// it has released the clock's locks.
type firing struct {
	at   time.Time
	fn   func()         // AfterFunc
	ch   chan time.Time // Timer, After, Ticker, Tick
	wake chan struct{}  // Sleep
	ctx  *deadlineCtx   // WithDeadline, WithTimeout
}

func (f firing) run() {
	switch {
	case f.fn != nil:
		f.fn()
	case f.ch != nil:
		select {
		case f.ch <- f.at:
		default: // the last value has not been taken: drop this one
		}
	case f.wake != nil:
		close(f.wake)
	case f.ctx != nil:
		f.ctx.cancel(context.DeadlineExceeded, context.DeadlineExceeded)
	}
}
