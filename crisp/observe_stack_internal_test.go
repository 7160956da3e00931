package crisp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With an observer, a fresh runner does outgrow its 2 KiB starting
// stack: the observer is user code called on the runner (so that pprof
// labels land on the handler's goroutine), with a 200-byte Event, above
// the runner's own frames, and the stack doubles on the first Started.
// (Without an observer nothing changes: TestAFreshRunnerKeepsItsStartingStack.)
// This test keeps that price at one doubling: an observed runner that
// does nothing in its observer must stay at 4 KiB, as a goroutine that
// grew once does, not 8 KiB. Same measure as the test above.
func TestAnObservedRunnerGrowsItsStackOnceAtMost(t *testing.T) {
	if !measuringStacks(t) {
		return
	}
	runners, plain, grown := runnerStacks(t, WithObserver(ObserverFunc(func(Event) {})))
	t.Logf("stack in use per goroutine: %.0f bytes for observed runners, %.0f for goroutines that only block, %.0f for ones that grew", runners, plain, grown)
	require.Greater(t, grown-plain, float64(tunedStack)/2, "the measure no longer sees a stack grow")
	assert.Less(t, runners, grown*1.5, "a new observed runner grew its stack more than once: keep the observer hooks' frames small (observe.go)")
}
