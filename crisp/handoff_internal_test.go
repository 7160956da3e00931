package crisp

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/ready"
)

// A handler's plain Tell to an idle actor, its last act, is run by the
// same goroutine once the handler's actor has nothing else to do: no
// goroutine is started for it.
func TestAChainRunsOnTheGoroutineOfItsFirstRunner(t *testing.T) {
	sys := NewSystem()
	defer sys.Shutdown(context.Background())
	const n = 50
	type hopRun struct {
		g    gid.ID
		p    *Proc
		mine bool // the Proc is its actor's
	}
	runs := make(chan hopRun, n)
	var ring []*Actor[int]
	ring, hop := chainOf(sys, n, func(i int, p *Proc) {
		runs <- hopRun{gid.Current(), p, p.a == &ring[i].core}
	})
	Tell(ring[0], hop(0))
	prev := <-runs
	assert.True(t, prev.mine, "hop 0 runs with its actor's Proc")
	moves, procMoves := 0, 0
	for i := 1; i < n; i++ {
		r := <-runs
		assert.True(t, r.mine, "hop %d runs with its actor's Proc", i)
		if r.g != prev.g {
			moves++
		}
		if r.p != prev.p {
			procMoves++
		}
		prev = r
	}
	require.NoError(t, sys.WaitIdle(context.Background()))
	// A hop moves to a new goroutine only when its Tell is not handed
	// off: the sweep may start one held back on a goroutine of its own if
	// the machine keeps this one from running for a millisecond, and a
	// runner that the runtime moved to another processor between its
	// batch's start and its Tell finds its slot naming another goroutine
	// (noteRunner) and starts the next actor at once (under the race
	// detector, about one run in 400 to 1,500: the chain went on from
	// its third hop on one new goroutine). Twice at most; without
	// hand-offs every hop moves.
	assert.LessOrEqual(t, moves, 2, "hops moved to another goroutine")
	// And the goroutine keeps its Proc, made new for each actor (exit).
	assert.LessOrEqual(t, procMoves, 2, "hops moved to another Proc")
}

// A handler that Tells an idle actor and then waits, outside crisp, for
// what that actor does is not left waiting: the sweep starts the actor's
// runner within twice handSweep.
func TestAHandlerThatBlocksAfterItsTellIsNotLeftWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer sys.Shutdown(context.Background())
		waited := waitAfterTell(t, sys)
		assert.LessOrEqual(t, waited, 2*handSweep, "the held-back runner started within two sweeps")
	})
}

// A handler that Tells an idle actor and then waits in crisp (Get on a
// Call, Await) starts the held-back runner first: it waits for no sweep.
func TestAHandlerThatWaitsInCrispStartsTheRunnerItHeldBack(t *testing.T) {
	for name, wait := range map[string]func(p *Proc, c *Actor[int], pr *future.Promise[int]){
		"Get": func(_ *Proc, c *Actor[int], pr *future.Promise[int]) {
			_, _ = Call(c, func(*Proc, int) (int, error) { return pr.Future().Get() }).Get()
		},
		"Await": func(p *Proc, _ *Actor[int], pr *future.Promise[int]) {
			_, _ = Await(p, pr.Future())
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sys := NewSystem()
				defer sys.Shutdown(context.Background())
				a, b, c := Spawn(sys, 0), Spawn(sys, 0), Spawn(sys, 0)
				pr := future.NewPromise[int](nil)
				var waited time.Duration
				f := Call(a, func(p *Proc, _ int) (struct{}, error) {
					start := time.Now()
					Tell(b, func(*Proc, int) { pr.Resolve(1, nil) })
					wait(p, c, pr)
					waited = time.Since(start)
					return struct{}{}, nil
				})
				_, err := f.Get()
				require.NoError(t, err)
				assert.Zero(t, waited, "no sweep waited for")
			})
		})
	}
}

// A handler that goes on sending to the actor it woke starts that
// actor's runner with its second message: a flood runs beside its
// producer, not after it.
func TestASecondSendStartsTheRunnerHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer sys.Shutdown(context.Background())
		a, b := Spawn(sys, 0), Spawn(sys, 0)
		got := make(chan struct{})
		var waited time.Duration
		f := Call(a, func(*Proc, int) (struct{}, error) {
			start := time.Now()
			Tell(b, func(*Proc, int) {})
			Tell(b, func(*Proc, int) { close(got) })
			<-got
			waited = time.Since(start)
			return struct{}{}, nil
		})
		_, err := f.Get()
		require.NoError(t, err)
		assert.Zero(t, waited, "the second Tell started the runner")
	})
}

// crowd makes crisp's goroutines look crowded (crowded) until the test
// ends: one counted as runnable that has not run.
func crowd(t *testing.T) {
	ready.Add(1)
	t.Cleanup(ready.Done)
}

