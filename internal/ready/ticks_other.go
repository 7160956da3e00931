//go:build !amd64

package ready

// ticks reads the runtime's clock, where no cheaper counter is read
// (see ticks_amd64.go).
func ticks() int64 { return nanotime() }

// slowTicks is how many ticks (here ns) a yield takes before YieldTimed
// and SpinYield judge it (see ticks_amd64.go).
const slowTicks = slowYield
