package crisp

import (
	"runtime/debug"
	"time"

	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/ready"
)

// How an actor passes between goroutines.
//
// At most one goroutine holds an actor at a time (fActive): it runs the
// actor's ready work in the loop below, and it is the only goroutine that
// touches the actor's state. A goroutine starts holding an actor when a
// sender finds it idle (start), and stops when nothing is ready (release).
//
// When a handler suspends (Await, AwaitCond, Suspend), its goroutine G
// keeps the handler's stack but gives up the actor: under the actor's
// lock it marks the process suspended, keeps it on the actor's list, and
// passes the actor on (passOn) to a runner if anything is ready, or to
// nobody. The runner is the actor's spare, if one waits, or a new
// goroutine; it chooses the next work itself, on its own stack, so that
// G keeps only the stack its handler needed. G then parks on its Proc's
// wake channel. When what G waits for happens, the process becomes ready
// (resume) and the policy orders it with everything else: whichever
// goroutine holds the actor and takes it from the queue hands the actor
// over by sending on G's wake channel, and then, holding nothing, waits
// as the actor's spare runner for the next suspension (or is dismissed
// when the actor has no process left). G carries on in its handler, and
// when the handler returns, G goes on as the actor's runner. If the actor
// is idle when the process becomes ready and nothing else is, the actor
// goes to G at once, with no goroutine involved. A send on a wake channel
// is the only way the actor moves to a parked goroutine, so at most one
// process of an actor runs at any instant.
//
// A group (group.go) is served the same way by up to one goroutine per
// worker, each running one eligible message at a time.

// runnerGrace is how many times an idle runner yields the processor,
// looking for new work, before it gives up the actor and exits. An actor
// in a conversation (request, reply, request) then keeps its goroutine
// instead of starting one per message, while an idle actor still holds
// none for more than a few microseconds. Runners of an actor whose
// lingers have lately found nothing linger less (see linger).
const runnerGrace = 4

// yieldEvery is how many messages in a row a runner runs before it
// yields the processor, if one of crisp's own goroutines waits for one
// (package ready: a new runner, a process handed its actor back, a
// caller woken in Future.Get, such as those the watchdog's misses wake)
// or while the watchdog has a deadline on the real clock to report
// within 20 ms (watchdog.Watching; one further off, such as the
// bench's Within(time.Hour), made every runner yield every 16 messages
// for the whole run: fork-join with deadlines beside two goroutines
// that never yield took 2.0 s, now 54 ms). Go
// preempts a goroutine that never blocks only every 10 ms or so: a
// runner with a backlog of CPU-bound handlers would otherwise keep them
// waiting behind it for whole time slices, and misses would be reported
// tens of milliseconds late. While deadlines are watched the runtime's
// own work (the collector's workers, timers) also gets a processor at
// these yields; without them the busy and long lag cells of crispbench
// timeliness got worse.
//
// Otherwise a runner does not yield. Such a yield helps only other code,
// and beside goroutines that never yield (CPU-bound code elsewhere in
// the process) it costs a whole time slice: the runner goes to the back
// of the global run queue, behind them. An unconditional yield every 16
// messages made floods far slower than phony beside two such
// goroutines (fork-join 185-280x, bank up to 190x, counting timing out;
// see BENCHMARKS.md). Go's
// preemption still shares the processors with other code, as it does for
// any goroutine that computes.
const yieldEvery = 16

