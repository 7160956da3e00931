// Package park parks a goroutine until another signals it: a one-shot
// hand-off between exactly one waiter and one signaller, which crisp's
// suspended processes and spare runners wait on.
//
// A Spot costs one word and never allocates. Where it can, it parks the
// goroutine with the runtime's own gopark and readies it with goready,
// as Go's channels do inside the runtime, but without the sudog (the
// record a channel, a mutex or a WaitGroup takes for each waiter) and
// without the semaphore table a WaitGroup goes through. The sudog is
// what cost: with thousands of processes suspended at once the runtime's
// cache of them runs dry, each wait allocates one, and the allocation's
// frames are deep enough to outgrow a new goroutine's 2 KiB stack, which
// the runtime then copies (about a fifth of the bank workload's CPU in
// bench/). See linkname.go for what that assumes of the runtime, and
// portable.go for the fallback on Go releases it has not been checked
// against.
package park

// Expect makes s ready for one Wait and one Signal. Call it before the
// signaller can see s: the two may then come in either order.
func (s *Spot) Expect() { s.expect() }

// Signal wakes the goroutine in Wait, or lets its Wait return at once if
// it has not parked yet. Exactly one Signal follows each Expect.
func (s *Spot) Signal() { s.signal() }

// Wait parks the calling goroutine until Signal (returning at once if
// Signal came first). Only one goroutine waits on a Spot at a time.
func (s *Spot) Wait() { s.wait() }
