package crisp

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crisp keeps a new runner goroutine's frames within the stack Go starts
// a goroutine with: the //go:noinline marks on cold paths (runner.go:
// enter, schedule, giveKeysBack, late, queueArrivals; coop.go: suspend,
// resumed; group.go: scheduleGroup; queue.go: noQueue), makeQueue's place
// in queue.go and System.now's direct clock read. A runner that outgrows
// that stack copies it, on every new actor's first message (ring-1k 30%
// slower, threadring with deadlines 4x; see BENCHMARKS.md). The tests
// below fail when the assumptions behind that tuning break; they are
// all here.
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
	skipUntunedPlatform(t)
	if raceEnabled {
		t.Skip("under the race detector every goroutine outgrows its starting stack: the runtime reserves twice as much at its bottom")
	}
	if !inChild(t) {
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
	plain = stackPerGoroutine(n, func(park func()) { go park() })
	grown = stackPerGoroutine(n, func(park func()) {
		go func() {
			growStack(8)
			park()
		}()
	})
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
	runtime.GC()
	runtime.GC()
	before := stackInuse()
	parked := make(chan struct{}, n)
	release := make(chan struct{})
	var left sync.WaitGroup
	left.Add(n)
	park := func() {
		defer left.Done()
		parked <- struct{}{}
		<-release
	}
	for range n {
		start(park)
	}
	for range n {
		<-parked
	}
	after := stackInuse()
	close(release)
	left.Wait()
	return float64(int64(after)-int64(before)) / float64(n)
}

func stackInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
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