// between runs after the n-th message a runner has run in a row, and
// returns the count of the watchdog's passes (Watchdog.Expired) the
// runner has now seen; seen is the count it had seen before. If a
// watched deadline of the system has passed, it wakes the watchdog (Go
// would fire the watchdog's timer only when the processor holding it
// schedules, which a processor busy with runners does every 10 ms or
// so) and yields the processor to it: so a miss is noticed within one
// handler's run, whatever the handlers' length, and not after yieldEvery
// of them. Otherwise it yields every yieldEvery messages while one of
// crisp's goroutines waits for a processor or a deadline is near
// (watchdog.Watching); on a busy machine, see busy yields below.
//
// And it yields once after each pass of the watchdog that failed messages
// since the runner last looked, if one of crisp's goroutines still waits
// for a processor: the callers the pass woke wait in the run queue of the
// watchdog's processor, which a runner that gets it first (how it gets
// ahead of them was not traced) would otherwise hold for yieldEvery
// handlers. That yield is ready.Yield's, which beside goroutines that
// never yield keeps the runner on its own processor rather than behind
// their time slices. Measured (crispbench timeliness lag, ten actors,
// 1,000 pending, AMD EPYC 2 vCPU, 4 runs each, one stalled run of the old
// build left out), lag p99: 20-50 us handlers 0.44-0.52 ms -> 0.28-0.32
// ms; 250-350 us handlers 2.1-2.5 ms -> 1.7-1.9 ms; beside two such
// goroutines within the runs' spread (busy 60-91 ms -> 64-85 ms, long
// 69-119 ms -> 78-99 ms). Yielding with runtime.Gosched, as first tried,
// took the p99 with 300 us handlers from 9 ms to 0.4 ms (before the
// runners nudged the watchdog), but each yield beside those goroutines
// waited out one of their 10 ms time slices and starved the runners that
// notice deadlines (p99 50 ms -> 160-200 ms). Yielding again after coming
// back, while more passes had failed messages meanwhile (up to four
// times), took the long cell to 0.8-1.2 ms but made detection in the busy
// cell four times later (0.05 -> 0.21-0.25 ms), and 4 of its 16 runs
// stalled for 10-90 ms (the base build: 1 of 16, 27 ms).
//
// A message with a deadline was checked against a fresh reading of the
// clock just before its handler started (late), which nudged the
// watchdog then: checked is true for it, and the clock is not read
// again here.
//
// Busy yields: on a machine busy with other code (ready.Busy: a Gosched
// lately took over a millisecond), the every-yieldEvery yield goes to
// the runner's own processor (ready.Yield), and only once the runner has
// run for a millisecond since it started or last had the processor back
// (ready.Spaced; last holds that instant, and ready.Restart sets it after
// the yield), unless a caller spins for its result
// (ready.Spinning): a spinning caller waits in the global run queue, and
// only a yield to that queue reaches it. Every other goroutine crisp
// counts as ready was made runnable on a processor's own queue, which a
// yield to the processor reaches. Each yield to the global queue waited
// behind the other code's time slices, and every yield, to either
// queue, moves the processor's scheduling count on toward its turn
// (every 61st) to run the global queue's next goroutine first, a
// preempted CPU-bound one, for a whole time slice: four ping-pong pairs
// with 100 messages in flight beside two goroutines that never yield
// stalled for seconds (BENCHMARKS.md, sixteenth session). Yielding to
// the own processor for every waiting goroutine, spinners too (8bbd296,
// every 256 messages, reverted; then at most once a millisecond) cured
// that, but the callers of futures resolved by time.AfterFunc beside ten
// actors running 250-350 us handlers (crisp's own load makes the machine
// Busy) then waited 1.0-1.6 s at p99 against 0.15-0.23 s (crispbench
// timeliness lag, long, 1,000 pending): they spin before they park. With
// the yields to the global queue kept while one spins: 0.17 s, and
// crisp's own lag unchanged. Yielding to the global queue once every 10
// ms instead did not serve those callers either (1.2 s): after a
// Gosched the processor runs its own queue first. Bench, quick, beside
// two such goroutines and one CPU-bound process, crisp/phony, 3 rounds
// (AMD EPYC, 2 vCPU): throughput-4x100 8.17 -> 4.14 (runs 0.56-18.6 s ->
// 0.24-0.62 s), ring-1k 3.37 -> 1.66; 4 rounds: request-reply 5.49 ->
// 2.65, pingpong 2.38 -> 2.02.
//
// Counted from the instant of the runner's previous yield instead (until
// the eighteenth session), a runner that had just waited out one of the
// other code's time slices yielded again within yieldEvery messages of
// getting the processor back, and a new runner within yieldEvery of its
// start. A runtime trace of those four pairs (100,000 round trips each)
// beside two goroutines that never yield: in 1.04 s crisp's goroutines
// ran for 0.12 s and the two for 1.95 s, and crisp's 16,000 schedules a
// second (8,500 of them yields) brought each processor's turn for the
// global queue round within about 0.7 ms of crisp's work. Counted from
// the runner's start and from each time it has the processor back, with
// the global yields timed (see yieldGlobal): crisp ran 0.10 s in
// 0.24-0.36 s, and bench's throughput-4x100 at full size beside the two
// took 1.67x phony's time against 4.50x (3 rounds; quiet, about 2x);
// the quick suite beside them, 10 rounds, moved within its spread or
// better but for big (1.32 -> 1.78, phony's own runs spreading
// 20-fold), and crispbench's lag, crisp's and time.AfterFunc's, stayed
// within spread.
func (a *core) between(n int, checked bool, seen uint32, last *int64) uint32 {
	wd := a.sys.wd
	if !checked && wd.Nudge() {
		a.stepAside()
		return wd.Expired()
	}
	if n%yieldEvery == 0 && (ready.Waiting() || wd.Watching()) {
		if !ready.Busy() || ready.Spinning() {
			a.stepAside()
			return wd.Expired()
		}
		if ready.Spaced(last) { // see busy yields, above
			a.stepAsideBy(yieldOwn)
			ready.Restart(last)
			return wd.Expired()
		}
	}
	if e := wd.Expired(); e != seen {
		if ready.Waiting() {
			a.stepAsideBy(yieldOwn)
		}
		return e
	}
	if e := a.sys.yieldAlways; e > 0 && n%e == 0 {
		a.stepAside() // WithYieldEvery
	}
	return seen
}

// stepAside yields the processor between two messages. Until the runner
// has a processor again, the actor counts as occupied (core.occupied),
// as it does while a handler runs: the runner waits at the back of the
// run queue, behind every other runnable goroutine, possibly for a
// whole time slice of each. So meanwhile
//   - a caller waiting for a result parks rather than spins
//     (call.ResultSoon): one that spun would wait in that queue too and
//     hear of its result, or of its miss, only at its own turn, where a
//     parked one is woken onto the resolver's processor;
//   - a sender queues its message and has its deadline watched itself
//     (post, needWatch) rather than leave both to the runner.
//
// Measured with ten actors running 20-50 us handlers on two processors
// and one caller whose calls miss (AMD EPYC, 2 vCPU): callers that spun
// returned a median 1.1 ms after the watchdog had failed their calls.
// Parking them alone made it worse (miss detected 12 ms late at the
// median): the spinning callers had been what made runners yield (they
// count as ready), and a deadline left in the intake of a runner that
// had stepped aside was watched only once that runner ran again. With
// both, the caller's lag went from 1.2 ms to 14 us at the median and
// from 4.0 ms to 0.57 ms at p99.
//
// Only a runner with a backlog marks its actor: one without takes the
// next message as soon as it runs again, which a caller spinning for it
// (a conversation; its spinning is what makes the runner yield every 16
// messages) is right to expect. Marked in every yield, request-reply in
// bench/ took 0.78x phony's time against 0.63x: a caller in 16 parked
// (5-6 runs each, measured with other work on the machine, as the
// pingpong figures below). The backlog looked at is the intake (messages
// sent since the runner last queued them, such as a busy actor's next
// message to itself): a look at the queue too, under the actor's lock,
// made conversations 10% slower (pingpong 1.02x phony's time against
// 0.91x, 6 runs each), and counting what was queued when the runner took
// its message (noted under the lock it held anyway) made chameneos with
// deadlines 2.2x slower (bench quick, crisp+dl: 41 -> 90 ms, 3 runs
// each; every sender to the busy broker then queued and watched its
// deadline itself) for no lag it was measured to buy. And a plain
// message (no deadline, no options) is left to the runner, while it
// yields as while a handler runs (send): its sender, queueing it itself,
// would only take work off the runner onto its own path, in a
// conversation the critical one.
// A group's runners do not mark the group: it counts as handling while
// any of its workers is active.
//
// It yields with runtime.Gosched, to the back of the global run queue,
// where the other processors find the runner, and not to its own
// processor's queue as a lingering runner does (ready.Yield): beside two
// goroutines that never yield (bench -hogs 2), chameneos then took
// 1.8-2.2x as long (why was not traced). The busy yields of between
// are the exception (stepAsideBy with yieldOwn); its longer chameneos
// tails beside such goroutines may be that effect (BENCHMARKS.md,
// seventeenth session).
func (a *core) stepAside() { a.stepAsideBy(yieldGlobal) }

