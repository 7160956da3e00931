package crisp

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
)

// crisp keeps a new runner goroutine's frames within the stack Go starts
// a goroutine with: the //go:noinline marks on cold paths (runner.go:
// enter, schedule, giveKeysBack, late, queueArrivals; coop.go: suspend,
// suspendStart, resumed; group.go: scheduleGroup; queue.go: noQueue),
// runOne written out in run and Await's registration from its own
// frame (coop.go: awaitResolved), makeQueue's place
// in queue.go and System.now's direct clock read. A runner that outgrows
// that stack copies it, on every new actor's first message (ring-1k 30%
// slower, threadring with deadlines 4x; see BENCHMARKS.md). A handler's
// sends and spawns run on that stack too, above the runner's frames: so
// the runner's loop is in run itself (no serve frame), a plain message
// goes through send, whose frame holds no sendOpts (sendWith has them),
// the callers choose between the two (plainSend) rather than one calling
// the other, and Spawn finds its configuration in lastConfig before the
// map (actor.go). The tests below fail when the assumptions behind that
// tuning break; they are all here.
const (
	// tunedStack is the stack, in bytes, Go starts a goroutine with at
	// the least: the size the frames were trimmed to fit.
	tunedStack = 2048

	// stackGODEBUG is the setting the tests run under. By default
	// (adaptivestackstart=1, since Go 1.19) Go starts goroutines with the
	// average stack in use at the last collection, rounded up to a power
	// of two and at least the minimum: a program of many small actors
	// gets 2 KiB, the case the tuning is for, but a test binary whose
	// earlier tests grew stacks may get 8 KiB and hide everything. So the
	// tests run in a child process where every goroutine starts at the
	// minimum.
	stackGODEBUG = "adaptivestackstart=0"
)

// stackChildEnv marks the child process the tests below run in.
const stackChildEnv = "CRISP_STACK_TEST_CHILD"

// skipUntunedPlatform skips where Go starts goroutines with more than
// its minimum anyway (the runtime adds a system reserve: 8 KiB on
// windows, 4 KiB on plan9 and ios/arm64), so the tuning does not apply.
func skipUntunedPlatform(t *testing.T) {
	switch runtime.GOOS {
	case "windows", "plan9", "ios":
		t.Skipf("Go starts goroutines with more than %d bytes of stack on %s", tunedStack, runtime.GOOS)
	}
}

// inChild reports whether the test runs in the child process. In the
// parent, it runs the test again in a child with GODEBUG=stackGODEBUG,
// fails if the child fails, and reports false.
func inChild(t *testing.T) bool {
	if os.Getenv(stackChildEnv) == "1" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	godebug := stackGODEBUG
	if g := os.Getenv("GODEBUG"); g != "" {
		godebug = g + "," + stackGODEBUG // the last setting wins
	}
	cmd.Env = append(os.Environ(), stackChildEnv+"=1", "GODEBUG="+godebug)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a child process with GODEBUG=%s: %v\n%s", godebug, err, out)
	}
	t.Logf("in a child process with GODEBUG=%s:\n%s", godebug, out)
	return false
}

func TestGoStartsGoroutinesWithTheTunedStack(t *testing.T) {
	skipUntunedPlatform(t)
	if !inChild(t) {
		return
	}
	s := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	metrics.Read(s)
	require.Equal(t, metrics.KindUint64, s[0].Value.Kind(), "runtime/metrics no longer has %s", s[0].Name)
	if got := s[0].Value.Uint64(); got != tunedStack {
		t.Fatalf("Go's starting stack is now %d bytes, not %d: review the //go:noinline tuning in crisp (see the comment at the top of stack_internal_test.go)", got, tunedStack)
	}
}

// A new actor's runner, handling one Tell whose handler blocks, must
// keep the stack it started with. The measure is the stack memory in use
// per goroutine with 4,000 of them blocked at once, beside two controls:
// goroutines that only block (the starting stack, about 2 KiB each) and
// goroutines that first grow theirs (about 4 KiB each).
func TestAFreshRunnerKeepsItsStartingStack(t *testing.T) {
	if !measuringStacks(t) {
		return
	}
	runners, plain, grown := runnerStacks(t)
	t.Logf("stack in use per goroutine: %.0f bytes for runners, %.0f for goroutines that only block, %.0f for ones that grew", runners, plain, grown)
	require.Greater(t, grown-plain, float64(tunedStack)/2, "the measure no longer sees a stack grow")
	assert.Less(t, runners, (plain+grown)/2,
		"a new runner outgrew its %d-byte starting stack handling one Tell: review the //go:noinline tuning in crisp (see the comment at the top of stack_internal_test.go)", tunedStack)
}

