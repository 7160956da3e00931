package gid_test

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/internal/gid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// These tests guard what the package assumes of the Go runtime (see the
// package doc): they are meant to fail on the first Go release where an
// assumption breaks. Each runs for both readings: Current (on amd64 and
// arm64, assembly reading the runtime's descriptor of the goroutine) and
// the portable one, which is Current elsewhere.
var readings = []struct {
	name string
	id   func() gid.ID
}{
	{"Current", gid.Current},
	{"from the stack trace", gid.FromStack},
}

// header is the first line of runtime.Stack's trace, as the portable
// reading expects it.
var header = regexp.MustCompile(`^goroutine ([1-9][0-9]*) \[`)

// goid returns the runtime's number for the calling goroutine, read from
// the header of its stack trace independently of the package.
func goid() (uint64, error) {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	m := header.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("runtime.Stack's trace no longer starts %q: %q", "goroutine N [", b)
	}
	return strconv.ParseUint(string(m[1]), 10, 64)
}

// TestAgreesWithTheRuntimesGoroutineNumbers holds 200 goroutines alive
// at once and checks that IDs and the runtime's goroutine numbers pair
// one to one: no ID is zero, and no two live goroutines share an ID.
func TestAgreesWithTheRuntimesGoroutineNumbers(t *testing.T) {
	for _, r := range readings {
		t.Run(r.name, func(t *testing.T) {
			type pair struct {
				id gid.ID
				n  uint64
			}
			const live = 200
			pairs := make([]pair, live+1)
			var err error
			pairs[live].n, err = goid()
			require.NoError(t, err)
			pairs[live].id = r.id()

			var started, done sync.WaitGroup
			release := make(chan struct{})
			for i := range live {
				started.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					n, err := goid()
					assert.NoError(t, err)
					pairs[i] = pair{r.id(), n}
					started.Done()
					<-release // all alive at once: no descriptor is reused
				}()
			}
			started.Wait()
			byID := make(map[gid.ID]uint64, len(pairs))
			byN := make(map[uint64]gid.ID, len(pairs))
			for _, p := range pairs {
				assert.NotZero(t, p.id, "goroutine %d", p.n)
				if n, dup := byID[p.id]; dup {
					t.Errorf("goroutines %d and %d, both alive, share ID %#x", n, p.n, p.id)
				}
				if id, dup := byN[p.n]; dup {
					t.Errorf("IDs %#x and %#x both belong to goroutine %d", id, p.id, p.n)
				}
				byID[p.id], byN[p.n] = p.n, p.id
			}
			close(release)
			done.Wait()
		})
	}
}

// TestStableWithinAGoroutine checks that a goroutine's ID stays the same
// through everything that moves it: a stack copied to a larger one, a
// yield, a wiring to its thread and back, a blocking receive, a
// collection (which may shrink and move its stack), and a move to another
// OS thread. Fifty goroutines go through it at once, so that they also
// pass between the processors and threads.
func TestStableWithinAGoroutine(t *testing.T) {
	for _, r := range readings {
		t.Run(r.name, func(t *testing.T) {
			const n = 50
			var arrived, done sync.WaitGroup
			var movedAway, missedMoves atomic.Int32
			wake := make(chan struct{})
			arrived.Add(n)
			done.Add(n)
			for range n {
				go func() {
					defer done.Done()
					id := r.id()
					check := func(after string) {
						assert.Equal(t, id, r.id(), "after %s", after)
					}

					var here byte
					at := uintptr(unsafe.Pointer(&here))
					assert.Equal(t, id, deep(64, r.id), "64 KiB down the stack")
					assert.NotEqual(t, at, uintptr(unsafe.Pointer(&here)), "the stack did not move: make deep go deeper")
					check("the stack grew and moved")

					runtime.Gosched()
					check("runtime.Gosched")

					runtime.LockOSThread()
					check("runtime.LockOSThread")
					runtime.UnlockOSThread()
					check("runtime.UnlockOSThread")

					arrived.Done()
					<-wake
					check("a blocking receive")

					runtime.GC()
					check("runtime.GC")

					switch leaveThread() {
					case moved:
						check("a move to another OS thread")
						movedAway.Add(1)
					case stayed:
						t.Error("leaveThread did not leave its thread")
					case missed:
						missedMoves.Add(1)
					}
				}()
			}
			arrived.Wait()
			close(wake)
			done.Wait()
			if threadID() >= 0 {
				// Most goroutines move (on 2 cores under -race, all but a
				// few); one is enough for the check to mean something.
				assert.NotZero(t, movedAway.Load(), "no goroutine was moved to another OS thread")
			}
			if m := missedMoves.Load(); m > 0 {
				t.Logf("%d of %d goroutines could not be moved to another OS thread", m, n)
			}
		})
	}
}

// deep recurses n times through 1 KiB frames, so the stack grows and is
// copied, and returns id read at the bottom.
//
//go:noinline
func deep(n int, id func() gid.ID) gid.ID {
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return id()
	}
	x := deep(n-1, id)
	if pad[n%len(pad)] != byte(n) {
		panic("stack corrupted")
	}
	return x
}

type leave int

const (
	moved leave = iota
	stayed
	missed  // no helper landed on the caller's thread
	unknown // the OS thread's ID cannot be read here
)

// leaveThread returns once the calling goroutine runs on another OS
// thread than it ran on when called. It starts a helper goroutine, which
// the scheduler most likely runs on the same processor and thread as
// soon as the caller blocks; the helper wires itself to that thread
// (runtime.LockOSThread) and wakes the caller. A wired thread runs no
// other goroutine, so the caller must wake on another. If the helper
// lands on another thread, it tries again, up to 100 times.
func leaveThread() leave {
	from := threadID()
	if from < 0 {
		return unknown
	}
	for range 100 {
		onFrom := make(chan bool)
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			onFrom <- threadID() == from
			<-done
		}()
		if <-onFrom {
			now := threadID()
			close(done)
			if now == from {
				return stayed
			}
			return moved
		}
		close(done)
	}
	return missed
}

func BenchmarkCurrent(b *testing.B) {
	for b.Loop() {
		_ = gid.Current()
	}
}

func BenchmarkFromStack(b *testing.B) {
	for b.Loop() {
		_ = gid.FromStack()
	}
}
