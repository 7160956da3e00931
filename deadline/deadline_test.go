package deadline_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/deadline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

func TestMissedErrorMatchesSentinels(t *testing.T) {
	var err error = &deadline.MissedError{Actor: "node-3", Message: "submit", Deadline: t0, Detected: t0.Add(1500 * time.Microsecond)}

	assert.ErrorIs(t, err, deadline.ErrMissed)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, context.Canceled)

	var timeout interface{ Timeout() bool }
	require.ErrorAs(t, err, &timeout)
	assert.True(t, timeout.Timeout())

	var miss *deadline.MissedError
	require.ErrorAs(t, fmtWrap(err), &miss)
	assert.Equal(t, 1500*time.Microsecond, miss.Lateness())
	assert.Contains(t, err.Error(), "node-3: submit: deadline missed")
	assert.Contains(t, err.Error(), "1.5ms later")
}

func fmtWrap(err error) error { return errors.Join(errors.New("context"), err) }

func TestMissedErrorWithoutNamesOrLateness(t *testing.T) {
	err := &deadline.MissedError{Deadline: t0, Detected: t0}
	assert.Equal(t, time.Duration(0), err.Lateness())
	assert.Equal(t, "message: deadline missed: had to start by 2013-02-01T09:00:00Z", err.Error())
}

func TestCompareZeroIsLast(t *testing.T) {
	var none time.Time
	assert.Equal(t, 0, deadline.Compare(none, none))
	assert.Equal(t, 1, deadline.Compare(none, t0))
	assert.Equal(t, -1, deadline.Compare(t0, none))
	assert.Equal(t, -1, deadline.Compare(t0, t0.Add(time.Nanosecond)))
	assert.Equal(t, 1, deadline.Compare(t0.Add(time.Nanosecond), t0))
	assert.Equal(t, 0, deadline.Compare(t0, t0.In(time.FixedZone("x", 3600))))

	assert.True(t, deadline.Before(t0, none))
	assert.False(t, deadline.Before(none, t0))
	assert.False(t, deadline.Before(none, none))
}

func TestCompareSortsLikeAReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ds := make([]time.Time, 500)
	for i := range ds {
		if r.IntN(5) > 0 {
			ds[i] = t0.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		}
	}
	slices.SortStableFunc(ds, deadline.Compare)
	seenNone := false
	for i, d := range ds {
		if d.IsZero() {
			seenNone = true
			continue
		}
		require.False(t, seenNone, "a deadline after a no-deadline at %d", i)
		if i > 0 {
			require.False(t, d.Before(ds[i-1]), "out of order at %d", i)
		}
	}
}

func TestEarliest(t *testing.T) {
	var none time.Time
	assert.Equal(t, t0, deadline.Earliest(none, t0))
	assert.Equal(t, t0, deadline.Earliest(t0, none))
	assert.Equal(t, t0, deadline.Earliest(t0.Add(time.Second), t0))
	assert.True(t, deadline.Earliest(none, none).IsZero())
}

func TestMissedAtAndAfterTheDeadline(t *testing.T) {
	assert.True(t, deadline.Missed(t0, t0), "now == deadline is missed")
	assert.True(t, deadline.Missed(t0, t0.Add(time.Nanosecond)))
	assert.False(t, deadline.Missed(t0, t0.Add(-time.Nanosecond)), "one nanosecond before still starts")
	assert.False(t, deadline.Missed(time.Time{}, t0), "no deadline is never missed")
}