// stepAside's two ways of yielding, variables so that tests can count
// them: to the global run queue, and to the runner's own processor
// while the machine is busy (ready.Yield). The yield to the global
// queue is timed now and then (ready.Gosched), so that a slow one
// marks the machine busy: in a trace of the four pairs above, Busy had
// lapsed (it lasts a second after the last slow yield anyone timed)
// while the runners went on yielding to the global queue every 16
// messages, 4,400 times in 0.68 s, each waiting behind the CPU-bound
// goroutines' time slices.
var (
	yieldGlobal = ready.Gosched
	yieldOwn    = ready.Yield
)

// stepAsideBy is stepAside yielding with yield: yieldGlobal, or, for
// between's busy yields and its yield after a watchdog pass, yieldOwn
// (ready.Yield), which beside goroutines that never yield goes to the
// back of the runner's own processor's queue.
func (a *core) stepAsideBy(yield func()) {
	if a.cfg.grp == nil {
		a.endHandling()
	}
	if a.cfg.grp != nil || !a.arrived() {
		yield()
		return
	}
	a.flags.Or(fAside)
	yield()
	a.flags.And(^uint32(fAside))
}

// floodNoLinger: on a busy machine (ready.Busy) a runner that has run
// more than parkBatch messages since it last ran out of work, a flood's
// or a convoy's, does not linger when it runs out: it lets its actor go
// at once, and the next send starts a runner in the sender's processor's
// next slot. Its linger's yields each went through the processor's run
// queue, and every 61st trip through it runs a preempted CPU-bound
// goroutine for its whole time slice: a runtime trace of four pairs with
// 100 messages in flight beside two such goroutines, the collector off,
// held 2,196 linger yields in 230 ms, crisp's goroutines running 68 ms
// of it and those two 391. Without the linger, bench's throughput-4x100
// at full size beside them took 971 ms against 1,594 (crisp/phony 2.15
// -> 1.45), ring-1k 461 -> 333 ms (1.66 -> 1.02), the quick suite beside
// them throughput-4x100 2.29 -> 1.23, fork-join 5.89 -> 3.74, the rest
// within spread (3 and 4 alternations; BENCHMARKS.md, twentieth
// session). A conversation's runners, one message at a time, linger or
// park as before: with no linger at all on a busy machine, threadring
// beside those goroutines went 0.50 -> 1.33x phony's time and
// savina-pingpong 1.08 -> 1.79x (eighteenth session).
//
// An actor so let go keeps its flood's mark (fFlood; release clears it
// otherwise), so that the next plain Tell makes its lane (lane.go), as a
// Tell that comes during the linger does on a quiet machine. With the
// mark cleared at the let-go, fork-join's sixty workers, flooded in turn
// by one driver, never made lanes beside two hogs: every message went
// through the intake as a 96-byte Tell allocated on the driver's
// processor, and the runners' walks of those lists, cold in their
// caches (drainList, firstKey), made crisp's CPU per run 2.3 times its
// quiet one. Kept, fork-join beside two hogs took 0.58x the time
// (whole-process pairs; quiet unchanged: the mark is kept only on a
// busy machine; BENCHMARKS.md, thirty-fifth session).
const floodNoLinger = parkBatch

// linger yields the processor up to grace times, while no work arrives
// for the actor, and returns the grace left. It does not yield at all,
// and returns 0, when as many runners of the system as there are
// processors linger already: each yield would only queue behind theirs,
// so the grace period would be neither brief nor useful, and under load
// the lingering runners would pile up by the hundred thousand. Its
// yields are ready.Yield's: where other code holds the processors, the
// runner then waits for its partner on their own processor rather than
// behind that code's time slices.
//
// A runner whose actor's last lingers were in vain (no work came) does
// not linger at all, but for a random one in 2^v of them, v being how
// many in a row were in vain (at most vainCap): an actor that is sent
// one message at a time by ever other actors (a ring, a tree of calls)
// would otherwise pay runnerGrace trips through the scheduler for each
// message, and one in a conversation still finds its partner.
//
// A linger that finds work marks the actor as in a conversation: its
// runners then park rather than linger (parkLinger, convo.go).
func (a *core) linger(grace int) int {
	v, try := a.tryLinger()
	if !try {
		return 0
	}
	s := a.sys
	if s.lingering.Add(1) > s.maxLinger {
		s.lingering.Add(-1)
		return 0 // not in vain: not tried
	}
	for ; grace > 0 && !a.arrived(); grace-- {
		ready.Yield()
	}
	s.lingering.Add(-1)
	a.countLinger(v, grace > 0)
	return grace
}

// tryLinger returns the count v of the actor's lingers in vain, and
// whether to try this one: always at 0, else once in 2^v at random.
func (a *core) tryLinger() (v uint32, try bool) {
	v = a.flags.Load() >> vainShift & vainMax
	return v, v == 0 || ready.Rand()&(1<<v-1) == 0
}

// countLinger counts a linger tried with v in vain before it: one that
// found work clears the count, one in vain adds to it, up to vainCap.
func (a *core) countLinger(v uint32, found bool) {
	switch {
	case !found && v < vainCap:
		a.setVain(v + 1)
	case found && v > 0:
		a.setVain(0)
	}
}

// setVain sets the count of the actor's lingers in vain to v.
func (a *core) setVain(v uint32) {
	for {
		f := a.flags.Load()
		if a.flags.CompareAndSwap(f, f&^vainBits|v<<vainShift) {
			return
		}
	}
}

// start makes sure a goroutine holds the actor, after work was pushed.
func (a *core) start() {
	if !a.acquire() {
		if f := a.flags.Load(); heldNeeds(f) {
			a.wakeHeld(f, false)
		} else if f&fFlood == 0 && a.holder.Load() == 0 {
			a.noteEarly(f)
		}
		return
	}
	a.sys.busy.Add(1)
	// The go statement stays here, not in spawn: this is the frame under
	// a handler's Tell to an idle actor, and one more frame there makes
	// handlers that Tell near the 2 KiB starting stack's limit grow their
	// stacks.
	a.countRunner()
	go a.run(nil)
}

