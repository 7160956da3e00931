package park

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestASignalBeforeTheWaitLetsItReturnAtOnce(t *testing.T) {
	var s Spot
	for range 3 { // a Spot is used again after each Expect
		s.Expect()
		s.Signal()
		s.Wait()
	}
}

// The waiter parks first; the signaller's writes before Signal are seen
// after Wait (the race detector checks the order under -race), and a
// Spot goes through many rounds.
func TestASignalWakesTheParkedWaiterAndOrdersMemory(t *testing.T) {
	var to, back Spot
	var v int
	const rounds = 10_000
	to.Expect()
	go func() {
		for i := range rounds {
			to.Wait()
			if v != 2*i+1 {
				panic("the waiter did not see the signaller's write")
			}
			to.Expect()
			v++
			back.Signal()
		}
	}()
	for i := range rounds {
		v = 2*i + 1
		back.Expect()
		to.Signal()
		back.Wait()
		if v != 2*i+2 {
			t.Fatalf("round %d: %d, want %d", i, v, 2*i+2)
		}
	}
}

// Many goroutines parked at once, signalled from several goroutines in
// an order of their own, all wake.
func TestEverySignalledWaiterWakes(t *testing.T) {
	const n = 5000
	spots := make([]Spot, n)
	var woke sync.WaitGroup
	woke.Add(n)
	for i := range spots {
		spots[i].Expect()
		go func() {
			spots[i].Wait()
			woke.Done()
		}()
	}
	var signallers sync.WaitGroup
	for k := range 4 {
		signallers.Go(func() {
			for i := n - 1 - k; i >= 0; i -= 4 {
				spots[i].Signal()
			}
		})
	}
	signallers.Wait()
	woke.Wait()
}

// A synctest bubble counts a goroutine parked on a Spot as durably
// blocked, as it did the WaitGroup a Spot replaces in crisp: synctest.Wait
// returns while it waits (a goroutine the bubble did not count would keep
// synctest.Wait, and this test, from returning). Its stack dump labels it
// as a WaitGroup made in a bubble.
func TestTheBubbleSeesAParkedGoroutineAsDurablyBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Spot
		var woke bool
		s.Expect()
		go func() {
			s.Wait()
			woke = true
		}()
		synctest.Wait()
		if woke {
			t.Fatal("the waiter ran on before the signal")
		}
		buf := make([]byte, 1<<16)
		dump := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(dump, "[sync.WaitGroup.Wait (durable)") {
			t.Errorf("no goroutine waits with the durable WaitGroup's label:\n%s", dump)
		}
		s.Signal()
		synctest.Wait()
		if !woke {
			t.Fatal("the signal did not wake the waiter")
		}
	})
}

// Expect, Signal and Wait allocate nothing. (When it parks, a Spot's
// waiter takes no sudog either, which a channel's or a WaitGroup's does;
// TestAWaitKeepsTheStackItHas shows what that cost.)
func TestAWaitAllocatesNothing(t *testing.T) {
	var s Spot
	allocs := testing.AllocsPerRun(100, func() {
		s.Expect()
		s.Signal()
		s.Wait()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per wait", allocs)
	}
}