// runnerStacks measures the stack in use per goroutine of 4,000 new
// runners, each of a new actor of a system made with opts, handling one
// Tell whose handler blocks; and of two controls: goroutines that only
// block (the starting stack) and goroutines that first grew theirs once.
func runnerStacks(t *testing.T, opts ...Option) (runners, plain, grown float64) {
	const n = 4000
	plain, grown = stackControls(n)
	sys := NewSystem(opts...)
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	actors := make([]*Actor[int], n)
	for i := range actors {
		actors[i] = Spawn(sys, i)
	}
	next := 0
	runners = stackPerGoroutine(n, func(park func()) {
		Tell(actors[next], func(*Proc, int) { park() })
		next++
	})
	return runners, plain, grown
}

// stackPerGoroutine has start start n goroutines, each of which calls
// park, and returns the stack memory in use per goroutine while all of
// them are blocked in park. Collections first return the stacks of
// goroutines that have ended, so that new goroutines take new ones.
func stackPerGoroutine(n int, start func(park func())) float64 {
	return stackPerParked(n, 1, start)
}

// stackPerParked is stackPerGoroutine for starts that each start k
// goroutines calling park: it returns the stack memory in use per
// goroutine while all n*k of them are blocked in park.
func stackPerParked(n, k int, start func(park func())) float64 {
	runtime.GC()
	runtime.GC()
	before := stackInuse()
	parked := make(chan struct{}, n*k)
	release := make(chan struct{})
	var left sync.WaitGroup
	left.Add(n * k)
	park := func() {
		defer left.Done()
		parked <- struct{}{}
		<-release
	}
	for range n {
		start(park)
	}
	for range n * k {
		<-parked
	}
	after := stackInuse()
	close(release)
	left.Wait()
	return float64(int64(after)-int64(before)) / float64(n*k)
}

func stackInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}

// measuringStacks skips a test that measures stacks where the measure
// means nothing (an untuned platform, the race detector), and reports
// whether the caller is the child process the measure runs in (see
// inChild): the parent has only to return.
func measuringStacks(t *testing.T) bool {
	skipUntunedPlatform(t)
	if raceEnabled {
		t.Skip("under the race detector every goroutine outgrows its starting stack: the runtime reserves twice as much at its bottom")
	}
	return inChild(t)
}

// stackControls returns the stack in use per goroutine of n goroutines
// that only block (the starting stack) and of n that first grew theirs
// once: the two ends a measured goroutine is compared with.
func stackControls(n int) (plain, grown float64) {
	plain = stackPerGoroutine(n, func(park func()) { go park() })
	grown = stackPerGoroutine(n, func(park func()) {
		go func() {
			growStack(8)
			park()
		}()
	})
	return plain, grown
}

// growStack recurses through n frames of 256 bytes: eight take a new
// goroutine past 2 KiB.
//
//go:noinline
func growStack(n int) byte {
	var pad [256]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return growStack(n-1) + pad[n%len(pad)]
}

// handlerMargin is how many bytes of its own frames a handler may have
// above a bare handler's, and still Tell an idle actor and Spawn and
// Tell a new one without its runner outgrowing its starting stack. It
// is what the send path's tuning reaches (send.go: send's plain path and
// queueNow; runner.go: the loop in run; actor.go: configFor's
// lastConfig, panicNilActor; runner.go: runOne written out in run); a
// bare handler could not Spawn without a copy before it. On go1.26/amd64
// the senders grow from 320 bytes on (from 256 while runOne's frame lay
// under every handler).
const handlerMargin = 288

// sendMargin is handlerMargin for a handler that Sends: Send's path is
// 48 bytes deeper than Tell's (its frame and its eight words of
// arguments, against Tell's seven, in the handler's frame, count for
// 16 of them; trimmed from 96 bytes deeper by keeping its frame's
// callees' arguments few and its value written in place). On
// go1.26/amd64 Senders grow from 256 bytes on.
const sendMargin = 240

