package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEveryRequestEndsAndRestartsStayWithinTheLimit(t *testing.T) {
	res, err := run(io.Discard)
	require.NoError(t, err)
	assert.Equal(t, requests, res.Answered+res.Crashed+res.Missed, "every request ended: answered, crashed or missed")
	assert.Zero(t, res.Other, "no request was stopped or lost")
	assert.Equal(t, 5, res.Crashed, "requests 3, 10, 17, 18 and 24 crash the node")
	assert.Equal(t, 2, res.Missed, "one request queued in each long backoff misses its deadline")
	assert.False(t, res.Escalated, "the node never gives up")
	require.Len(t, res.Restarts, res.Crashed, "one restart per crash")
	for i, at := range res.Restarts {
		n := 1
		for _, b := range res.Restarts[:i] {
			if at.Sub(b) < window {
				n++
			}
		}
		assert.LessOrEqual(t, n, maxRestarts, "restarts in the window ending at %v", at.Sub(start))
	}
	// Backoffs double while crashes come within the window: 30 ms after
	// the first crash, 60 after the second (0.7 s later), 60 and 120 in
	// the burst at 1.737 and 1.837, 120 at 2.437.
	want := []time.Duration{367, 1097, 1797, 1957, 2557}
	for i, ms := range want {
		assert.Equal(t, ms*time.Millisecond, res.Restarts[i].Sub(start), "restart %d", i+1)
	}
}

func Example_main() {
	main()
	// Output:
	//  0.000s  node #1 started, cache empty
	//  0.037s  request  0 key 0: value-0 (loaded)
	//  0.137s  request  1 key 1: value-1 (loaded)
	//  0.237s  request  2 key 2: value-2 (loaded)
	//  0.337s  request  3 key 3: node crashed: corrupt record 3
	//  0.367s  node #2 started, cache empty
	//  0.437s  request  4 key 4: value-4 (loaded)
	//  0.537s  request  5 key 0: value-0 (loaded)
	//  0.637s  request  6 key 1: value-1 (loaded)
	//  0.737s  request  7 key 2: value-2 (loaded)
	//  0.837s  request  8 key 3: value-3 (loaded)
	//  0.937s  request  9 key 4: value-4 (cached)
	//  1.037s  request 10 key 0: node crashed: corrupt record 0
	//  1.097s  node #3 started, cache empty
	//  1.137s  request 11 key 1: value-1 (loaded)
	//  1.237s  request 12 key 2: value-2 (loaded)
	//  1.337s  request 13 key 3: value-3 (loaded)
	//  1.437s  request 14 key 4: value-4 (loaded)
	//  1.537s  request 15 key 0: value-0 (loaded)
	//  1.637s  request 16 key 1: value-1 (cached)
	//  1.737s  request 17 key 2: node crashed: corrupt record 2
	//  1.797s  node #4 started, cache empty
	//  1.837s  request 18 key 3: node crashed: corrupt record 3
	//  1.952s  request 19 key 4: missed its deadline while the node restarted
	//  1.957s  node #5 started, cache empty
	//  2.037s  request 20 key 0: value-0 (loaded)
	//  2.137s  request 21 key 1: value-1 (loaded)
	//  2.237s  request 22 key 2: value-2 (loaded)
	//  2.337s  request 23 key 3: value-3 (loaded)
	//  2.437s  request 24 key 4: node crashed: corrupt record 4
	//  2.552s  request 25 key 0: missed its deadline while the node restarted
	//  2.557s  node #6 started, cache empty
	//  2.637s  request 26 key 1: value-1 (loaded)
	//  2.737s  request 27 key 2: value-2 (loaded)
	//  2.837s  request 28 key 3: value-3 (loaded)
	//  2.937s  request 29 key 4: value-4 (loaded)
	// every request ended: 23 answered, 5 crashed, 2 missed, 0 other; 5 restarts
}
