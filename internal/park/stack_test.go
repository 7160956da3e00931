package park

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// stackChildEnv marks the child process TestAWaitKeepsTheStackItHas
// runs in, where every goroutine starts with Go's smallest stack (by
// default the runtime starts them with the average in use, which a test
// binary may have raised).
const stackChildEnv = "CRISP_PARK_STACK_CHILD"

// A goroutine with little stack left waits on a Spot without growing
// it, while a WaitGroup's wait, at the same depth, takes a record from a
// runtime cache that a collection has just emptied, and the allocation's
// frames outgrow the stack: the runtime then copies it to one twice the
// size (crisp's suspended processes did so in about a fifth of the bank
// workload's CPU).
func TestAWaitKeepsTheStackItHas(t *testing.T) {
	if !usesRuntimePark {
		t.Skip("this build waits with a WaitGroup (see portable.go)")
	}
	switch runtime.GOOS {
	case "windows", "plan9", "ios":
		t.Skipf("goroutines start with more than the smallest stack on %s", runtime.GOOS)
	}
	if os.Getenv(stackChildEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), stackChildEnv+"=1", "GODEBUG=adaptivestackstart=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a child process: %v\n%s", err, out)
		}
		t.Logf("in a child process:\n%s", out)
		return
	}
	const n = 2000
	spot := movedWaiting(n, func() (wait, release func()) {
		s := new(Spot)
		s.Expect()
		return s.Wait, s.Signal
	})
	group := movedWaiting(n, func() (wait, release func()) {
		wg := new(sync.WaitGroup)
		wg.Add(1)
		return wg.Wait, wg.Done
	})
	t.Logf("of %d goroutines waiting %d bytes deep, %d grew their stacks on a Spot, %d on a WaitGroup", n, waitDepth, spot, group)
	if group < n/2 {
		t.Fatalf("only %d of %d WaitGroup waits grew their stacks: the test no longer measures what it should (see waitDepth)", group, n)
	}
	if spot != 0 {
		t.Fatalf("%d of %d waits on a Spot grew their stacks", spot, n)
	}
}

// waitDepth is how deep, in bytes below its first frame, a goroutine
// waits in TestAWaitKeepsTheStackItHas. On go1.26/amd64 a WaitGroup's
// wait grew the stacks of 1.5% of them 300 bytes deep, 3% at 500 and
// all at 700; a Spot's of none up to 900 (from 1,000, deeper's own
// frames reach the limit).
const waitDepth = 800

// movedWaiting starts n goroutines that each wait waitDepth bytes deep
// with a wait made by prepare; once all have started, it releases them,
// and returns how many found their stack moved (copied to a larger one).
// Collections run first, which empty the runtime's central cache of
// waiter records, and are off meanwhile.
func movedWaiting(n int, prepare func() (wait, release func())) int {
	runtime.GC()
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var moved atomic.Int64
	var started, ended sync.WaitGroup
	started.Add(n)
	ended.Add(n)
	releases := make([]func(), n)
	for i := range n {
		wait, release := prepare()
		releases[i] = release
		go func() {
			defer ended.Done()
			started.Done()
			top := stackAddr()
			deeper(top, waitDepth, wait)
			if stackAddr() != top {
				moved.Add(1)
			}
		}()
	}
	started.Wait()
	for _, r := range releases {
		r()
	}
	ended.Wait()
	return int(moved.Load())
}

// stackAddr returns the address of a local of its own frame.
//
//go:noinline
func stackAddr() uintptr {
	var b byte
	return uintptr(unsafe.Pointer(&b))
}

// deeper calls f from frames at least n bytes below the frame that
// called stackAddr for top (or at once, if the stack moved meanwhile).
//
//go:noinline
func deeper(top uintptr, n int, f func()) {
	d := int(top - stackAddr())
	if d < 0 || d > 1<<16 || d >= n {
		f()
		return
	}
	deeper(top, n, f)
}
