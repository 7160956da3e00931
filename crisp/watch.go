package crisp

import (
	"math"
	"time"

	"github.com/crisprt/crisp/internal/ready"
)

// How the watchdog watches an actor's queued messages.
//
// The watchdog does not hold one entry per message: it holds at most one
// per actor, set at or before the earliest deadline among the actor's
// queued messages, and only while a handler runs (an actor that is not
// running a handler takes its next message at once, and the check made
// then is exact) or while messages wait for a key (see group.go), which
// no runner takes until the key is given back. When the entry fires, the actor fails every queued
// message whose deadline has passed, in one pass under its lock, and
// re-arms the entry for the next deadline.
//
// Keeping the entry exact would cost a watchdog update each time the
// earliest message starts, which under EDF is every message. Instead the
// entry is a lower bound: it moves earlier when a new message needs it
// to (rarely, in steady traffic), never later, and a firing that finds
// nothing due simply re-arms. Senders touch the watchdog only to move
// the entry earlier; the runner only when a handler starts with queued
// deadlines the entry does not cover.

// noWatch is wdKey's value when the watchdog holds no entry for the
// actor.
const noWatch = math.MaxInt64

// key maps a deadline to the integer order the actor's wdKey uses.
func (s *System) key(t time.Time) int64 { return int64(t.Sub(s.epoch)) }

// earlierDeadline orders the deadline index: earliest deadline first,
// then arrival.
func earlierDeadline(x, y *message) bool {
	if x.dk != y.dk {
		return x.dk < y.dk
	}
	return x.seq < y.seq
}

// keysInUse reports whether messages of the actor name keys: some may
// wait in their lines while the actor runs nothing, so their deadlines
// are the watchdog's to report even then. Called with a.mu held.
func (a *core) keysInUse() bool {
	c := a.cs()
	return c != nil && len(c.keys) > 0
}

// watchBlocked watches the deadlines of messages waiting for a key as
// the actor goes idle: no runner will take them until the key comes
// back, which may be never. Called with a.mu held.
func (a *core) watchBlocked() {
	if a.keysInUse() && !a.stopped() {
		a.watchQueued()
	}
}

// needWatch is the sender's side: it has queued a message with deadline
// dl (read against now) while a handler may be running. Called without
// a.mu.
func (a *core) needWatch(dl, now time.Time) {
	if !a.occupied() {
		return // the runner takes its next message soon and checks it then
	}
	if k := a.sys.dlKey(dl); k < a.wdKey.Load() {
		a.watchEarlier(k, dl, now)
	}
}

// needWatchKey is needWatch with keys: k, the deadline's, and since, the
// clock reading's (System.since). It makes times only if the watchdog
// needs them.
func (a *core) needWatchKey(k, since int64) {
	if a.occupied() && k < a.wdKey.Load() {
		a.watchEarlier(k, a.sys.atKey(k), a.sys.atKey(since))
	}
}

// watchEarlier moves the watchdog's entry for the actor to dl, whose
// key is k, if it is still later and a handler still runs.
//
//go:noinline
func (a *core) watchEarlier(k int64, dl, now time.Time) {
	a.mu.Lock()
	if a.occupied() && k < a.wdKey.Load() && !a.stopped() {
		if a.sys.wd.Watch(&a.wd, a.target(), dl, now) {
			a.wdKey.Store(k)
		}
	}
	a.mu.Unlock()
}

// watchQueued makes sure the watchdog will call the actor by the
// earliest deadline queued, and fails what is already due. The runner
// calls it when a handler starts. Called with a.mu held.
func (a *core) watchQueued() {
	if a.firstKey() >= a.wdKey.Load() {
		return
	}
	first, now := a.firstToWatch(a.firstDeadline())
	if first.IsZero() {
		return
	}
	if a.sys.wd.Watch(&a.wd, a.target(), first, now) {
		a.wdKey.Store(a.sys.dlKey(first))
	}
}

// firstToWatch fails the queued messages due at a fresh reading of the
// clock if first, the earliest deadline queued, is, and returns the
// earliest deadline left (the zero time if none) with that reading.
// Called with a.mu held.
func (a *core) firstToWatch(first time.Time) (time.Time, time.Time) {
	now := a.sys.now()
	if !now.Before(first) {
		a.expireDue(now)
		first = a.firstDeadline()
	}
	return first, now
}

