package crisp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/future"
	"github.com/crisprt/crisp/internal/plumb"
	"github.com/stretchr/testify/require"
)

// A missed Call costs one allocation: its *deadline.MissedError, made
// together with the form its future keeps an error in (missRecord). A
// future resolved with an error of its own allocates that form itself,
// a second allocation on the watchdog's goroutine for every miss.
func TestAMissedCallAllocatesOnce(t *testing.T) {
	sys := NewSystem(WithLogger(discard()))
	defer func() { require.NoError(t, sys.Shutdown(context.Background())) }()
	a := Spawn(sys, 0)
	const n = 200
	calls := make([]*call[int, int], n+1)
	for i := range calls {
		c := &call[int, int]{a: a, fn: func(*Proc, int) (int, error) { return 0, nil }}
		setJob(&c.item, c)
		plumb.SetSourceAt(&c.pr, jobCell(&c.item))
		c.item.Deadline = time.Unix(1, 0)
		calls[i] = c
	}
	now := time.Unix(2, 0)
	a.core.miss(&calls[n].message, now) // names looked up and cached once
	i := 0
	allocs := testing.AllocsPerRun(n-1, func() {
		a.core.miss(&calls[i].message, now)
		i++
	})
	require.Equal(t, 1.0, allocs, "allocations a missed Call costs")
	_, err := calls[0].pr.Future().Get()
	var me *deadline.MissedError
	require.True(t, errors.As(err, &me), "the future says %v", err)
	require.Equal(t, now, me.Detected)
	require.False(t, calls[0].pr.Fail(errors.New("again")), "a missed Call's future was resolved again")
	var f *future.Future[int] = calls[1].pr.Future()
	require.True(t, f.Ready())
}