// A runner held back for a handler stays held while its holder's actor
// has more work: for up to maxKept messages that take less than handKeep
// of real time, or, while crisp's goroutines wait for processors
// (crowded), whatever they take. The handler's own further Tell to it
// leaves it held only while crowded. A message from another goroutine
// or with a near deadline, or a process of the holder's actor that
// resumes, starts it at once. Each case's handler then waits on a
// channel, which crisp cannot see, for the held actor: how long it
// waited says whether the runner was held. (In a testing/synctest
// bubble the clock moves only while every goroutine waits: runs of
// handlers take no time but for the case that sleeps.)
func TestARunnerHeldBackWaitsForItsHoldersShortWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run makes the waiting handler wait for b (close(done) in a
		// handler of b), and returns how long it waited.
		run               func(t *testing.T, a, b *Actor[int]) time.Duration
		held, heldCrowded bool // when not crowded, and when crowded
	}{
		{"the holder's actor has more work", func(t *testing.T, a, b *Actor[int]) time.Duration {
			return holdThenWait(t, a, b, func() {})
		}, true, true},
		{"the holder's actor has more work that takes long", func(t *testing.T, a, b *Actor[int]) time.Duration {
			return holdThenWait(t, a, b, func() {
				// A handler that computes for handKeep: in the bubble, a
				// timer crisp cannot see, on the bubble's clock.
				Tell(a, func(*Proc, int) { <-time.After(handKeep) })
			})
		}, false, true},
		{"the holder's actor has a backlog", func(t *testing.T, a, b *Actor[int]) time.Duration {
			return holdThenWait(t, a, b, func() {
				for range maxKept { // b waits for these, and no more
					Tell(a, func(*Proc, int) {})
				}
			})
		}, false, false},
		{"the handler sends it more", func(t *testing.T, a, b *Actor[int]) time.Duration {
			return handlerWaits(t, a, func(done chan struct{}) {
				Tell(b, func(*Proc, int) {})
				Tell(b, func(*Proc, int) { close(done) })
			})
		}, false, true},
		{"another goroutine sends to it", func(t *testing.T, a, b *Actor[int]) time.Duration {
			held := make(chan struct{})
			go func() {
				<-held
				Tell(b, func(*Proc, int) {}) // from this goroutine: not the holder's
			}()
			return handlerWaits(t, a, func(done chan struct{}) {
				Tell(b, func(*Proc, int) { close(done) })
				close(held)
			})
		}, false, false},
		{"the handler sends it a near deadline", func(t *testing.T, a, b *Actor[int]) time.Duration {
			return handlerWaits(t, a, func(done chan struct{}) {
				Tell(b, func(*Proc, int) {})
				Tell(b, func(*Proc, int) { close(done) }, Within(handFar-1))
			})
		}, false, false},
		{"a process of the holder's actor resumes", func(t *testing.T, a, b *Actor[int]) time.Duration {
			pr := future.NewPromise[int](nil)
			done := make(chan struct{})
			var waited time.Duration
			f := Call(a, func(p *Proc, _ int) (struct{}, error) {
				_, _ = Await(p, pr.Future())
				start := time.Now()
				<-done
				waited = time.Since(start)
				return struct{}{}, nil
			})
			Tell(a, func(*Proc, int) {
				Tell(b, func(*Proc, int) { close(done) })
				pr.Resolve(1, nil)
			})
			_, err := f.Get()
			require.NoError(t, err)
			return waited
		}, false, false},
	} {
		for _, crowded := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, crowded %v", tc.name, crowded), func(t *testing.T) {
				handOffBubble(t, crowded, func(t *testing.T, sys *System) {
					waited := tc.run(t, Spawn(sys, 0), Spawn(sys, 0))
					if tc.held || crowded && tc.heldCrowded {
						assert.Positive(t, waited, "held back until a sweep")
						assert.LessOrEqual(t, waited, 2*handSweep, "the held-back runner started within two sweeps")
					} else {
						assert.Zero(t, waited, "started at once")
					}
				})
			})
		}
	}
}

// handOffBubble runs body with a new system in a testing/synctest
// bubble on one processor, crowded (crowd) if asked. One processor:
// handOff finds the sending handler's runner through its processor's
// slot, which the runner fills as its batch starts (noteRunner). A
// runner that blocked in a handler (a test's gate) and came back on the
// other processor held nothing back and started the other actor at
// once: under the race detector, about one run in 400 of "the holder's
// actor has more work, crowded true", and 6-9 runs in 300 of two tokens
// travelling together (at ca8f302 as after it).
func handOffBubble(t *testing.T, crowded bool, body func(t *testing.T, sys *System)) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		if crowded {
			crowd(t)
		}
		sys := NewSystem()
		defer sys.Shutdown(context.Background())
		body(t, sys)
	})
}