// firstDeadline returns the earliest deadline queued, or the zero time.
// The plain messages (see placePlain) are in deadline order, those with
// one first: their earliest is the first's. The deadline index holds
// the list's, or those spilled from the plain ones. A lane is in
// deadline order too (lane.push). Called with a.mu held.
func (a *core) firstDeadline() time.Time {
	var first *message
	if a.phead != nil && a.phead.dk != 0 {
		first = a.phead
	}
	if dl := a.deadlines(); dl != nil && dl.Len() > 0 {
		if m := dl.Peek(); first == nil || m.dk < first.dk {
			first = m
		}
	}
	if l := a.lane.Load(); l != nil {
		if k := a.laneKey(l); k != 0 && (first == nil || k < first.dk) {
			return a.sys.dlTime(k)
		}
	}
	if first == nil {
		return time.Time{}
	}
	return first.deadlineOf(a.sys)
}

// firstKey returns the key of the earliest deadline queued
// (firstDeadline), or noWatch if none: what watchQueued compares with
// the watchdog's entry once a message, without making times. Called
// with a.mu held.
func (a *core) firstKey() int64 {
	k := int64(noWatch)
	if a.phead != nil && a.phead.dk != 0 {
		k = a.phead.dk
	}
	if dl := a.deadlines(); dl != nil && dl.Len() > 0 {
		k = min(k, dl.Peek().dk)
	}
	if l := a.lane.Load(); l != nil && l.dated.Load() {
		if s, ok := l.peek(); ok && s.key() != 0 {
			k = min(k, s.key())
		}
	}
	return k
}

// watchTarget is an actor as the watchdog sees it. Its Expire is a
// type of its own so that it is not promoted onto every Actor: nobody
// but the watchdog may tell an actor that time has passed.
type watchTarget core

func (a *core) target() *watchTarget { return (*watchTarget)(a) }

// Renew is the watchdog's call: the actor's entry has come due. It
// returns the deadline the watchdog is to watch the entry for next (see
// watchdog.Renewer).
func (t *watchTarget) Renew(now time.Time) time.Time { return (*core)(t).expire(now) }

// Expire is never called: the watchdog calls a Renewer's Renew in its
// place. watchdog.Target requires it.
func (t *watchTarget) Expire(time.Time) {
	panic("crisp: internal error: the watchdog called an actor's Expire, not its Renew")
}

// expire fails every queued message whose deadline has passed at now,
// while the actor may be busy with something else, and returns the
// deadline to watch the actor for next if a handler still runs, with
// wdKey set to it: the watchdog watches the entry again for it (see
// watchdog.Renewer), once it has called every target of its batch.
func (a *core) expire(now time.Time) (next time.Time) {
	ready.Lock(&a.mu) // counted while it waits: see ready.Lock
	a.wdKey.Store(noWatch)
	a.drain()
	a.expireDue(now)
	if a.occupied() || a.keysInUse() {
		// What has come due since now fails at once, as the watchdog's
		// next pass would fail it: with many deadlines close together,
		// an actor whose turn came late has several due, and handing
		// each to another pass took BenchmarkMissCapacity from 2.5 to
		// 1.9 million misses a second.
		if next = a.firstDeadline(); !next.IsZero() {
			if next, _ = a.firstToWatch(next); !next.IsZero() {
				a.wdKey.Store(a.sys.dlKey(next))
			}
		}
	}
	ready := a.unblocked()
	a.unlock()
	if ready {
		a.startAny()
	}
	return next
}

// unblocked reports whether work is ready that perhaps no runner will
// take: a message that waited for a key behind one that has just left
// without starting (missed, cancelled) may start now, on an actor that
// is otherwise idle. Called with a.mu held.
func (a *core) unblocked() bool { return a.queued > 0 && a.keysInUse() && !a.stopped() }

// startAny makes sure a runner serves the actor or group. Called
// without a.mu.
func (a *core) startAny() {
	if a.cfg.grp != nil {
		a.startGroup()
	} else {
		a.start()
	}
}

// expireDue misses every queued message whose deadline is at or before
// now. The outcomes go to queues.failed, for delivery after unlocking. Called
// with a.mu held.
func (a *core) expireDue(now time.Time) {
	if l := a.lane.Load(); l != nil {
		a.expireLane(l, now)
	}
	// The plain messages with a deadline come first among them, earliest
	// first (placePlain): the due ones are a prefix. Those spilled from
	// them wait in the deadline index, below.
	nk := a.sys.dlKey(now)
	for m := a.phead; m != nil && m.dk != 0 && nk >= m.dk; m = a.phead {
		a.popPlain(m)
		if m.state.CompareAndSwap(stQueued, stMissed) {
			a.addFailure(failure{m: m, at: now})
		}
	}
	for dl := a.deadlines(); dl != nil && dl.Len() > 0; {
		m := dl.Peek()
		if nk < m.dk {
			return
		}
		dl.Pop()
		if !m.linked {
			a.pn-- // spilled from the plain messages (placePlain)
		}
		if m.state.CompareAndSwap(stQueued, stMissed) {
			a.unqueue(m)
			a.addFailure(failure{m: m, at: now})
		}
	}
}