// startPlain is start for a plain message (a Tell or Call without
// options): a handler's runner may hold the new runner back and go on
// as it (handOff).
func (a *core) startPlain() {
	if !a.acquire() {
		if f := a.flags.Load(); heldNeeds(f) {
			a.wakeHeld(f, true)
		} else if f&fFlood == 0 && a.holder.Load() == 0 {
			a.noteEarly(f)
		}
		return
	}
	// An actor that has flooded (it has a lane) takes its work in
	// batches beside its senders: held back, it waited for the sending
	// handler's next message to it (counting 1.09x the time).
	if a.lane.Load() == nil {
		if held, old := a.handOff(); held {
			// Held back, a is not counted busy: the unit of the runner
			// whose handler holds it stands for it (handoff.go).
			if old != nil { // held back before on this processor: it starts now
				old.flags.And(^uint32(fHanded))
				a.sys.busy.Add(1) // old's own count, as startHeld gives it
				old.countRunner()
				go old.run(nil)
			}
			return
		}
	}
	a.sys.busy.Add(1)
	a.countRunner()
	go a.run(nil)
}

// noteEarly counts a message sent to a while a runner holds a but has
// yet to run (holder is 0 until the runner enters: it waits for a
// processor), f being a's flags as the send found them, and at the
// laneFlood-th such message marks the flood (fFlood), as the runner
// does once it finds that many waiting: the next Tell without options,
// or with one Within, makes the lane. On one processor, and beside
// CPU-bound goroutines, a flood's sender runs a whole time slice before
// the runner does, and until then every message was a Tell of its own
// in the intake: in bench's counting 26,000-43,000 of a million at
// GOMAXPROCS=1, 38,000-92,000 beside two hogs, now 19 (throwaway
// counters). Measured (AMD EPYC, 2 vCPU; BENCHMARKS.md, forty-eighth
// session): counting's CPU at GOMAXPROCS=1 0.89x (a profile of 20
// repetitions each); fork-join beside two hogs 118 -> 89 ms (median of
// 5 processes' medians each); quiet, whole-process pairs, fork-join
// 0.89x the time, counting 0.95x, the rest within spread.
//
//go:noinline
func (a *core) noteEarly(f uint32) {
	if a.lane.Load() != nil || !a.laneable() {
		return
	}
	for f&fActive != 0 && f&fFlood == 0 {
		if n := f >> earlyShift & earlyMax; n+1 >= laneFlood {
			a.flags.Or(fFlood)
			return
		}
		if a.flags.CompareAndSwap(f, f+1<<earlyShift) {
			return
		}
		f = a.flags.Load()
	}
}

// heldNeeds reports whether a send that found its actor held, whose
// flags are f, has more to do (wakeHeld): a runner to wake, or the
// actor to list.
func heldNeeds(f uint32) bool { return f&(fParked|fHanded) != 0 || f&(fLive|fActive) == fActive }

// wakeHeld wakes a's runner, parked (fParked) or held back (fHanded),
// for work just sent to a, and lists a held actor that is not in the
// system's live list (listBusy). f is a's flags, read after the send
// found a held. plain says the work may wait for a hand-off (a plain
// message, or one whose deadline is far: see handOff): a runner held
// back by the sending goroutine's own handler may then stay held
// (releaseHanded).
//
//go:noinline
func (a *core) wakeHeld(f uint32, plain bool) {
	if f&fHanded != 0 {
		a.sys.releaseHanded(a, plain)
	}
	if f&fParked != 0 {
		a.sys.wakeParked(a)
	}
	if f&(fLive|fActive) == fActive {
		a.listBusy()
	}
}

// listBusy puts a in the system's live list for a message just sent to
// it while a goroutine holds it: Shutdown must fail that message if the
// holder's handler does not return. A flood lists its actor once, at its
// first message to arrive while the actor is held; the actor stays
// listed until let go with nothing queued (release). It takes no lock of
// the actor's (see System.join): senders never wait for one. If the
// system is shutting down (Shutdown may have walked the lists without
// a), a goroutine of the system's stops a (stopLater), which fails the
// message.
func (a *core) listBusy() {
	if !a.sys.join(a, true) {
		a.stopLater()
	}
}

// countRunner counts a runner goroutine about to be started: in the
// system's goroutines, which Shutdown waits for, and as ready (package
// ready) until it runs (run and runGroup take it off). It comes before
// the go statement, and before the actor's lock is let go where a caller
// holds it, so that Shutdown cannot miss the goroutine.
func (a *core) countRunner() {
	a.sys.gor.Add(1)
	ready.Add(1)
}

// spawn starts a runner goroutine for the actor; first is as for run.
func (a *core) spawn(first *message) {
	a.countRunner()
	go a.run(first)
}

