package remote

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A slow yield turns a node's yielding off for 10 ms past its end; each
// slow one in a row doubles that, up to a second; a fast one ends the
// backoff.
func TestASlowYieldTurnsYieldingOffWithABackoff(t *testing.T) {
	n := &Node{}
	start := time.Unix(1000, 0)
	off := func() time.Duration { return time.Duration(n.noYieldUntil.Load() - start.UnixNano()) }

	n.yielded(start, slowYield)
	assert.Zero(t, n.noYieldUntil.Load(), "a yield of slowYield is not slow")

	took := 10 * time.Millisecond // one time slice of a goroutine that never yields
	n.yielded(start, took)
	assert.Equal(t, took+noYield, off())
	n.yielded(start, took)
	assert.Equal(t, took+2*noYield, off(), "doubled")
	for range 10 {
		n.yielded(start, took)
	}
	assert.Equal(t, took+maxNoYield, off(), "capped")

	n.yielded(start, time.Microsecond)
	n.yielded(start, took)
	assert.Equal(t, took+noYield, off(), "a fast yield ended the backoff")
}
