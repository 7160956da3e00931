//go:build go1.25 && !go1.27 && !race

package park

import (
	"sync/atomic"
	"unsafe"
)

// Spot is a place to park one goroutine. The zero Spot needs Expect
// before use.
//
// state is 0 while the waiter may still park, signalled once Signal has
// come, and otherwise the address of the parked goroutine's runtime
// descriptor (its g). Descriptors are never freed by the runtime (it
// keeps every one in its list of all goroutines), so the address may be
// kept as an integer.
type Spot struct {
	state atomic.Uintptr
}

const signalled = 1

func (s *Spot) expect() { s.state.Store(0) }

func (s *Spot) signal() {
	for {
		v := s.state.Load()
		if s.state.CompareAndSwap(v, signalled) {
			if v != 0 {
				goready(v, 1)
			}
			return
		}
	}
}

func (s *Spot) wait() {
	for s.state.Load() != signalled {
		gopark(commit, unsafe.Pointer(s), waitReasonDurable, traceBlockGeneric, 1)
	}
}

// commit runs on the runtime's system stack once the waiter's g is
// marked waiting: it publishes the g for Signal, or, if Signal came
// first, reports false and the runtime lets the waiter run on. Code on
// the system stack must not grow it.
//
//go:nosplit
func commit(g uintptr, spot unsafe.Pointer) bool {
	return (*Spot)(spot).state.CompareAndSwap(0, g)
}

// What this assumes of the runtime (Go 1.25 and 1.26; the build
// constraint keeps later releases on portable.go until they are checked,
// and race-detector builds too: the detector's atomics crash on the
// system stack commit runs on):
//
//   - gopark and goready keep the signatures the runtime promises to the
//     packages that link to them (go.dev/issue/67401): the g, which this
//     package holds as an integer, is passed in an integer register
//     either way.
//   - waitReasonDurable is the runtime's waitReasonSynctestWaitGroupWait,
//     "sync.WaitGroup.Wait (durable)": the reason a WaitGroup made in a
//     synctest bubble waits with, which the bubble counts as durably
//     blocked, as it did the WaitGroup this package replaced. Outside a
//     bubble the reason only labels the goroutine in stack dumps.
//   - traceBlockGeneric, the execution tracer's first block reason, is 0.
//
// TestTheWaitReasonIsTheDurableWaitGroups checks the label in a stack
// dump, and the synctest tests of package crisp check that a bubble
// sees a parked goroutine as durably blocked.
const (
	waitReasonDurable = 45
	traceBlockGeneric = 0
)

//go:linkname gopark runtime.gopark
func gopark(unlockf func(uintptr, unsafe.Pointer) bool, lock unsafe.Pointer, reason uint8, traceReason uint8, traceskip int)

//go:linkname goready runtime.goready
func goready(gp uintptr, traceskip int)

// usesRuntimePark says this build parks with gopark.
const usesRuntimePark = true