// handlerWaits runs, in a handler of a, send and then a wait on done,
// which crisp cannot see: it returns how long the wait took.
func handlerWaits(t *testing.T, a *Actor[int], send func(done chan struct{})) time.Duration {
	done := make(chan struct{})
	var waited time.Duration
	_, err := Call(a, func(*Proc, int) (struct{}, error) {
		start := time.Now()
		send(done)
		<-done
		waited = time.Since(start)
		return struct{}{}, nil
	}).Get()
	require.NoError(t, err)
	return waited
}

// holdThenWait queues, behind a gate, a message of a that holds b back,
// then what more queues, then (waitIn) a message that waits for b: it
// returns how long that one waited.
func holdThenWait(t *testing.T, a, b *Actor[int], more func()) time.Duration {
	gate := make(chan struct{})
	Tell(a, func(*Proc, int) { <-gate }) // so that all come queued
	done := make(chan struct{})
	Tell(a, func(*Proc, int) { Tell(b, func(*Proc, int) { close(done) }) })
	more()
	return waitIn(t, a, gate, done)
}

// waitIn opens gate and then, in a message to a queued behind the one
// that holds b back, waits for done: it returns how long it waited.
func waitIn(t *testing.T, a *Actor[int], gate chan struct{}, done chan struct{}) time.Duration {
	var waited time.Duration
	f := Call(a, func(*Proc, int) (struct{}, error) {
		start := time.Now()
		<-done
		waited = time.Since(start)
		return struct{}{}, nil
	})
	close(gate)
	_, err := f.Get()
	require.NoError(t, err)
	return waited
}

// Tokens of a ring that travel together travel on one goroutine,
// whether or not crisp's goroutines wait for processors: the leading
// token's hand-off stays held while its actor runs the tokens behind
// it, whose Tells join it (in a testing/synctest bubble the handlers
// take no time, so handKeep never runs out).
func TestTokensTravellingTogetherShareAGoroutine(t *testing.T) {
	for _, tokens := range []int{2, 10} {
		for _, crowded := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d tokens, crowded %v", tokens, crowded), func(t *testing.T) {
				handOffBubble(t, crowded, func(t *testing.T, sys *System) {
					const n = 40
					gs := make(chan string, tokens*n)
					ring, hop := chainOf(sys, n, func(int, *Proc) { gs <- goroutineNumber() })
					gate := make(chan struct{})
					Tell(ring[0], func(*Proc, int) { <-gate })
					for range tokens {
						Tell(ring[0], hop(0))
					}
					close(gate)
					require.NoError(t, sys.WaitIdle(context.Background()))
					close(gs)
					seen := map[string]int{}
					for g := range gs {
						seen[g]++
					}
					assert.Len(t, seen, 1, "goroutines the %d hops ran on", tokens*n)
				})
			})
		}
	}
}

// chainOf spawns n actors of sys and returns them with hop: hop(i) is a
// handler for the i-th that calls at(i, p) and then, but for the last,
// Tells the next one hop(i+1).
func chainOf(sys *System, n int, at func(i int, p *Proc)) (ring []*Actor[int], hop func(i int) func(*Proc, int)) {
	ring = make([]*Actor[int], n)
	for i := range ring {
		ring[i] = Spawn(sys, i)
	}
	hop = func(i int) func(*Proc, int) {
		return func(p *Proc, _ int) {
			at(i, p)
			if i+1 < n {
				Tell(ring[i+1], hop(i+1))
			}
		}
	}
	return ring, hop
}

// goroutineNumber returns the runtime's number of the calling goroutine,
// which, unlike a gid.ID, no later goroutine reuses.
func goroutineNumber() string {
	var buf [64]byte
	f := strings.Fields(string(buf[:runtime.Stack(buf[:], false)]))
	return f[1] // "goroutine N [running]:"
}

// Shutdown starts the runners held back, which then fail what their
// actors hold with ErrStopped, and waits for them: nothing is lost.
func TestShutdownStartsTheRunnersHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		a, b := Spawn(sys, 0), Spawn(sys, 0)
		inA := make(chan struct{})
		release := make(chan struct{})
		var fb *future.Future[int]
		Tell(a, func(*Proc, int) {
			fb = Call(b, func(*Proc, int) (int, error) { return 1, nil })
			close(inA)
			<-release
		})
		<-inA
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopped := make(chan error)
		go func() { stopped <- sys.Shutdown(ctx) }()
		synctest.Wait()
		assert.True(t, fb.Ready(), "Shutdown started b's runner while a's handler still held it back")
		close(release)
		require.NoError(t, <-stopped)
		v, err := fb.Get()
		if err != nil {
			assert.ErrorIs(t, err, ErrStopped)
		} else {
			assert.Equal(t, 1, v)
		}
	})
}

