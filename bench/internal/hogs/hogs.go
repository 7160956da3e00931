// Package hogs starts goroutines that never yield, beside a benchmark's
// runs: CPU-bound neighbours of the actors.
//
// Each hog spins on arithmetic and one atomic load and calls no
// function, so it reaches no point where the scheduler could switch it
// out voluntarily; Go preempts it only asynchronously, by signal, about
// every 10 ms. A runtime that leans on cooperative handoffs between its
// own goroutines feels such neighbours most.
package hogs

import (
	"sync"
	"sync/atomic"
)

// Hogs is a set of running hogs; Stop ends them.
type Hogs struct {
	quit atomic.Bool
	done sync.WaitGroup
	sink atomic.Uint64 // each hog's last value, so the loop is not dead code
}

// Start starts n hogs.
func Start(n int) *Hogs {
	h := &Hogs{}
	for i := range n {
		h.done.Add(1)
		go h.spin(uint64(i) + 1)
	}
	return h
}

// spin is one hog's loop. Keep function calls out of it: a call's
// prologue is a cooperative preemption point.
func (h *Hogs) spin(x uint64) {
	defer h.done.Done()
	for !h.quit.Load() {
		x = x*6364136223846793005 + 1442695040888963407 // a linear congruential step, as cheap as work gets
	}
	h.sink.Add(x)
}

// Stop ends the hogs and returns once every one has.
func (h *Hogs) Stop() {
	h.quit.Store(true)
	h.done.Wait()
}
