package crisp

import (
	"reflect"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/gid"
	"github.com/crisprt/crisp/internal/ready"
)

// keptProcs returns the Procs sys keeps on its first processor's stack,
// oldest first.
func keptProcs(sys *System) []*Proc {
	s := &sys.procs[0]
	ready.Pin()
	raceAcquire(unsafe.Pointer(s))
	ps := append([]*Proc(nil), s.ps[:s.n]...)
	raceRelease(unsafe.Pointer(s))
	ready.Unpin()
	return ps
}

// procOfNext sends a a message, waits until its runner has ended, and
// returns the Proc the handler was given.
func procOfNext[S any](a *Actor[S]) *Proc {
	var seen *Proc
	Tell(a, func(p *Proc, _ S) { seen = p })
	synctest.Wait()
	return seen
}

// A runner that ended leaves its Proc to the next runner its system
// starts on the processor, for another actor too; meanwhile the kept
// Proc points to the system's ghost, not to its actor.
func TestAnEndedRunnersProcServesTheNextRunner(t *testing.T) {
	onOneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer sys.Shutdown(t.Context())
		a, b := Spawn(sys, 0), Spawn(sys, "")
		first := procOfNext(a)
		require.Equal(t, []*Proc{first}, keptProcs(sys), "kept once its runner ended")
		assert.Same(t, sys.ghost, first.a, "not its actor")
		assert.Equal(t, sys.clk.Now(), first.Now(), "the clock is still the system's")
		assert.Same(t, first, procOfNext(b), "another actor's next runner has it")
		assert.Same(t, first, procOfNext(a))
	})
}

// A kept Proc comes back as new: nothing of its runner's use shows.
func TestAKeptProcIsReusedClean(t *testing.T) {
	onOneProcessor(t)
	sys := NewSystem()
	defer sys.Shutdown(t.Context())
	a, b := Spawn(sys, 0), Spawn(sys, 0)
	p := &Proc{a: &a.core, g: 42, batch: parkBatch + 1, hslot: 1, nslot: 1, kept: 3, serve: true, done: true, selfWait: true, answered: true, xfer: true}
	keepProc(&a.core, p)
	require.Equal(t, []*Proc{p}, keptProcs(sys))
	// What keepProc refuses (x, gw, epoch) and what a runner leaves (m,
	// wake) set too: reuse must clear every field, and a field added to
	// Proc must be added here (and to reuse).
	p.m, p.gw, p.x, p.epoch = &message{}, &groupWorker{}, &procExtra{}, 3
	p.wake.Expect()
	require.Equal(t, 16, reflect.TypeFor[Proc]().NumField(), "a new field of Proc: set it above, clear it in reuse")
	q := newProc(&b.core)
	require.Same(t, p, q)
	assert.Equal(t, &Proc{a: &b.core, g: gid.Current()}, q)
	assert.Empty(t, keptProcs(sys))
	assert.NotSame(t, p, newProc(&b.core), "an empty stack: a new Proc")
}

// A processor keeps at most procStashMax Procs.
func TestAProcessorKeepsFewProcs(t *testing.T) {
	onOneProcessor(t)
	sys := NewSystem()
	defer sys.Shutdown(t.Context())
	a := Spawn(sys, 0)
	for range procStashMax + 3 {
		keepProc(&a.core, &Proc{a: &a.core, done: true})
	}
	assert.Len(t, keptProcs(sys), procStashMax)
}

// A Proc something may still reach once its runner has ended is not
// kept: one that suspended a process (its continuation's waker knew
// it), slept or used procExtra, a group's, a bounded actor's (its
// admission records Procs), and one whose runner did not return
// normally.
func TestAProcSomethingMayReachIsNotKept(t *testing.T) {
	onOneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem()
		defer sys.Shutdown(t.Context())
		a := Spawn(sys, 0)
		pr := future.NewPromise[int](nil)
		Tell(a, func(p *Proc, _ int) { _, _ = Await(p, pr.Future()) })
		synctest.Wait()
		pr.Resolve(1, nil)
		synctest.Wait()
		assert.Empty(t, keptProcs(sys), "it suspended")

		Tell(a, func(p *Proc, _ int) { p.Sleep(time.Millisecond) })
		virtualSleep(2 * time.Millisecond)
		synctest.Wait()
		assert.Empty(t, keptProcs(sys), "it slept")

		bounded := Spawn(sys, 0, WithCapacity(4, FailWhenFull))
		procOfNext(bounded)
		assert.Empty(t, keptProcs(sys), "a bounded actor's")

		g := SpawnGroup(sys, []int{0, 0})
		Tell(g, func(*Proc, int) {})
		synctest.Wait()
		assert.Empty(t, keptProcs(sys), "a group's")

		keepProc(&a.core, &Proc{a: &a.core}) // its runner did not return: Goexit, a stopped process
		assert.Empty(t, keptProcs(sys))

		procOfNext(a)
		assert.Len(t, keptProcs(sys), 1, "the actor's next plain runner's is kept")
	})
}
