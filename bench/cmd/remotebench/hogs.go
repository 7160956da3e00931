package main

import (
	"sync"
	"sync/atomic"
)

// hogs are goroutines that never yield: each spins on arithmetic and one
// atomic load and calls no function, so the scheduler can switch it out
// only by asynchronous preemption (about every 10 ms). They stand for
// CPU-bound neighbours of the actors. The same model as bench's
// runner (bench/hogs.go), which lives in another package.
type hogs struct {
	quit atomic.Bool
	done sync.WaitGroup
	sink atomic.Uint64 // each hog's last value, so the loop is not dead code
}

func startHogs(n int) *hogs {
	h := &hogs{}
	for i := range n {
		h.done.Add(1)
		go h.spin(uint64(i) + 1)
	}
	return h
}

// spin is one hog's loop. Keep function calls out of it: a call's
// prologue is a cooperative preemption point.
func (h *hogs) spin(x uint64) {
	defer h.done.Done()
	for !h.quit.Load() {
		x = x*6364136223846793005 + 1442695040888963407
	}
	h.sink.Add(x)
}

// stop ends the hogs and returns once every one has.
func (h *hogs) stop() {
	h.quit.Store(true)
	h.done.Wait()
}
