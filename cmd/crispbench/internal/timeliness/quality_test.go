package timeliness_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/timeliness"
)

func TestSimulateRunsAJobForItsCost(t *testing.T) {
	jobs := []timeliness.Job{
		{Arrival: 0, Cost: 3 * time.Millisecond, Deadline: time.Hour},
		{Arrival: time.Millisecond, Cost: time.Millisecond, Deadline: time.Millisecond},           // behind the first: missed at 2ms
		{Arrival: time.Millisecond, Cost: time.Millisecond, Deadline: 2 * time.Millisecond},       // due at 3ms, the first ends at 3ms: missed
		{Arrival: time.Millisecond, Cost: 2 * time.Millisecond, Deadline: 2*time.Millisecond + 1}, // starts at 3ms, 1ns before its deadline
	}
	out, err := timeliness.Simulate(context.Background(), jobs, timeliness.EDF, 1)
	require.NoError(t, err)
	assert.Equal(t, []timeliness.Outcome{
		{Started: true, Start: 0, End: 3 * time.Millisecond},
		{},
		{},
		{Started: true, Start: 3 * time.Millisecond, End: 5 * time.Millisecond},
	}, out)
	s := timeliness.Score(jobs, out)
	assert.InDelta(t, 0.5, s.MissRatio, 1e-9)
	assert.InDelta(t, 3.0/7, s.UsefulWork, 1e-9, "the last job finished after its deadline: not useful")
}

func TestCostDropsWhatCannotFinish(t *testing.T) {
	jobs := []timeliness.Job{
		{Arrival: 0, Cost: 3 * time.Millisecond, Deadline: time.Hour},
		{Arrival: time.Millisecond, Cost: 2 * time.Millisecond, Deadline: 3 * time.Millisecond}, // must start by 2ms
		{Arrival: time.Millisecond, Cost: time.Millisecond, Deadline: 3 * time.Millisecond},     // must start by 3ms: just misses
		{Arrival: time.Millisecond, Cost: time.Millisecond, Deadline: 4 * time.Millisecond},     // starts at 3ms, ends at 4ms, due 5ms
	}
	out, err := timeliness.Simulate(context.Background(), jobs, timeliness.EDFCost, 1)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, false, true}, []bool{out[0].Started, out[1].Started, out[2].Started, out[3].Started})
	assert.Equal(t, 3*time.Millisecond, out[3].Start)
}

// feasible reports, by trying every order, whether jobs of equal cost c,
// all queued at instant 0, can all start before their deadlines on one
// worker: the k-th to run starts at k·c and must start strictly before
// its deadline.
func feasible(deadlines []time.Duration, c time.Duration) bool {
	n := len(deadlines)
	used := make([]bool, n)
	var try func(k int) bool
	try = func(k int) bool {
		if k == n {
			return true
		}
		for i := range n {
			if !used[i] && time.Duration(k)*c < deadlines[i] {
				used[i] = true
				if try(k + 1) {
					return true
				}
				used[i] = false
			}
		}
		return false
	}
	return try(0)
}

// Jackson's rule: for messages all queued at once with equal handler
// costs, EDF meets every deadline whenever some order does. Deadlines
// lie on a grid of half the cost, so that ties and deadlines at the
// very instant a message could start come up often.
func TestJacksonsRule(t *testing.T) {
	const (
		cost   = time.Millisecond
		trials = 400
	)
	r := rand.New(rand.NewPCG(7, 7))
	var feasibleSets, fifoFailures int
	for trial := range trials {
		n := 1 + r.IntN(7)
		dls := make([]time.Duration, n)
		for i := range dls {
			dls[i] = time.Duration(1+r.IntN(2*n+2)) * cost / 2
		}
		if !feasible(dls, cost) {
			continue
		}
		feasibleSets++
		for _, v := range []timeliness.Variant{timeliness.EDF, timeliness.FIFO} {
			missed, err := timeliness.QueuedAtOnce(context.Background(), dls, cost, v)
			require.NoError(t, err)
			if v == timeliness.EDF {
				assert.Zero(t, missed, "trial %d: deadlines %v are feasible, yet EDF missed %d", trial, dls, missed)
			} else if missed > 0 {
				fifoFailures++
			}
		}
	}
	require.Greater(t, feasibleSets, trials/4, "too few feasible sets to say anything")
	// The same check fails for FIFO, so it can tell a policy that obeys
	// Jackson's rule from one that does not.
	assert.Positive(t, fifoFailures)
	t.Logf("%d feasible sets; FIFO missed a deadline in %d of them", feasibleSets, fifoFailures)
}

// Below full utilisation EDF should miss no more than FIFO, over many
// random traces taken together (any single trace may go either way).
func TestEDFMissesNoMoreThanFIFOBelowFullLoad(t *testing.T) {
	c := timeliness.DefaultQuality(true)
	c.Utilisations = []float64{0.5, 0.7, 0.9}
	c.Variants = []timeliness.Variant{timeliness.EDF, timeliness.FIFO}
	c.Seeds, c.Jobs = 4, 250
	res, err := timeliness.Quality(context.Background(), c)
	require.NoError(t, err)
	for _, workers := range c.Workers {
		var edf, fifo float64
		for _, p := range res.Points {
			if p.Workers != workers {
				continue
			}
			switch p.Variant {
			case "EDF":
				edf += p.MissRatio.Mean
			case "FIFO":
				fifo += p.MissRatio.Mean
			}
		}
		assert.LessOrEqual(t, edf, fifo, "workers %d, seeds %d..%d", workers, c.Seed, c.Seed+uint64(c.Seeds)-1)
		t.Logf("workers %d: summed mean miss ratios EDF %.3f, FIFO %.3f", workers, edf, fifo)
	}
}

func TestQualityIsDeterministic(t *testing.T) {
	c := timeliness.DefaultQuality(true)
	c.Utilisations, c.Dists, c.Seeds = []float64{1.1}, []timeliness.Dist{timeliness.Bimodal}, 2
	a, err := timeliness.Quality(context.Background(), c)
	require.NoError(t, err)
	b, err := timeliness.Quality(context.Background(), c)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	for _, p := range a.Points {
		assert.Greater(t, p.MissRatio.Mean, 0.0, fmt.Sprint(p)) // overloaded: something is missed
	}
}

// The overload section, small: nothing is ever lost, whatever the mode,
// and admission control refuses work at send when it is overloaded.
func TestOverloadLosesNothingAndAdmissionRefusesAtSend(t *testing.T) {
	c := timeliness.DefaultOverload(true)
	r, err := timeliness.Overload(context.Background(), c)
	require.NoError(t, err)
	require.Len(t, r.Points, len(c.Workers)*len(c.Dists)*len(c.Utilisations)*len(c.Modes))
	for _, p := range r.Points {
		assert.Zero(t, p.Lost, "%v", p)
		switch p.Mode {
		case timeliness.PlainEDF.String(), timeliness.CostMode.String():
			assert.Zero(t, p.Refused.Mean, "%v", p)
		case timeliness.Admission.String():
			if p.Workers == 1 {
				assert.Positive(t, p.Refused.Mean, "%v", p)
				assert.Zero(t, p.AnswerP50, "refused at the send's instant: %v", p)
			}
			assert.Zero(t, p.Late.Mean, "exact hints: nothing that runs is late: %v", p)
		}
	}
}
