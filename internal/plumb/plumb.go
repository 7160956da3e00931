// Package plumb connects crisp's runtime to the parts of package future
// that are not for users: what a future knows of the work that will
// resolve it (its source) and callbacks run by the resolving goroutine.
//
// A callback on resolution runs inside the resolver, which for crisp may
// be the watchdog goroutine or an actor's runner: a slow one would delay
// every miss report or every message behind it. So only the runtime and
// crisp's own tools, which keep them to a few instructions, may register
// one; users select on Future.Done or, inside an actor, use Await or Then.
//
// It also gives the runtime the reference each policy.Item carries to the
// work it stands for, which queues neither see nor change.
//
// Packages future and policy set the variables here when they are
// initialised; they are never nil or zero once a program runs.
package plumb

import (
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
)

// Source is what a runtime tells a future about the work that will
// resolve it. crisp sets one on the future of every Call.
//
// A Source may also have a method ResultSoon() bool, consulted before a
// waiter spins (no: park at once), and a method EndWait(), told on the
// waiting goroutine when each wait CheckWait allowed ends, however it
// ends: a runtime can then tell a wait that would never end from one
// that will.
type Source interface {
	// Clock is the clock GetWithin measures its timeout on; nil means
	// the real clock.
	Clock() clock.Clock
	// CheckWait is called by a goroutine about to block waiting for the
	// future (Get, GetWithin, GetContext). A non-nil error is returned to
	// that goroutine instead of waiting: for instance when the goroutine
	// is itself the only one that could resolve the future.
	CheckWait() error
}

var (
	// SetSourceAt makes the Source that *cell holds the source of
	// promise's future, in place of a clock. promise is a
	// *future.Promise[T]; call it before the future is shared. The
	// future keeps only cell, so that a runtime can point it at a
	// reference its work already carries (crisp: the runtime reference
	// of the message's policy.Item, see Ref, which holds the Call's job):
	// *cell must hold a Source from then on, unchanged while the future
	// lives.
	SetSourceAt func(promise any, cell *any)
	// SourceOf returns the source of future (a *future.Future[T]), or
	// nil if it has none.
	SourceOf func(future any) Source
	// OnResolve arranges for fn to be called once future (a
	// *future.Future[T]) is resolved, on the goroutine that resolves it,
	// and reports true. If the future is already resolved it does not
	// call fn and reports false. fn must be quick and must not block. If
	// fn panics, the other waiters are still woken and the panic then
	// reaches the resolver.
	OnResolve func(future any, fn func()) bool
	// OnResolveWaker is OnResolve calling w.Wake. A pointer held in a
	// Waker costs no allocation, where a closure or a method value
	// would: crisp's suspended processes and continuations register
	// themselves.
	OnResolveWaker func(future any, w Waker) bool
	// Wait and WaitWithin wait for future (a *future.Future[T]) as its
	// Get and GetWithin(d) do, and return nil once it is resolved (read
	// it then), or the error Get or GetWithin returns instead of the
	// result. *spare holds a record a parked wait needs, or nil: a wait
	// that parks uses it rather than allocate one, and leaves in *spare
	// one that a later wait may use. For a caller that alone waits on
	// the futures it waits on, each resolved and done waking its waiters
	// before the next wait with the same spare (crisp's Ask).
	Wait       func(future any, spare *unsafe.Pointer) error
	WaitWithin func(future any, d time.Duration, spare *unsafe.Pointer) error
)

// Waker is a callback of OnResolveWaker.
type Waker interface{ Wake() }

// ItemRef is the offset within a policy.Item of its runtime reference:
// an any holding the work the item stands for, which queues neither see
// nor change. Set by package policy.
var ItemRef uintptr

// Ref returns the runtime reference of the policy.Item at item.
func Ref(item unsafe.Pointer) *any { return (*any)(unsafe.Add(item, ItemRef)) }

// PlainInArrivalOrder reports whether policy p (a policy.Policy) orders
// items without a deadline among themselves by arrival, and after every
// item with one, whatever their Priority, Tag and Name: EDF and FIFO.
// The runtime then keeps such messages in a plain queue of its own while
// nothing else is queued. Set by package policy.
var PlainInArrivalOrder func(p any) bool

// EarliestDeadlineFirst reports whether p (a policy.Policy) is
// policy.EDF(): the runtime may then keep a message whose deadline comes
// out of order apart from the list and the policy's queue. Set by
// package policy.
var EarliestDeadlineFirst func(p any) bool