// run is the body of every runner goroutine. first, if not nil, is a
// message or continuation already taken for it to run. It alternates
// schedule, which finds the next work under a.mu, and runOne's steps,
// which run it without. Keeping them apart keeps schedule's large frame
// off the stack while handlers run. The frames under a handler (run's,
// invoke's) stay small: a suspended process's goroutine must fit, with
// the runtime's own frames for parking, in the smallest stack (2 KiB, of
// which the runtime keeps about 900 bytes in reserve), and a handler
// that sends, spawns or awaits must fit there too (see
// stack_internal_test.go). So the loop is here, not in a function of its
// own, and runOne is written out in it: startOne returns before the
// handler starts and endOne is called after it, so that only run's and
// invoke's frames lie under the handler. Without runOne's 72 bytes
// there, a handler may send and spawn 64 bytes deeper on that stack.
//
// A runner that ends holding back the runner of an actor its handler
// woke goes on as that runner, in this loop (handoff.go): a and p are
// the actor and Proc of the runner the goroutine is now.
func (a *core) run(first *message) {
	ready.Done()
	p := newProc(a)
	defer endRunner(&a, &p)
	a.enter(p)
	seen := a.sys.wd.Expired()
	var last int64 // between's busy yields
	for n := 1; ; n++ {
		m, j := a.schedule(p, first)
		if m == nil {
			p.done = true
			next, same := a.exit(p)
			if a = next; a == nil {
				p = nil
				return
			}
			if !same {
				p = newProc(a)
			}
			a.enter(p)
			seen, last, n = a.sys.wd.Expired(), 0, 0
			continue
		}
		first = nil
		if p.batch == 0 {
			// The first message since the runner started or last ran out
			// of work; a flood's next ones run where it notes itself here
			// (or, moved to another processor, hand nothing off).
			a.sys.noteRunner(p)
		}
		if p.batch <= parkBatch {
			p.batch++
		}
		p.answered = j.answered()
		// runOne, written out: one frame fewer under every handler.
		if a.startOne(p, m) {
			if m.ext != nil && m.ext.passesOn() {
				a.invokeInheriting(p, j, m)
			} else {
				a.invoke(p, j)
			}
			a.endOne(p, m)
		}
		seen = a.between(n, m.checked(), seen, &last)
		a.mu.Lock()
		if m.keyed() {
			a.releaseKeys(m) // here, under the lock taken anyway
		}
		if c := a.cs(); c != nil {
			c.dirty = true // a process finished: conditions may hold now
		}
		if m.state.Load() == stRunning { // it ran (it was not late)
			j.recycle()
		}
		if p.hslot != 0 {
			a.afterHanded(p)
		}
	}
}

// enter makes the new runner the actor's holder. Called without a.mu;
// returns with it.
//
// A runner does not put its actor in the system's live list: an actor
// joins it only once it has work besides what its runner is about to
// see: a message sent while it is held (listBusy), a suspended process
// (suspendEnd), a pending continuation (Then), a process in Sleep, a
// backoff (pause), work it is let go with (release). So an actor of a
// chain (a ring, a tree, a ping-pong), which runs one message and lets
// go, takes no shard's lock (BenchmarkChain and fib: see BENCHMARKS.md,
// thirty-third session). An actor that Shutdown has not seen, because
// it was not listed, is stopped here if the system is shutting down, as
// a failed join stopped it before.
//
//go:noinline
func (a *core) enter(p *Proc) {
	a.mu.Lock()
	if !a.live() && a.sys.closed.Load() && !a.stopped() {
		a.mu.Unlock()
		a.stop()
		a.mu.Lock()
	}
	a.holder.Store(uintptr(p.g))
}

// exit ends a runner that has let its actor go (or handed it to a
// resumed process). The goroutine goes on as the runner it held back,
// if any (handoff.go), still counted among the system's goroutines (a
// runner held back is not: see startHeld): exit returns that runner's
// actor, or nil, and the goroutine, uncounted, ends. same reports that
// p itself, made new, is the Proc of that runner: when the stash could
// keep p (keepProc), the goroutine keeps it rather than putting it on
// its processor's stack and taking one back, and its processor's slot,
// which names this goroutine and p, stays as it is (noteRunner then
// writes nothing). Per hop of a chain that was two pins of the
// processor, the stack's push and pop, the slot's compare-and-swap and
// its two stores.
func (a *core) exit(p *Proc) (next *core, same bool) {
	if p.hslot != 0 {
		next = a.sys.takeHanded(p)
	}
	switch {
	case p.xfer: // a was let go keeping its busy unit: it is next's now
		p.xfer = false
		if next == nil { // taken by whoever started it, and counted
			a.sys.busyDone()
		}
	case next != nil:
		a.sys.busy.Add(1) // not a's: a let-go that counted a done
	}
	if next != nil && keepable(a, p) {
		nslot := p.nslot
		p.reuse(next, p.g)
		p.nslot = nslot
		return next, true
	}
	a.sys.forgetRunner(p)
	keepProc(a, p)
	if next == nil {
		a.sys.goroutineDone()
	}
	return next, false
}

// endRunner runs as a single actor's runner goroutine ends: normally
// (*pp is nil: exit has run) or through runtime.Goexit or a panic of
// crisp's own, *pa's runner *pp then being cut short.
func endRunner(pa **core, pp **Proc) {
	p := *pp
	if p == nil {
		return
	}
	// Handlers' panics are recovered in invoke: a panic here is the
	// runtime's own bug and must surface, not deadlock.
	if r := recover(); r != nil {
		panic(r)
	}
	a := *pa
	if p.hslot != 0 {
		if b := a.sys.takeHanded(p); b != nil {
			b.startHeld()
		}
	}
	a.sys.forgetRunner(p)
	if !p.done {
		a.abandon(p) // runtime.Goexit in a handler, or a stopped process
	}
	keepProc(a, p)
	a.sys.goroutineDone()
}

// exitGroupRunner runs as a group's runner goroutine ends, normally or
// through runtime.Goexit.
func (a *core) exitGroupRunner(p *Proc) {
	if !p.done {
		// Handlers' panics are recovered in invoke: a panic here is the
		// runtime's own bug and must surface, not deadlock.
		if r := recover(); r != nil {
			panic(r)
		}
		a.abandon(p) // runtime.Goexit in a handler, or a stopped process
	}
	keepProc(a, p)
	a.sys.goroutineDone()
}

