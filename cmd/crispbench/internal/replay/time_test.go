package replay_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
)

// Issue 14, item 6: time arithmetic near the largest time.Duration
// (about 292 years) saturates or is refused; it never wraps around.

func TestHugeTermsSaturate(t *testing.T) {
	log := "job,customer,submitted,duration,node,outcome\n" +
		"J1,C1,2013-02-01T09:00:00Z,10m,node-1,completed\n"
	for _, tc := range []struct {
		name          string
		start, result time.Duration
	}{
		{"start deadline plus result timeout past the largest duration", math.MaxInt64/2 + 1, math.MaxInt64/2 + 1},
		{"the largest start deadline", math.MaxInt64, 0},
		{"the largest result timeout", 0, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := replay.Defaults()
			cfg.StartDeadline, cfg.ResultTimeout = tc.start, tc.result
			rep, got := replayWith(t, cfg, strings.NewReader(log))
			for _, res := range rep.Results {
				assert.Equal(t, 1, res.Total.Completed, "%v", res.Strategy)
				assert.Zero(t, res.Total.Unknown, "%v", res.Strategy)
			}
			as := got.of(replay.Deadline)
			require.Len(t, as, 1)
			assert.Equal(t, replay.Completed, as[0].Kind)
			assert.Equal(t, 10*time.Minute, as[0].At.Sub(as[0].Submitted), "first answer")
			assert.Equal(t, 10*time.Minute, rep.Results[1].Total.FirstP50)
		})
	}
}

func TestYearOneToYear9999IsRefused(t *testing.T) {
	log := "job,customer,submitted,duration,node,outcome\n" +
		"J1,C1,0001-01-01T00:00:00Z,10m,node-1,completed\n" +
		"J2,C1,9999-12-31T23:59:59Z,10m,node-1,completed\n"
	_, err := replay.Run(context.Background(), strings.NewReader(log), replay.Defaults())
	require.ErrorIs(t, err, replay.ErrSpan)
	assert.ErrorContains(t, err, "job J2 submitted at 9999-12-31T23:59:59Z, more than 292 years after the log's first job (0001-01-01T00:00:00Z)")
}

func TestAReplayAtTheHorizonSaturates(t *testing.T) {
	// The first job is submitted at Go's zero time; the second job hangs
	// for longer than the clock reaches, with a start deadline and a
	// result timeout that reach past it too. Everything happens by the
	// horizon, and no wait is negative.
	log := "job,customer,submitted,duration,node,outcome,start_deadline,result_timeout\n" +
		"J1,C1,0001-01-01T00:00:00Z,10m,node-1,completed,,\n" +
		"J2,C1,0200-01-01T00:00:00Z,2562047h,node-1,hung,2562047h,2562047h\n" +
		"J3,C2,0292-01-01T00:00:00Z,2562047h,node-1,completed,2562047h,\n"
	rep, got := replayWith(t, replay.Defaults(), strings.NewReader(log))
	horizon := time.Time{}.Add(replay.Horizon)
	for _, res := range rep.Results {
		assert.False(t, res.End.After(horizon), "%v ends at %v", res.Strategy, res.End)
		if p50 := res.Total.FirstP50; p50 != replay.NoAnswer {
			assert.GreaterOrEqual(t, p50, time.Duration(0), "%v", res.Strategy)
		}
		for _, a := range got.of(res.Strategy) {
			assert.GreaterOrEqual(t, a.At.Sub(a.Submitted), time.Duration(0), "%v: %+v", res.Strategy, a)
			assert.False(t, a.At.After(horizon), "%v: %+v", res.Strategy, a)
		}
	}
	assert.Equal(t, 1, rep.Results[0].Total.Completed, "polling: J1; J2 hangs and J3 is forgotten")
	d := rep.Results[1].Total
	assert.Equal(t, 3, d.Requested)
	assert.Zero(t, d.Never, "the deadline Controller answers every job, at the horizon at the latest")
}

func TestNextCheckSaturates(t *testing.T) {
	from := time.Date(2013, 2, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, from.Add(time.Minute), replay.NextCheck(from, from, time.Minute))
	assert.Equal(t, from.Add(2*time.Minute), replay.NextCheck(from, from.Add(61*time.Second), time.Minute))
	far := from.Add(math.MaxInt64)
	assert.Equal(t, far, replay.NextCheck(from, far, time.Minute), "the next check past the largest duration is at it")
	assert.Equal(t, far, replay.NextCheck(from, far.Add(time.Hour), time.Minute))
}
