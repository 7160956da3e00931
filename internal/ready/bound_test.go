package ready

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Elapsed converts ticks at the rate it is given, and knows no bound
// before a reading or without a rate.
func TestElapsedConvertsAtItsRate(t *testing.T) {
	defer SetRate(3 << 31)() // 1.5 ns a tick
	t0 := Stamp()
	el, ok := Elapsed(t0 - 2000)
	require.True(t, ok)
	assert.GreaterOrEqual(t, el, int64(3000), "2000 ticks and more at 1.5 ns")
	_, ok = Elapsed(Stamp() + 1<<40)
	assert.False(t, ok, "a reading ahead of the counter")
	_, ok = Elapsed(Stamp() - (1<<62 + 1<<61))
	assert.False(t, ok, "beyond int64")
	SetRate(0)
	_, ok = Elapsed(t0)
	assert.False(t, ok, "no rate measured")
}

// Once measured, the rate bounds the runtime's clock from above: the ns
// Elapsed gives since a reading are never fewer than the clock counts
// between readings taken after it and before Elapsed, and not many
// more. The measure takes calibrateNs of real time.
func TestElapsedBoundsTheRuntimesClock(t *testing.T) {
	if !HasCounter {
		t.Skip("no counter apart from the runtime's clock")
	}
	defer SetRate(0)() // measure it here, and put back what was there
	start := nanotime()
	for bound.rate.Load() == 0 {
		require.Less(t, nanotime()-start, int64(20*calibrateNs), "the rate was not measured")
		calibrate()
	}
	var over []float64
	for i := range 2000 {
		t0 := Stamp()
		n0 := nanotime()
		for range i % 50 * 100 {
			_ = nanotime()
		}
		n1 := nanotime()
		el, ok := Elapsed(t0)
		require.True(t, ok)
		require.GreaterOrEqual(t, el, n1-n0, "reading %d: the bound is below the clock", i)
		if n1-n0 > 10_000 {
			over = append(over, float64(el)/float64(n1-n0))
		}
	}
	require.NotEmpty(t, over)
	// The median, not every one: a preemption between the last two
	// readings lengthens one interval.
	m := median(over)
	assert.Less(t, m, 1.05, "the bound is %.3fx the clock's count", m)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