// schedule returns the next message or continuation to run, taken and
// with a.mu released, or nil once the actor has been released or handed
// to a resumed process. It is entered with a.mu held.
//
//go:noinline
func (a *core) schedule(p *Proc, first *message) (*message, job) {
	grace := runnerGrace
	keepFlood := false // a flood's runner lets its actor go without a linger: see floodNoLinger
	for {
		if f := a.flags.Load(); f&(fStopped|fLife) != 0 {
			if p.hslot != 0 {
				// These let the actor go with its busy unit: the runner
				// held back, counted by that unit so far, starts on its own.
				p.flushHanded()
			}
			if f&fStopped != 0 {
				a.quit(p, first)
				return nil, nil
			}
			if first == nil {
				switch a.lifeTurn(p) {
				case lifeExit:
					return nil, nil
				case lifeAgain:
					continue
				}
			}
		}
		if c := a.cs(); c != nil && c.dirty && len(c.conds) > 0 {
			a.mu.Unlock()
			a.checkConds()
			a.mu.Lock()
			continue
		}
		m, j, resume := a.pick(first)
		first = nil
		a.deliverFailed()
		switch {
		case m == nil && grace > 0 && p.hslot != 0:
			// Out of work with a runner held back: no linger or park;
			// this goroutine goes on as that runner (handoff.go).
			a.endHandling()
			p.batch = 0
			grace = 0
		case m == nil && grace > 0:
			a.endHandling()
			batch := p.batch
			p.batch = 0
			if batch <= parkBatch && a.flags.Load()&fConvo != 0 && a.mayPark() {
				c := a.more()
				a.mu.Unlock()
				grace = a.parkLinger(p, c, grace)
				a.mu.Lock()
				continue
			}
			a.mu.Unlock()
			keepFlood = false
			if batch > floodNoLinger && ready.Busy() {
				grace = 0 // a flood's runner: see floodNoLinger
				keepFlood = a.flags.Load()&fFlood != 0
			} else {
				grace = a.linger(grace)
			}
			a.mu.Lock()
			if grace > 0 && a.flags.Load()&fConvo == 0 && a.mayPark() {
				a.flags.Or(fConvo)
			}
		case m == nil:
			// With a runner held back, the actor is let go keeping its
			// busy unit, for that runner to go on with (exit).
			xfer := p.hslot != 0
			if a.letGo(!xfer) {
				p.xfer = xfer
				if keepFlood {
					a.flags.Or(fFlood)
				}
				a.mu.Unlock()
				return nil, nil
			}
			grace = runnerGrace
		case resume:
			if p.hslot != 0 {
				p.flushHanded() // held while crowded (afterHanded): this goroutine waits now
			}
			a.handTo(m, a.procOf(m))
			// The actor is the resumed process's now. This goroutine
			// waits as the actor's spare runner: the next process to
			// suspend will likely need one.
			if !a.standBy(p) {
				return nil, nil
			}
			a.mu.Lock()
			a.holder.Store(uintptr(p.g))
			grace = runnerGrace
		default:
			a.mu.Unlock()
			return m, j
		}
	}
}

// quit ends the runner of a stopped actor; first, a message taken for
// it, fails with ErrStopped. Called with a.mu held; returns without it.
func (a *core) quit(p *Proc, first *message) {
	if first != nil {
		a.addFailure(failure{m: first, err: ErrStopped})
	}
	lf := a.life()
	if lf == nil {
		a.release()
	} else {
		a.quitLife(p) // stays busy until the watchers are told: see quitLife
	}
	a.unlock()
}

// pick takes the next work: first if the runner was started with it,
// else what the policy puts next, which may be a resumed process. Called
// with a.mu held.
func (a *core) pick(first *message) (m *message, j job, resume bool) {
	if first != nil {
		m, j = first, first.work()
	} else {
		m, j, resume = a.next()
	}
	if m != nil && !resume {
		// Deadlines still queued behind m are the watchdog's to report
		// once m runs.
		a.watchQueued()
	}
	return m, j, resume
}

// standBy parks the calling runner, which holds no actor, as a's spare,
// and reports whether it is woken to serve the actor (holding it again)
// rather than dismissed; it reports false at once if a has a spare
// already. Called with a.mu held; returns without it.
func (a *core) standBy(p *Proc) bool {
	if a.stopped() || a.spareRunner() != nil {
		a.mu.Unlock()
		return false
	}
	a.more().spare = p
	p.expectSignal()
	a.mu.Unlock()
	p.waitSignal()
	serve := p.serve
	p.serve = false
	return serve
}

// spareRunner returns the runner parked as the actor's spare, or nil.
// Called with a.mu held.
func (a *core) spareRunner() *Proc {
	c := a.cs()
	if c == nil {
		return nil
	}
	return c.spare
}

// dismissSpare sends the spare runner, if any, away. Called with a.mu
// held.
func (a *core) dismissSpare() {
	c := a.cs()
	if c == nil {
		return
	}
	if sp := c.spare; sp != nil {
		c.spare = nil
		sp.serve = false
		sp.signal()
	}
}

// runOne runs m, just taken, on the calling goroutine, which holds the
// actor: the start-time deadline check, then the handler. Entered and
// left without a.mu; the caller then releases m's keys, if it has any.
// A group's runner calls it; a single actor's runs its steps in its own
// loop (see run).
func (a *core) runOne(p *Proc, m *message, j job) {
	if !a.startOne(p, m) {
		return // the caller releases its keys
	}
	if m.ext != nil && m.ext.passesOn() {
		a.invokeInheriting(p, j, m)
	} else {
		a.invoke(p, j)
	}
	a.endOne(p, m)
}

// startOne is runOne up to the handler: the start-time deadline check,
// which reports false if m is late (it does not run), then m's start,
// which makes it p's message.
func (a *core) startOne(p *Proc, m *message) bool {
	if m.checked() && a.late(m) {
		return false
	}
	if m.counted {
		a.started(p, m)
	}
	if m.state.Load() != stRunning { // a Tell is taken as running (takeState)
		m.state.Store(stRunning)
	}
	if m.ext != nil {
		m.ext.releaseCtx()
	}
	if m.obs != 0 {
		a.observeStart(m)
	}
	a.beginHandler()
	p.m = m
	return true
}

// endOne is runOne after the handler.
func (a *core) endOne(p *Proc, m *message) {
	if a.bound != nil {
		a.finished(p)
	}
	p.m = nil
	if m.obs != 0 {
		a.observeFinish(m)
	}
	if p.x != nil && p.x.thens != nil {
		clear(p.x.thens) // keep the array, not the continuations
		p.x.thens = p.x.thens[:0]
	}
}

// giveKeysBack releases the keys m held, under the lock.
//
//go:noinline
func (a *core) giveKeysBack(m *message) {
	a.mu.Lock()
	a.releaseKeys(m)
	a.unlock()
}

