package watchdog_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/watchdog"
)

type misuseTarget struct {
	watchdog.Entry
	fired chan time.Time
}

func (m *misuseTarget) Expire(now time.Time) { m.fired <- now }

func TestMisuseAnEntryInTwoWatchdogs(t *testing.T) {
	mock := clock.NewMock()
	w1, w2 := watchdog.New(mock), watchdog.New(mock)
	defer w1.Stop()
	defer w2.Stop()
	x := &misuseTarget{fired: make(chan time.Time, 1)}
	now := mock.Now()
	require.True(t, w1.Watch(&x.Entry, x, now.Add(time.Second), now))
	assert.PanicsWithValue(t, "crisp: watchdog.Watch of an entry another watchdog holds", func() {
		w2.Watch(&x.Entry, x, now.Add(time.Second), now)
	})
}

func TestMisuseANilClockIsTheRealOne(t *testing.T) {
	w := watchdog.New(nil)
	defer w.Stop()
	x := &misuseTarget{fired: make(chan time.Time, 1)}
	now := time.Now()
	require.True(t, w.Watch(&x.Entry, x, now.Add(time.Millisecond), now))
	select {
	case at := <-x.fired:
		assert.False(t, at.Before(now.Add(time.Millisecond)))
	case <-time.After(10 * time.Second):
		t.Fatal("never expired")
	}
}
