// Package crisp runs actors whose messages carry start deadlines.
//
// An actor ([Spawn]; [SpawnEach] makes many at once) owns a state value
// and runs the handlers sent to it, one at a time, in the order its
// policy chooses: earliest deadline first unless [WithPolicy] says
// otherwise. [Call] sends a handler and returns a [future.Future] of its
// result; [Tell] sends one without a future, and [Send] one with a value
// for it; [Ask] and [AskWithin] send one and wait for its result, for a
// caller with nothing else to do meanwhile. A message may carry an
// absolute start deadline ([Within], [By], or a context's deadline
// through [Context]). A message that has not started when the clock
// reaches its deadline never runs: its future fails with a
// [*deadline.MissedError], at the deadline, even if the actor is busy
// with a long handler at the time. Every future resolves exactly once:
// with the handler's results, a missed deadline, a [*PanicError], a
// [*PolicyError], [ErrStopped], or the context's error.
//
//	sys := crisp.NewSystem()
//	defer sys.Shutdown(context.Background())
//
//	acct := crisp.Spawn(sys, &Account{})
//	f := crisp.Call(acct, func(p *crisp.Proc, a *Account) (int, error) {
//		return a.Balance, nil
//	}, crisp.Within(50*time.Millisecond))
//	balance, err := f.GetWithin(100 * time.Millisecond)
//
// # Waiting inside a handler
//
// A handler may wait for a future without holding its actor, which
// serves its other ready work meanwhile: [Await] keeps the handler's
// goroutine and stack, so it works at any depth of calls;
// [Proc.AwaitCond] waits for a condition on the actor's state, and
// [Proc.Suspend] lets the policy run more urgent work first. A handler
// sent with [CallNext] returns a [Next] instead: a result now ([Return])
// or a continuation ([Then]) that runs on the actor once a future
// resolves, with no goroutine parked meanwhile. Either way the waiting
// work resumes in its message's place in the policy's order, and having
// started it can no longer miss its deadline. A suspended Await holds
// about 3 KB, nearly all of it its goroutine (a 2 KiB stack and the
// runtime's descriptor); a pending Then about 160 bytes
// (BenchmarkSuspendedMemory). A handler that awaits deeper in its own
// calls than 2 KiB allows holds a 4 KiB stack; a runner its actor
// starts for its next work as such a process suspends starts with 4
// KiB, so that the next process as deep does not copy its frames to a
// larger stack as it waits.
//
// # Groups
//
// [SpawnGroup] makes a [Group]: one queue served by several workers,
// each with a state of its own, running messages in parallel. [Key]
// names the data a message touches: messages sharing a key never overlap
// and start in the order they were sent. [Call] and [Tell] send to an
// [Actor] or a [Group] alike (each is a [Ref]).
//
// # Overload
//
// Under overload an actor says no early. [WithCapacity] bounds its
// mailbox: a message sent to a full one fails at once with a
// [*FullError] ([FailWhenFull]), or its sender waits for room, bounded
// by the message's deadline and context ([WaitWhenFull]).
// [WithAdmission] refuses at send, with an [*InfeasibleError], a message
// that by the actor's estimate (its [Cost] hints, or its measured
// handler times) could not start by its deadline. Neither refusal is a
// miss: errors.Is(err, deadline.ErrMissed) is false. Tells, which have
// no future, report every failure to the system's dead-letter hook
// ([WithDeadLetters]).
//
// # Deadline propagation
//
// A message sent from inside a handler inherits from the handler's
// message its context (unless it has one of its own) and, if that
// message was sent with a deadline and a [Cost], its finishing
// deadline: the child's deadline is the earlier of its own and the
// parent's finishing deadline, and the child's own Cost, if any, is
// taken off that. Inheritance only narrows: a child never gets a later
// deadline than it asked for. [Detached] opts out. A send finds its
// handler by the calling goroutine's identity, in a table that holds
// only the handlers with something to pass on: when none runs, a send
// pays one atomic load.
// # Supervision, lifecycle and timers
//
// A handler's panic goes to its caller as a [*PanicError]; what the
// actor does next is its supervision: resume (the default), [Restart]
// with a fresh state, or [StopOnPanic]. [Backoff] spaces restarts and
// [RestartLimit] gives up, stopping the actor and escalating once
// ([OnEscalate], [WithEscalation]), when they come too often. A restart
// swaps the state between two handlers; queued work keeps its order and
// deadlines, and a message whose deadline passes during a backoff is
// reported at its deadline. A group restarts only the failed worker.
//
// A state may implement [StartedHook], [StoppingHook] and [StoppedHook];
// they run on the actor, as handlers. [Actor.Drain] stops an actor
// gracefully, [Actor.Done] and [Actor.Err] tell when and why it ended,
// [Watch] tells another actor, and [IdleTimeout] drains an actor left
// idle. [After] and [Every] send messages later or periodically; each is
// an entry in the system's watchdog, so it runs exactly on a virtual
// clock and costs no goroutine.
//
// # Goroutines
//
// A [System] owns every goroutine it starts and ends them in
// [System.Shutdown]: one
// watchdog goroutine for the whole system, and for each actor with work
// one runner goroutine, started when work arrives and ending a few
// scheduler yields after none is left (an actor in a conversation, one
// whose next message came while its runner lingered, keeps it parked
// for its partner while other actors of the system are busy, at most
// 2 ms of real time; two actors that Tell each other keep none: after
// each Tell the runner lets its actor go, and the two run on one
// goroutine as below). A handler's Tell or Call without options, or
// whose one option is a [Within] of 20 ms or more on the real clock, to
// an idle actor of its own system does not start a goroutine: once the
// handler returns and its own actor has nothing else to do, its runner
// goes on as the other actor's, so a chain of actors (a ring, a
// ping-pong) runs on one goroutine. If the handler's actor has more
// work, if anything else is sent to the other actor, or if the handler
// waits in crisp ([Await], a future's Get, [Proc.Sleep]), the other
// actor's runner starts at once. But while goroutines of crisp's
// already wait for a processor, more work of the same runner's goes
// first (up to 8 of its actor's next messages, and more plain messages
// its handler sends to the other actor); the other actor then runs on
// that goroutine if the runner is out of work by then, or its runner
// starts. A handler that blocks on something else (a channel, a lock)
// or computes for long after such a send delays the other actor's start
// by at most 2 ms of real time. An idle actor holds no goroutine, and
// the system keeps no reference to it, so it is garbage once its
// holders drop it. Handlers run on runner goroutines; an actor runs at
// most one handler at any instant, so a handler may use the actor's
// state freely, without locks.
//
// All functions and methods are safe for concurrent use, except that a
// [Proc] belongs to the handler it was passed to.
//
// Handlers are closures: they capture variables of the code that sends
// them and run on the actor's goroutine, so they cannot be sent to
// another process. Actors serve one process; work from elsewhere comes
// in through a transport of the user's choosing, its deadline passed on
// with [By] or [Context].
//
// # Time
//
// Every time the runtime reads goes through the system's clock
// ([WithClock]; the real clock by default). Tests pass a *clock.Mock and
// advance it only while the system is idle (Add, then
// [System.WaitIdle]), or run
// the whole system inside a testing/synctest bubble, where the real clock
// is virtual. Either way deadlines fire at exactly their instant.
//
// # Observation
//
// [WithObserver] tells an [Observer] of every transition of every
// message ([Event]: sent, started, suspended, resumed, and exactly one
// end: finished, panicked, missed, refused, cancelled, stopped or
// failed), on the goroutine that made it, outside the runtime's locks
// and after the outcome is delivered. Package observe builds per-actor
// figures, a live page, slog records and pprof and trace labels on it;
// a system without an observer pays a nil check per send.
//
// # Costs
//
// Measured on a 2-core VM (BENCHMARKS.md has the commands): a Call and
// Get round trip costs about 1.3 times a hand-written channel request and
// reply, with one allocation; a deadline adds a clock read at send and
// a read of the processor's counter as the message starts (amd64, real
// clock; elsewhere a second clock read); an idle
// actor costs 128 bytes (64 more, once, when it first queues work in its
// policy's order rather than arrival order, has a message fail or a
// process suspend) and a queued deadlined Call with its future 128, its
// deadline held as an 8-byte key (BenchmarkMemory). Senders never wait
// for an actor's lock: they push onto a lock-free
// stack that the actor's runner sorts into its policy queue, in O(1) for
// messages that arrive in order (no deadline, or the same relative
// deadline) and O(log n) otherwise. An actor that has once had a flood
// of Tells waiting (16, found by its runner or counted by its senders
// before the runner ran) keeps a lane for messages that arrive in
// deadline order (about 2.3 KB, 4.3 KB with a spare segment; segments a
// backlog needs beyond those come from, and go back to, a pool all lanes
// share, which the collector empties): a Tell without options, or with
// one Within, then queues 16 bytes there, under a short lock the senders
// share (one compare-and-swap, and one store that also publishes the
// entry; a sender that finds another's hold on a lane holding fewer than
// 127 entries goes through the intake instead), and its message is made
// by the runner that runs it. A Send of a number or a pointer queues its
// value beside it (32 bytes more, in a block the lane's segment makes
// once), and allocates nothing. The lane holds its entries in deadline
// order: a Within whose clock reading lost the race to the lane to
// another sender's later reading takes that later one (it was taken
// during its own send) with its own duration, when the deadline so made
// is no earlier than the last entry's; one that would still come before
// it goes through the intake. The watchdog holds one entry per busy
// actor, not one per message.
//
// What to expect of the choices a handler makes (same VM, BENCHMARKS.md,
// fiftieth session). A deadline's cost is mostly its clock reading,
// which depends on the machine: about 29 ns where the clock source is
// kvm-clock, 42-45 ns a message with the rest of its bookkeeping,
// against 84-103 ns for a plain message at one processor. Each process
// suspended in [Await] is a goroutine of its own, so a burst of
// suspensions costs a goroutine's start and a fresh stack each (the
// runtime frees the stacks of ended goroutines at each collection): a
// bank whose transfers each await a credit took about 3.3 times as long
// as the same bank written with Tell continuations. A [Then] parks no
// goroutine but allocates its continuation, as the Call it waits for
// allocates its message: with a small live heap the collector then runs
// often, and took about 40% of the time of a Then-heavy benchmark (ABS
// Listing 1 at 2,500 calls). Beside goroutines that compute without
// blocking, a runner that never waits is preempted every 10-20 ms like
// them and gets its share of a processor; two goroutines handing work to
// each other over channels were never preempted in the same setting, and
// got more.
package crisp
