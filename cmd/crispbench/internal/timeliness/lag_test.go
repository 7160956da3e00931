package timeliness_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/timeliness"
)

// On virtual time the watchdog fires at the very instant of each
// deadline and the caller's Get returns before the clock moves on: every
// caller learns of its miss with a lag of exactly zero.
func TestVirtualLagIsZero(t *testing.T) {
	for _, c := range []struct{ pending, actors int }{{1, 1}, {100, 10}, {300, 7}} {
		r, err := timeliness.VirtualLag(context.Background(), c.pending, c.actors, 5*time.Millisecond, 50*time.Millisecond, 1)
		require.NoError(t, err)
		// Each waiter has a deadline every 2.5-7.5ms over 50ms.
		assert.GreaterOrEqual(t, r.Misses, int64(c.pending*6), "%d pending", c.pending)
		assert.Zero(t, r.NonZero, "%d pending", c.pending)
		assert.Zero(t, r.MaxAbs, "%d pending", c.pending)
	}
}
