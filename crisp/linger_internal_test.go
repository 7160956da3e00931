package crisp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lingerActor returns an idle actor of a fresh system for calling
// linger directly, as a runner that found nothing to do would.
func lingerActor(t *testing.T) *Actor[int] {
	sys := NewSystem()
	t.Cleanup(func() { require.NoError(t, sys.Shutdown(context.Background())) })
	return Spawn(sys, 0)
}

// vain reads the actor's count of lingers in vain.
func (a *core) vain() uint32 { return a.flags.Load() >> vainShift & vainMax }

// A runner whose lingers find no work lingers less and less: each one in
// vain counts, up to vainCap, and then only a random one in 2^vainCap
// runners of the actor lingers. An actor sent one message at a time by
// ever other actors (threadring, a ring of a thousand, a tree of calls)
// paid runnerGrace trips through the scheduler for every message.
func TestLingersInVainAreCountedUpToTheCap(t *testing.T) {
	a := &lingerActor(t).core
	require.Zero(t, a.vain())
	assert.Zero(t, a.linger(runnerGrace), "no work came: no grace is left")
	require.Equal(t, uint32(1), a.vain(), "a linger in vain counts")
	for range 400 { // each tried with a chance of 1/2, 1/4, 1/8, then 1/16
		assert.Zero(t, a.linger(runnerGrace))
	}
	assert.Equal(t, uint32(vainCap), a.vain(), "the count stops at its cap")
}

// A linger that finds work clears the count, so that an actor in a
// conversation (request, reply, request) keeps its runner between the
// messages; until one is tried, the lingers skipped return no grace.
func TestALingerThatFindsWorkClearsTheCount(t *testing.T) {
	a := &lingerActor(t).core
	a.setVain(vainCap)
	m := &message{}
	m.state.Store(stRunning) // not the runner's to take: only the intake matters here
	a.intake.Store(m)
	defer a.intake.Store(nil)
	skipped := 0
	for a.linger(runnerGrace) == 0 {
		skipped++
		require.Less(t, skipped, 2000, "a linger at the cap is tried once in 16 times")
	}
	assert.Zero(t, a.vain(), "the linger found work: the count is cleared")
	assert.Equal(t, runnerGrace, a.linger(runnerGrace), "with the count cleared every linger is tried, and finds the work at once")
}

// Lingers skipped because as many runners as there are processors
// linger already were not tried, and are not in vain.
func TestALingerNotTriedIsNotInVain(t *testing.T) {
	a := &lingerActor(t).core
	s := a.sys
	s.lingering.Add(s.maxLinger)
	defer s.lingering.Add(-s.maxLinger)
	assert.Zero(t, a.linger(runnerGrace))
	assert.Zero(t, a.vain())
}