// A handler a few frames deep that Tells an idle actor, and Spawns an
// actor and Tells it, must keep its runner's starting stack: every real
// handler does so, on every new runner (fib, the rings, threadring). So
// must one that does the same with Send.
// handlerMargin bytes deeper than a bare handler, it sends, then blocks,
// and so do the two runners it started: three goroutines per start,
// measured as in TestAFreshRunnerKeepsItsStartingStack; besides, each
// sender checks whether its stack moved (was copied to a larger one).
//
// The collector is off meanwhile: its assists and sweeps run deep
// inside mallocgc, so a sender that allocates during a collection grows
// its stack whatever crisp's frames are. The runtime's rarer slow paths
// remain (a new span for the allocation cache, every few dozen
// allocations): about one sender in ten grows for them, which the bounds
// below allow; before the tuning, nearly all of them grew.
func TestAHandlerDeepInItsStackTellsAndSpawnsOnItsStartingStack(t *testing.T) {
	if !measuringStacks(t) {
		return
	}
	plain, grown := stackControls(4000)
	for _, c := range []struct {
		name   string
		margin int
		sends  func(sys *System, to *Actor[int], park func()) func()
	}{
		{"Tell", handlerMargin, func(sys *System, to *Actor[int], park func()) func() {
			parked := func(*Proc, int) { park() }
			return func() {
				Tell(to, parked)
				Tell(Spawn(sys, 0), parked)
			}
		}},
		{"Send", sendMargin, func(sys *System, to *Actor[int], park func()) func() {
			parked := func(*Proc, int, int) { park() }
			return func() {
				Send(to, parked, 1)
				Send(Spawn(sys, 0), parked, 2)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) { sendsOnStartingStack(t, plain, grown, c.margin, c.sends) })
	}
}

// sendsMargin is sendsOnStartingStack's margin, for its handlers to
// read: captured, it took a slot in their frames, which the margin is
// measured above (Tell's senders grew, at 288 bytes, with it there).
var sendsMargin int

// sendsOnStartingStack is TestAHandlerDeepInItsStackTellsAndSpawnsOnItsStartingStack
// for one way to send: sends returns the sends, on sys, to an idle
// actor to and to a new one, of handlers that call park (made before
// the handler runs: the function it returns is the one frame between
// the handler's depth and the send, as in a handler), from handlers
// margin bytes deeper than a bare handler.
func sendsOnStartingStack(t *testing.T, plain, grown float64, margin int, sends func(sys *System, to *Actor[int], park func()) func()) {
	const n = 4000
	sys := NewSystem()
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	senders := make([]*Actor[int], n)
	idle := make([]*Actor[int], n)
	for i := range senders {
		senders[i], idle[i] = Spawn(sys, i), Spawn(sys, i)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var moved, shallow atomic.Int64
	next := 0
	sendsMargin = margin
	runners := stackPerParked(n, 3, func(park func()) {
		send := sends(sys, idle[next], park)
		Tell(senders[next], func(*Proc, int) {
			top := stackAddr()
			depth := deeper(top, sendsMargin, send)
			if stackAddr() != top {
				moved.Add(1)
			} else if depth < sendsMargin {
				shallow.Add(1)
			}
			park()
		})
		next++
	})
	t.Logf("%d of %d senders outgrew their starting stack; stack in use per goroutine: %.0f bytes for a sender and its two receivers' runners, %.0f for goroutines that only block, %.0f for ones that grew", moved.Load(), n, runners, plain, grown)
	require.Zero(t, shallow.Load(), "the handlers did not reach %d bytes deep", margin)
	require.Greater(t, grown-plain, float64(tunedStack)/2, "the measure no longer sees a stack grow")
	assert.Less(t, moved.Load(), int64(n/4), "%d of %d runners whose handlers sent %d bytes deep outgrew their %d-byte starting stack: trim the frames on the send path (see the comment at the top of stack_internal_test.go)", moved.Load(), n, margin, tunedStack)
	// Half the senders, a third of the goroutines, at twice the stack
	// would put the mean a sixth of the way from plain to grown.
	assert.Less(t, runners, plain+(grown-plain)/6,
		"runners outgrew their %d-byte starting stack handling a Tell that sends %d bytes deep: trim the frames on the send path (see the comment at the top of stack_internal_test.go)", tunedStack, margin)
}

// stackSystem returns a system for a test of stacks, shut down after
// the test, with the collector off until then: its assists and sweeps
// run deep inside mallocgc (see the test above).
func stackSystem(t *testing.T) *System {
	sys := NewSystem()
	gc := debug.SetGCPercent(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		require.NoError(t, sys.Shutdown(context.Background()))
	})
	return sys
}

// awaitMargin is how many bytes of its own frames a handler may have
// above a bare handler's, and still Await on its runner's starting
// stack: the registration on the future (the waiter's node, allocated)
// is the deepest point. It is what Await's tuning reaches (coop.go:
// awaitResolved; runner.go: runOne written out in run). Through park,
// suspend and a closure, and with runOne's frame under every handler,
// processes grew from 64 bytes on; on go1.26/amd64 they grow from 208
// bytes on (at 192, 79 of this test's 2,000 grew; at 208, all:
// measured in the thirty-eighth session, at c834889 and after, where an
// earlier note had said 256). The registration's waiter node and the
// record under register are about as deep: calling register from
// awaitResolved rather than under suspendStart, 48 bytes shallower,
// moved nothing. A Call handler recursing in 80-byte frames, as ABS
// Listing 1's recursiveM does (coop_test.go), awaits on the starting
// stack three levels down and outgrows it four levels down (a throwaway
// measure, BENCHMARKS.md, twenty-third session); recursiveM goes five.
// Processes that deep grow their stacks; the runners they start for
// their actor's next work start grown (passOn, deepSuspension:
// TestADeepProcessStartsItsActorsNextRunnerGrown).
const awaitMargin = 192

// A handler a few frames deep that Awaits a future not yet resolved must
// suspend on its runner's starting stack: a suspended process keeps the
// stack it had, and a copy costs most where processes are many (ABS
// Listing 1 at N = 2,500: 19% of the Await style's profile).
func TestAHandlerDeepInItsStackAwaitsOnItsStartingStack(t *testing.T) {
	if !measuringStacks(t) {
		return
	}
	const n = 2000
	sys := stackSystem(t)
	pr := future.NewPromise[int](nil)
	var moved, shallow, failed atomic.Int64
	var left sync.WaitGroup
	left.Add(n)
	await := func(p *Proc) {
		here := stackAddr()
		if _, err := Await(p, pr.Future()); err != nil {
			failed.Add(1)
		}
		if stackAddr() != here {
			moved.Add(1)
		}
	}
	a := Spawn(sys, 0)
	for range n {
		Tell(a, func(p *Proc, _ int) {
			if deeper(stackAddr(), awaitMargin, func() { await(p) }) < awaitMargin {
				shallow.Add(1)
			}
			left.Done()
		})
	}
	require.NoError(t, sys.WaitIdle(context.Background())) // every process suspended
	pr.Resolve(1, nil)
	left.Wait()
	t.Logf("%d of %d processes awaiting %d bytes deep outgrew their starting stack", moved.Load(), n, awaitMargin)
	require.Zero(t, failed.Load(), "Awaits failed")
	require.Zero(t, shallow.Load(), "the handlers did not reach %d bytes deep", awaitMargin)
	assert.Less(t, moved.Load(), int64(n/4), "processes awaiting %d bytes deep outgrew their %d-byte starting stack: trim the frames on Await's path (see the comment at the top of stack_internal_test.go)", awaitMargin, tunedStack)
}

// stackAddr returns the address of a local of its own frame: called
// from two frames of one goroutine, the difference is how much deeper
// the second is, unless the stack moved between the calls.
//
//go:noinline
func stackAddr() uintptr {
	var b byte
	return uintptr(unsafe.Pointer(&b))
}

// deeper calls f from frames at least n bytes below the caller of
// stackAddr that returned top, and returns how far below they are; or,
// if the stack moved meanwhile (top no longer points into it), calls f at
// once and returns -1. Its own frame is small (48 bytes on amd64), so it
// overshoots n by little.
//
//go:noinline
func deeper(top uintptr, n int, f func()) int {
	d := int(top - stackAddr())
	if d < 0 || d > 1<<16 {
		f()
		return -1
	}
	if d >= n {
		f()
		return d
	}
	return deeper(top, n, f) + 0
}

// A fresh runner whose Call resolves a future that a suspended process
// awaits, while the process's actor is held, must keep its starting
// stack: the wake queues the process (resume, enqueue, the policy's
// push, its item), and future.wake calls a lone waiter without the
// frames several waiters need (before it did, all 2,000 runners here
// copied their stacks, as bank with Await's did in its CPU profile).
// The runner checks whether its stack moved between two Calls of the
// same shape, the first resolving the awaited future, the second
// comparing. The process's side is only counted: suspending while plain
// messages wait behind it makes the actor's policy queue (fold), and
// that allocation takes a new runner's stack past 2 KiB even from
// suspend's own frame (1,923 of 2,000 moved when this test was
// written; not tuned yet).
func TestAResolvingRunnerKeepsItsStartingStack(t *testing.T) {
	if !measuringStacks(t) {
		return
	}
	const n = 2000
	sys := stackSystem(t)
	var movedProcess, movedRunner atomic.Int64
	var left sync.WaitGroup
	left.Add(n)
	for range n {
		a, b := Spawn(sys, 0), Spawn(sys, 0)
		gate, taken, resolved := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var top uintptr
		resolving := true
		// One function for both Calls, so that both compare the same frames.
		onB := func(*Proc, int) (int, error) {
			if resolving {
				resolving = false
				<-taken
				top = stackAddr()
				return 0, nil
			}
			if stackAddr() != top {
				movedRunner.Add(1)
			}
			close(resolved)
			return 0, nil
		}
		Tell(a, func(*Proc, int) { <-gate }) // holds a while the next two arrive
		Tell(a, func(p *Proc, _ int) {
			defer left.Done()
			f := Call(b, onB)
			Call(b, onB)
			top := stackAddr()
			if _, err := Await(p, f); err != nil {
				t.Error(err)
			}
			if stackAddr() != top {
				movedProcess.Add(1)
			}
		})
		Tell(a, func(*Proc, int) { // holds a while b resolves
			close(taken)
			<-resolved
		})
		close(gate)
	}
	left.Wait()
	t.Logf("stacks moved: %d of %d resolving runners; %d of %d processes suspending with messages behind them", movedRunner.Load(), n, movedProcess.Load(), n)
	assert.Less(t, movedRunner.Load(), int64(n/4), "runners whose Call resolved an awaited future outgrew their %d-byte starting stack: trim the frames on the resume path (see the comment at the top of stack_internal_test.go)", tunedStack)
}

// A process that suspends deeper than a 2 KiB stack allows has the
// runner it starts for its actor's next work grow its stack first, with
// nothing on it to copy (passOn, runGrown): the next process, as deep,
// then suspends without moving its stack. A shallow process starts a
// runner on the smallest stack, as every suspended process should keep
// (BenchmarkSuspendedMemory). n processes of one actor, queued behind a
// gate so that each suspends with the next waiting, read their stack's
// size and whether it moved while they awaited.
func TestADeepProcessStartsItsActorsNextRunnerGrown(t *testing.T) {
	if !measuringStacks(t) {
		return
	}
	const n = 200
	for _, c := range []struct {
		name   string
		margin int
		grown  bool
	}{{"deep", 256, true}, {"shallow", 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			sys := stackSystem(t)
			pr := future.NewPromise[int](nil)
			var grown, moved atomic.Int64
			await := func(p *Proc) {
				if _, size, _ := gid.Stack(); size >= grownStack {
					grown.Add(1)
				}
				here := stackAddr()
				if _, err := Await(p, pr.Future()); err != nil {
					t.Error(err)
				}
				if stackAddr() != here {
					moved.Add(1)
				}
			}
			a := Spawn(sys, 0)
			gate := make(chan struct{})
			Tell(a, func(*Proc, int) { <-gate })
			for range n {
				Tell(a, func(p *Proc, _ int) {
					if c.margin == 0 {
						await(p)
						return
					}
					deeper(stackAddr(), c.margin, func() { await(p) })
				})
			}
			close(gate)
			require.NoError(t, sys.WaitIdle(context.Background())) // every process suspended
			pr.Resolve(1, nil)
			require.NoError(t, sys.WaitIdle(context.Background()))
			t.Logf("%d of %d processes started on a grown stack; %d moved theirs while awaiting", grown.Load(), n, moved.Load())
			if c.grown {
				// The first process runs on the runner the gate's Tell
				// started, and grows its stack as it suspends.
				assert.GreaterOrEqual(t, grown.Load(), int64(n-1), "runners started by deep processes did not grow their stacks first")
				assert.Less(t, moved.Load(), int64(n/4), "processes as deep as the one before them moved their stacks while awaiting")
			} else {
				// A few may start on a grown stack on a busy machine (1 or
				// 2 of 200 in about one run in five beside another `go test
				// ./...`; none quiet), though no runner was started grown
				// for them (passOn's runGrown, traced): by inference the
				// runner's paths for a busy machine grew it before the
				// process started.
				assert.Less(t, grown.Load(), int64(n/20), "runners started by shallow processes grew their stacks")
				// The first does: it folds the plain messages behind it into
				// the policy's queue, allocated at its deepest point (see
				// TestAResolvingRunnerKeepsItsStartingStack); a few more may
				// for the runtime's slow paths.
				assert.Less(t, moved.Load(), int64(n/4), "shallow processes moved their stacks while awaiting")
			}
		})
	}
}
