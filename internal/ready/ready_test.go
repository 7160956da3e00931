package ready

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTheCountIsWhatWasAddedAndNotYetDone(t *testing.T) {
	if N() != 0 || Waiting() {
		t.Fatalf("a fresh count is %d, waiting %v", N(), Waiting())
	}
	Add(3)
	if N() != 3 || !Waiting() {
		t.Fatalf("after Add(3): %d, waiting %v", N(), Waiting())
	}
	Done()
	Done()
	if N() != 1 || !Waiting() {
		t.Fatalf("after two Done: %d, waiting %v", N(), Waiting())
	}
	Done()
	if N() != 0 || Waiting() {
		t.Fatalf("after three Done: %d, waiting %v", N(), Waiting())
	}
}

// A Done may come before the Add it pairs with is seen by a reader (the
// counted goroutine runs on another processor at once): the count dips
// below zero, and Waiting must then say false, not true.
func TestADoneAheadOfItsAddIsNotWaiting(t *testing.T) {
	Done()
	if Waiting() {
		t.Fatal("a count below zero reads as waiting")
	}
	Add(1)
	if N() != 0 {
		t.Fatalf("count %d after the pair", N())
	}
}

func TestConcurrentPairsLeaveZero(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10_000 {
				Add(1)
				Done()
			}
		})
	}
	wg.Wait()
	if N() != 0 {
		t.Fatalf("count %d after balanced pairs", N())
	}
}

func TestRandSpreadsItsValues(t *testing.T) {
	seen := map[uint32]bool{}
	for range 100 {
		seen[Rand()] = true
	}
	if len(seen) < 50 {
		t.Fatalf("100 calls of Rand gave %d distinct values", len(seen))
	}
}

func TestProcessorIsANumberBelowGOMAXPROCS(t *testing.T) {
	n := runtime.GOMAXPROCS(0)
	for range 100 {
		if p := Processor(); p < 0 || p >= n {
			t.Fatalf("Processor() = %d with GOMAXPROCS %d", p, n)
		}
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	if p := Processor(); p != 0 {
		t.Fatalf("Processor() = %d on one processor", p)
	}
}

// A goroutine blocked in Lock counts as ready until it has the lock; one
// that finds the lock free is never counted. On one processor, so that
// the goroutine runs on the test's yields: on two it could start on the
// other, whose thread a loaded machine may leave unscheduled for longer
// than the yields took (CI, under -race beside other packages' tests:
// "counts 0, not 1" once).
func TestLockCountsTheWaiterUntilItHasTheLock(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var mu sync.Mutex
	Lock(&mu)
	if N() != 0 {
		t.Fatalf("a Lock that found the mutex free counted %d", N())
	}
	locked := make(chan struct{})
	go func() {
		Lock(&mu)
		close(locked)
		mu.Unlock()
	}()
	for try := 0; try < 100_000 && N() == 0; try++ {
		runtime.Gosched() // until the goroutine blocks
	}
	if N() != 1 {
		t.Fatalf("the goroutine waiting in Lock counts %d, not 1", N())
	}
	mu.Unlock()
	<-locked
	if N() != 0 {
		t.Fatalf("the count is %d once the waiter has the lock", N())
	}
}

func TestASpinnerIsWaitingAndSpinningUntilItIsDone(t *testing.T) {
	AddSpinning()
	if !Waiting() || !Spinning() {
		t.Fatalf("a spinner counted: Waiting %v, Spinning %v", Waiting(), Spinning())
	}
	Add(1)
	DoneSpinning()
	if !Waiting() || Spinning() {
		t.Fatalf("a spinner done, another goroutine still waiting: Waiting %v, Spinning %v", Waiting(), Spinning())
	}
	Done()
	if Waiting() || Spinning() {
		t.Fatalf("all done: Waiting %v, Spinning %v", Waiting(), Spinning())
	}
}

// Queued reads both counts at one instant: a goroutine counted and not
// yet run keeps it true however many spinners count themselves in and
// out meanwhile. Read one after the other, the two counts turned it
// false whenever a spinner counted itself in between the readings.
func TestQueuedHoldsWhileSpinnersComeAndGo(t *testing.T) {
	Add(1) // a goroutine made runnable, not yet run
	defer Done()
	var stop atomic.Bool
	var spins atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				AddSpinning()
				DoneSpinning()
				spins.Add(1)
			}
		})
	}
	wrong, checks := 0, 0
	for ; checks < 2_000_000 && (checks < 200_000 || spins.Load() < 200_000); checks++ {
		if !Queued() {
			wrong++
		}
	}
	stop.Store(true)
	wg.Wait()
	if wrong > 0 {
		t.Fatalf("Queued was false %d times in %d while a goroutine was counted (%d spins beside)", wrong, checks, spins.Load())
	}
}

// The counted goroutines and the spinners share one word: each splits
// out whole, a count below zero too (a Done before its Add would be a
// bug of the caller's; the word must not pass it on to the spinners).
func TestTheTwoCountsSplitOutOfTheirWord(t *testing.T) {
	for _, c := range []struct{ n, s int64 }{{0, 0}, {1, 0}, {3, 2}, {-1, 0}, {-2, 1}, {1 << 30, 7}} {
		if n, s := counts(c.n + c.s*spinOne); n != c.n || s != c.s {
			t.Errorf("n %d, s %d came back as %d, %d", c.n, c.s, n, s)
		}
	}
}