// late reports, and handles, a message taken at or after its deadline:
// it never starts.
//
//go:noinline
func (a *core) late(m *message) bool {
	s := a.sys
	var now time.Time
	if s.bounded.Load() {
		if m.obs == 0 && s.startBound(m.dk) {
			return false // not due, nor anything the watchdog watches
		}
		now = s.nowAnchored()
	} else {
		now = s.now()
	}
	if s.dlKey(now) < m.dk {
		if m.obs != 0 {
			keepStartReading(a.sys, m, now) // Started reuses it (observe.go)
		}
		if s.wd.NudgeAt(now) { // between messages, with the reading at hand: see between
			a.stepAside()
		}
		return false
	}
	m.state.Store(stMissed)
	a.miss(m, now)
	return true
}

// beginHandler marks the actor busy in a handler. A sender that read
// handling as false pushed before this store, and so is in the intake
// now: the check below covers it. Called without a.mu.
//
// The mark stays while the runner goes from one message straight to the
// next: it is cleared where the runner stops taking messages (before it
// lingers, steps aside or releases the actor), where a process suspends,
// and by a Call's handler before its result wakes the caller (call.run),
// not after every message. So a flood of Tells costs no atomic write to
// the actor's flags per message, where it cost three (this Or, and an
// And in tell.run and in runOne); the flags share a cache line with what
// every sender reads. Measured with the Tells taken as running
// (takeState), bench quick, crisp's time, Intel Xeon 2 vCPU, 5
// alternations: throughput-4x100 52.2 -> 44.1 ms, counting 56.0 -> 48.6
// ms, request-reply 20.0 -> 19.3 ms.
func (a *core) beginHandler() {
	if a.flags.Load()&fHandling == 0 {
		a.flags.Or(fHandling)
	}
	if a.intake.Load() != nil {
		a.queueArrivals()
	}
}

// endHandling clears the mark beginHandler kept since the runner's last
// handler, where the runner stops taking messages for a while (it
// lingers or steps aside); a load first, so that it costs no write when
// the mark is clear already (a Call's handler clears it).
func (a *core) endHandling() {
	if a.flags.Load()&fHandling != 0 {
		a.flags.And(^uint32(fHandling))
	}
}

// queueArrivals queues the intake and watches its deadlines, while a
// handler starts.
//
//go:noinline
func (a *core) queueArrivals() {
	a.mu.Lock()
	a.drain()
	a.watchQueued()
	a.unlock()
}

// beginResumed is beginHandler for a process that resumes: it leaves
// what arrived meanwhile in the intake, where the runner's next turn
// will find it, and only makes sure the watchdog covers its deadlines
// (watchArrivals). A process resumes as deep in its goroutine's stack
// as it suspended, and queueing there, through the policy's push, took
// processes as shallow as bank's past the 2 KiB their goroutines
// started with: in bank (Await), 0.15 s of the 0.35 s spent growing
// stacks in a 6.2 s CPU profile (and a grown stack is freed as its
// goroutine ends, not kept for the next). Measured (AMD EPYC 2
// vCPU, BENCHMARKS.md, fortieth session): ABS Listing 1's Await 0.96
// of the time at N = 2,500 and at 100,000; bank unchanged. Called
// without a.mu.
func (a *core) beginResumed() {
	if a.flags.Load()&fHandling == 0 {
		a.flags.Or(fHandling)
	}
	if a.intake.Load() != nil {
		a.watchArrivals()
	}
}

// watchArrivals is queueArrivals for a resumed process (beginResumed):
// the watchdog is armed for the earliest deadline in the intake, a walk
// of the list, rather than the list queued. A sender that found the
// actor not occupied left its deadline to the runner (needWatch), and
// the runner here is the resumed process. What is due already, or an
// intake longer than arrivalsWalk, is queued as queueArrivals queues
// it: rare enough that the depth does not matter.
//
//go:noinline
func (a *core) watchArrivals() {
	a.mu.Lock()
	if a.stopped() { // nothing to watch: the process ends (resumed)
		a.mu.Unlock()
		return
	}
	// The intake is walked under a.mu: a sender only pushes in front of
	// it, and only a holder of a.mu takes it, but for a stopped actor's
	// (intakePush), ruled out above.
	var first *message
	queue := false // queue the intake, as queueArrivals does
	n := 0
	for m := a.intake.Load(); m != nil; m = m.next {
		if n++; n > arrivalsWalk {
			queue = true
			break
		}
		if m.dk != 0 && (first == nil || m.dk < first.dk) {
			first = m
		}
	}
	if !queue && first != nil && first.dk < a.wdKey.Load() {
		dl, now := first.deadlineOf(a.sys), a.sys.now()
		if !now.Before(dl) {
			queue = true // due: it fails now (watchQueued), as queueArrivals fails it
		} else if a.sys.wd.Watch(&a.wd, a.target(), dl, now) {
			a.wdKey.Store(first.dk)
		}
	}
	if queue {
		a.drain()
	}
	a.watchQueued()
	a.unlock()
}

// arrivalsWalk bounds the intake watchArrivals walks.
const arrivalsWalk = 256

// invoke runs j's handler, turning a panic into j's *PanicError. A
// runtime.Goexit passes through (recover returns nil for it); run's
// deferred abandon deals with it. j is p.m's job.
func (a *core) invoke(p *Proc, j job) {
	defer p.recoverHandler()
	j.run(p)
}

// recoverHandler is invoke's deferred call: it turns a panic of the
// handler of p.m into its job's *PanicError. It finds the actor and the
// job through p, rather than being a closure over invoke's arguments, so
// that invoke's frame, under every handler, holds one pointer for it.
func (p *Proc) recoverHandler() {
	if r := recover(); r != nil {
		a, j := p.a, p.m.work()
		pe := &PanicError{Value: r, Stack: debug.Stack()}
		if a.cfg.sup != nil {
			a.crashed(p, pe)
		}
		a.fail(j, pe)
	}
}

// handTo gives the actor to resumed process m's goroutine p. Called with
// a.mu held, by the goroutine giving the actor up.
func (a *core) handTo(m *message, p *Proc) {
	a.forgetProc(m) // running again
	a.holder.Store(uintptr(p.g))
	p.signal()
}

