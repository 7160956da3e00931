package crisp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crisprt/crisp/internal/plumb"
	"github.com/crisprt/crisp/internal/watchdog"
)

// Timers: messages sent later, once or periodically, on the system's
// clock.
//
// A timer is one entry in the system's watchdog, the goroutine that
// already watches deadlines: no goroutine and no runtime timer per timer,
// and under a mock clock, vclock or a synctest bubble a tick is sent at
// exactly its virtual instant. When the entry fires, the watchdog's
// goroutine sends the tick as a Tell and re-arms the entry for the next
// one.
//
// Lock order: a timer's mu before its actor's (a tick's send may take the
// actor's lock to watch its deadline); the actor's stop never takes a
// timer's mu, it only cancels the entry and marks the timer stopped.

// Lag says what a periodic timer does when ticks fall behind: when the
// watchdog finds more than one tick due at once (a clock that jumped, a
// watchdog held up), or the previous tick has not yet started on its
// actor.
type Lag uint8

const (
	// SkipMissed sends at most one tick per firing, and none while the
	// previous tick is still queued on the actor; the ticks passed over
	// are dropped, and the next comes at the next instant of the
	// period's grid (start + k*period) after now. The actor never has
	// more than one tick queued. The default.
	SkipMissed Lag = iota
	// CatchUp sends one tick for every instant of the grid that has
	// passed, at once, even if earlier ticks are still queued: none is
	// dropped, and the handler sees, with Proc.Now, how late each runs.
	CatchUp
)

// Timer is a message scheduled with After or Every. Stop it with Stop;
// it also stops when its actor stops. All methods are safe for
// concurrent use.
type Timer struct {
	mu      sync.Mutex // guards next, and the sends of ticks
	a       *core
	send    func()        // sends one tick
	period  time.Duration // 0 for After
	lag     Lag
	next    time.Time // when the next tick is due
	stopped atomic.Bool
	queued  atomic.Bool // a SkipMissed tick is queued and has not started
	wd      watchdog.Entry
}

// timer is the Timer as the actor's lifecycle state lists it.
type timer = Timer

// After sends fn to an actor (or group) as a Tell after d on the system's
// clock, with opts applied when it is sent (so Within counts from then).
// A d of zero or less sends it at once. It panics as Tell does.
func After[S any](to Ref[S], d time.Duration, fn func(p *Proc, s S), opts ...SendOption) *Timer {
	return newTimer(to, d, 0, SkipMissed, fn, opts, "After")
}

// Every sends fn to an actor (or group) as a Tell every period on the
// system's clock, the first after one period, with opts applied to each
// tick as it is sent. lag says what happens to ticks that fall behind.
// It panics if period is not positive, and as Tell does.
func Every[S any](to Ref[S], period time.Duration, lag Lag, fn func(p *Proc, s S), opts ...SendOption) *Timer {
	if period <= 0 {
		panic("crisp: Every with a period that is not positive")
	}
	return newTimer(to, period, period, lag, fn, opts, "Every")
}

func newTimer[S any](to Ref[S], d, period time.Duration, lag Lag, fn func(p *Proc, s S), opts []SendOption, op string) *Timer {
	a := actorOf(to, op)
	if fn == nil {
		panic("crisp: " + op + " with a nil handler")
	}
	t := &Timer{a: &a.core, period: period, lag: lag}
	// Named after fn, unless opts name it: the wrappers below would
	// otherwise lend the ticks their names. A copy: the caller may reuse
	// its slice.
	opts = append([]SendOption{MessageName(funcName(fn))}, opts...)
	if period > 0 && lag == SkipMissed {
		t.send = func() { sendTracked(t, a, fn, opts) }
	} else {
		t.send = func() { Tell(to, fn, opts...) }
	}
	now := a.sys.now()
	t.next = now.Add(d)
	t.mu.Lock()
	defer t.mu.Unlock()
	if d <= 0 {
		t.stopped.Store(true)
		t.send()
		return t
	}
	c := &a.core
	c.mu.Lock()
	if c.stopped() || !c.sys.wd.Watch(&t.wd, (*timerTarget)(t), t.next, now) {
		c.mu.Unlock()
		t.stopped.Store(true)
		return t
	}
	lf := c.lifeOf()
	if lf.timers == nil {
		lf.timers = make(map[*timer]struct{})
	}
	lf.timers[t] = struct{}{}
	c.mu.Unlock()
	return t
}

// sendTracked sends a SkipMissed tick of t, and notes when it has
// started or will never start (missed, stopped), so that the next tick
// is sent only then. It is sent as a Call, whose future says when it
// will not start; a panic of its handler is logged, as a Tell's would be.
func sendTracked[S any](t *Timer, a *Actor[S], fn func(p *Proc, s S), opts []SendOption) {
	f := Call(a, func(p *Proc, s S) (struct{}, error) {
		t.queued.Store(false)
		fn(p, s)
		return struct{}{}, nil
	}, opts...)
	heard := func() {
		t.queued.Store(false)
		var pe *PanicError
		if _, err := f.Get(); errors.As(err, &pe) {
			a.sys.log.LogAttrs(context.Background(), slog.LevelError, "handler panicked",
				slog.String("actor", a.displayName()), slog.String("message", funcName(fn)),
				slog.Any("panic", pe.Value), slog.String("stack", string(pe.Stack)))
		}
	}
	if !plumb.OnResolve(f, heard) {
		heard()
	}
}

// Stop stops the timer: no tick is sent after Stop returns (ticks sent
// before stay queued on the actor). It reports whether the timer had
// ticks still to send. Stop is idempotent.
func (t *Timer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Swap(true) {
		return false
	}
	a := t.a
	a.mu.Lock()
	a.sys.wd.Cancel(&t.wd)
	if lf := a.life(); lf != nil {
		delete(lf.timers, t)
	}
	a.mu.Unlock()
	return true
}

// cancelLocked stops the timer because its actor stops. Called with the
// actor's mu held, not the timer's.
func (t *Timer) cancelLocked() {
	t.stopped.Store(true)
	t.a.sys.wd.Cancel(&t.wd)
}

// timerTarget is a Timer as the watchdog sees it: a type of its own, so
// that Expire is not a method of Timer, which anyone could call.
type timerTarget Timer

// Expire sends the tick (or ticks) due at now and arms the next.
func (tt *timerTarget) Expire(now time.Time) {
	t := (*Timer)(tt)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	if t.period == 0 {
		t.stopped.Store(true)
		t.forget()
		t.send()
		return
	}
	switch t.lag {
	case CatchUp:
		for !t.next.After(now) {
			t.send()
			t.next = t.next.Add(t.period)
		}
	default:
		if !t.queued.Swap(true) {
			t.send()
		}
		// The first instant of the grid after now.
		late := now.Sub(t.next)
		t.next = t.next.Add((late/t.period + 1) * t.period)
	}
	a := t.a
	a.mu.Lock()
	if a.stopped() || !a.sys.wd.Watch(&t.wd, (*timerTarget)(t), t.next, now) {
		t.stopped.Store(true)
		if lf := a.life(); lf != nil {
			delete(lf.timers, t)
		}
	}
	a.mu.Unlock()
}

// forget takes a timer that has sent its last tick off its actor's list.
func (t *Timer) forget() {
	a := t.a
	a.mu.Lock()
	if lf := a.life(); lf != nil {
		delete(lf.timers, t)
	}
	a.mu.Unlock()
}
