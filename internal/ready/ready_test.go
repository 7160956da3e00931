package ready

import (
	"runtime"
	"sync"
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