// passOn gives the actor, which the calling goroutine holds and is
// giving up while its process waits, to a runner if work is ready (the
// spare runner, or a new goroutine), or releases it. It does not choose
// the work: the runner does, on its own stack, so that the parking
// goroutine keeps only the stack its handler needed. Called with a.mu
// held.
func (a *core) passOn() {
	if a.queued == 0 && a.pn == 0 && !a.arrived() && a.release() {
		return
	}
	if sp := a.spareRunner(); sp != nil { // a runner waiting for just this
		a.cs().spare = nil
		sp.serve = true
		a.holder.Store(uintptr(sp.g))
		sp.signal()
		return
	}
	if used, _, known := gid.Stack(); known && int(used) > deepSuspension {
		a.countRunner()
		go a.runGrown()
		return
	}
	a.spawn(nil)
}

// A process that suspends deep in its goroutine's stack.
//
// A new runner starts on Go's smallest stack, 2 KiB, of which the
// runtime keeps about 900 bytes free at the bottom. A process whose
// suspension goes deeper than the rest grows its stack there (at the
// registration on the future, the deepest point), and the runtime then
// copies every frame in use to a stack twice the size, looking up each
// frame's pointer map: about 3.4 us for the 17 frames of ABS Listing 1's
// processes (recursiveM five levels down, abs_test.go), where the
// same growth with a few frames in use costs the allocation of the new
// stack and little else. So passOn, on the suspending process's
// goroutine, looks at how deep it is: a process suspending deeper than
// deepSuspension is one whose actor runs deep processes, and the runner
// it starts for the actor's next work, which will likely suspend as
// deep, grows its stack as it starts (runGrown), with nothing on it to
// copy. Measured (ABS Listing 1's Await, AMD EPYC 2 vCPU, test
// binaries alternated; BENCHMARKS.md, thirty-ninth session): at N =
// 2,500, 0.70 (0.65-0.89; 8) of the time, stack copies 17% of its
// profile before, 5.5% after (the new stacks' allocation); at N =
// 100,000, 0.88 (0.82-0.94; 4).
//
// A shallower process starts its actor's next runner as before: most
// suspended processes fit in 2 KiB, which is what a suspended process
// costs (BenchmarkSuspendedMemory).
//
// deepSuspension is the stack in use at passOn (gid.Stack) beyond which
// a process on a 2 KiB stack grows it before it parks, measured on
// go1.26/amd64 with stack_internal_test.go's deeper: 904 bytes when
// the handler's own frames are 192 bytes (awaitMargin: 79 of 2,000
// processes grew, for the runtime's slow paths), 952 at 208 (all
// grew). Under the race detector the runtime keeps twice as much free
// (raceStackReserve) and every process grows.
const deepSuspension = 920 - raceStackReserve

// runGrown is run for a runner started by a process that suspended
// deep (deepSuspension): it first grows its stack to 4 KiB, unless Go
// started it with that much (GODEBUG adaptivestackstart starts
// goroutines with the average stack in use).
func (a *core) runGrown() {
	if _, size, _ := gid.Stack(); size < grownStack {
		stretchStack(0)
	}
	a.run(nil)
}

// grownStack is the stack runGrown grows to: the next size after 2 KiB.
const grownStack = 4096

// stretchStack has a frame large enough that calling it at the top of a
// 2 KiB stack grows the stack to 4 KiB (grownStack), and small enough
// that 4 KiB is room for it: 1,536 bytes, between the 1,000 or so the
// runtime leaves above its reserve and the 3,000 it leaves on 4 KiB.
// Its argument and result index the array, so that the compiler keeps
// it (and the frame).
//
//go:noinline
func stretchStack(i int) byte {
	var b [1536]byte
	b[i%len(b)] = byte(i)
	return b[(i+1)%len(b)]
}

// release gives up the actor and reports true, unless work arrived in
// the meantime: then the actor is kept and release reports false. Called
// with a.mu held.
func (a *core) release() bool { return a.letGo(true) }

// letGo is release; done says whether the actor's busy unit ends with
// it (System.busy). A runner that goes on as the runner it held back
// lets its actor go keeping the unit, which passes to that runner
// (exit).
func (a *core) letGo(done bool) bool {
	g := a.holder.Swap(0)
	a.flags.And(^uint32(fActive | fHandling | fFlood | earlyBits))
	// A sender that pushed before the store above saw the actor held and
	// started nothing: look once more.
	if !a.stopped() && a.arrived() && a.acquire() {
		// Kept: the caller goes on holding the actor, and must be known
		// as its holder again, or a handler it runs next could Get a
		// future of its own actor and wait for good instead of getting
		// ErrDeadlock (CheckWait compares the holder with the caller).
		a.holder.Store(g)
		return false
	}
	if !a.listed() && a.pn == 0 {
		if a.live() {
			a.sys.leave(a)
			a.dismissSpare() // no process left to suspend
		}
	} else if !a.live() {
		a.listWork() // let go with work: Shutdown must find it
	}
	if qs := a.qs; qs != nil && qs.qhead == nil && (qs.q != nil || qs.dl != nil) {
		qs.q, qs.dl = nil, nil // let an idle actor's queues be collected
	}
	a.watchBlocked()
	if a.flags.Load()&fIdle != 0 {
		a.armIdle()
	}
	if done {
		a.sys.busyDone()
	}
	return true
}

// abandon runs when a goroutine leaves through runtime.Goexit: either a
// suspended process ended because its actor stopped (it holds no actor),
// or a handler called Goexit (its message fails and the actor passes to
// a new goroutine).
func (a *core) abandon(p *Proc) {
	m := p.m
	p.m = nil
	if err := p.stopping(); err != nil {
		if m != nil {
			a.fail(m.work(), err)
		}
		a.sys.busyDone() // taken by abort, or by suspend on a stopped actor
		return
	}
	if m != nil && m.keyed() {
		a.giveKeysBack(m)
	}
	if m != nil {
		a.fail(m.work(), errGoexit)
	}
	if g := a.cfg.grp; g != nil {
		a.mu.Lock()
		g.free = append(g.free, p.gw.w)
		g.dropRunner(p)
		a.mu.Unlock()
		a.spawnGroup() // the new goroutine takes this runner's place
		return
	}
	a.flags.And(^uint32(fHandling))
	a.spawn(nil) // still active: the new goroutine takes the actor over
}
