package ready

// ticks reads the processor's time-stamp counter: 9 ns a reading on the
// machine of BENCHMARKS.md, where the runtime's clock takes 22. Modern
// x86 processors keep it at a constant rate, the same on every core.
func ticks() int64

// slowTicks is how many ticks a yield takes before YieldTimed and
// SpinYield convert them to ns to judge it (inNanos): 0.5-2 ms for a
// counter of 1 to 4 GHz (2.6 GHz here: 0.8 ms), where a quick Gosched
// takes microseconds and one behind a CPU-bound goroutine's time slice
// 10 ms or more.
const slowTicks = 1 << 21
