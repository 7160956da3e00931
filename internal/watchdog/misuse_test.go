package watchdog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/watchdog"
)

type misuseTarget struct {
	watchdog.Entry
	fired chan time.Time
}

func (m *misuseTarget) Expire(now time.Time) { m.fired <- now }

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