// A message whose deadline is at least handFar away on the real clock
// hands off as a plain one does: held back, it is started by the sweep
// for a handler that blocks outside crisp. A nearer deadline, or one on
// another clock, starts the receiver's runner at once: the hold could
// make it miss. Whatever gives the deadline (a Within, a By, a context,
// the earliest of several) and whatever other options the message has.
func TestADeadlineHandsOffOnlyWhenFarOnTheRealClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		mock bool
		opts func(*testing.T) []SendOption // made in the bubble: By and contexts read its clock
		held bool
	}{
		{"far", false, within(time.Hour), true},
		{"just far enough", false, within(handFar), true},
		{"near", false, within(handFar - 1), false},
		{"far on a mock clock", true, within(time.Hour), false},
		{"a far By", false, func(*testing.T) []SendOption { return []SendOption{By(time.Now().Add(time.Hour))} }, true},
		{"a near By", false, func(*testing.T) []SendOption { return []SendOption{By(time.Now().Add(handFar / 2))} }, false},
		{"a priority, no deadline", false, func(*testing.T) []SendOption { return []SendOption{Priority(3)} }, true},
		{"a priority, no deadline, on a mock clock", true, func(*testing.T) []SendOption { return []SendOption{Priority(3), Tag("t")} }, true},
		{"far, with a name", false, func(*testing.T) []SendOption { return []SendOption{Within(time.Hour), MessageName("n")} }, true},
		{"a context without a deadline", false, func(*testing.T) []SendOption { return []SendOption{Context(context.Background())} }, true},
		{"a context's near deadline under a far Within", false, func(t *testing.T) []SendOption {
			ctx, cancel := context.WithTimeout(context.Background(), handFar/2)
			t.Cleanup(cancel)
			return []SendOption{Within(time.Hour), Context(ctx)}
		}, false},
		{"a context's far deadline", false, func(t *testing.T) []SendOption {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			t.Cleanup(cancel)
			return []SendOption{Context(ctx)}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opts []Option
				if tc.mock {
					opts = append(opts, WithClock(clock.NewMock()))
				}
				sys := NewSystem(opts...)
				defer sys.Shutdown(context.Background())
				waited := waitAfterTell(t, sys, tc.opts(t)...)
				if tc.held {
					assert.Positive(t, waited, "held back until a sweep")
					assert.LessOrEqual(t, waited, 2*handSweep, "the held-back runner started within two sweeps")
				} else {
					assert.Zero(t, waited, "started at once")
				}
			})
		})
	}
}

func within(d time.Duration) func(*testing.T) []SendOption {
	return func(*testing.T) []SendOption { return []SendOption{Within(d)} }
}

// waitAfterTell runs a handler of a new actor of sys that Tells another
// new actor with opts and then waits on a channel, which crisp cannot
// see, for that Tell's handler: it returns how long the handler waited
// (on the bubble's clock, in a synctest test).
func waitAfterTell(t *testing.T, sys *System, opts ...SendOption) time.Duration {
	a, b := Spawn(sys, 0), Spawn(sys, 0)
	return handlerWaits(t, a, func(done chan struct{}) {
		Tell(b, func(*Proc, int) { close(done) }, opts...)
	})
}

// A chain's hops leave the system's busy count alone: an actor held
// back is counted by the unit of the runner that holds it, which passes
// to it when that runner goes on as it (exit), so a handler that has
// just woken the next actor sees one unit, its own. When someone else
// starts the runner held back (here a second message to it), that one
// counts it, and the holder's unit ends with its actor: the count comes
// back to zero.
func TestAHandOffPassesTheBusyUnitOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer sys.Shutdown(context.Background())
		const n = 20
		ring := make([]*Actor[int], n)
		for i := range ring {
			ring[i] = Spawn(sys, i)
		}
		busy := make([]int64, n)
		var hop func(p *Proc, i int)
		hop = func(p *Proc, i int) {
			if i+1 < n {
				Tell(ring[i+1], func(p *Proc, j int) { hop(p, j) })
			}
			busy[i] = sys.busy.Load()
		}
		Tell(ring[0], func(p *Proc, i int) { hop(p, i) })
		require.NoError(t, sys.WaitIdle(context.Background()))
		for i, b := range busy {
			assert.EqualValues(t, 1, b, "hop %d: the busy count after waking the next actor", i)
		}
		assert.Zero(t, sys.busy.Load())

		a, b := Spawn(sys, 0), Spawn(sys, 0)
		var inside int64
		Tell(a, func(*Proc, int) {
			Tell(b, func(*Proc, int) {}) // held back
			Tell(b, func(*Proc, int) {}) // starts it: counted now
			inside = sys.busy.Load()
		})
		require.NoError(t, sys.WaitIdle(context.Background()))
		assert.EqualValues(t, 2, inside, "the holder's unit and the started runner's")
		assert.Zero(t, sys.busy.Load(), "the holder's unit ended with its actor")
	})
}
