package gen_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/gen"
	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

func generate(t testing.TB, p gen.Params) []joblog.Job {
	t.Helper()
	g, err := gen.New(p)
	require.NoError(t, err)
	return slices.Collect(g.Jobs())
}

func csvBytes(t testing.TB, p gen.Params, f joblog.Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := joblog.NewWriter(&buf, f)
	for _, j := range generate(t, p) {
		require.NoError(t, w.Write(j))
	}
	require.NoError(t, w.Flush())
	return buf.Bytes()
}

func withSeed(seed uint64) gen.Params {
	p := gen.Defaults()
	p.Seed = seed
	return p
}

func TestSameSeedSameBytes(t *testing.T) {
	for _, f := range []joblog.Format{joblog.CSV, joblog.JSONL} {
		a, b := csvBytes(t, withSeed(1), f), csvBytes(t, withSeed(1), f)
		assert.True(t, bytes.Equal(a, b), "%v: two runs with seed 1 differ", f)
	}
	g, err := gen.New(withSeed(3))
	require.NoError(t, err)
	assert.Equal(t, slices.Collect(g.Jobs()), slices.Collect(g.Jobs()), "each call of Jobs starts afresh")
}

func TestDifferentSeedsDiffer(t *testing.T) {
	one := csvBytes(t, withSeed(1), joblog.CSV)
	for seed := uint64(2); seed <= 4; seed++ {
		assert.False(t, bytes.Equal(one, csvBytes(t, withSeed(seed), joblog.CSV)), "seed %d", seed)
	}
}

// stats are the facts about a log that the paper's description fixes.
type stats struct {
	jobs, customers, nodes     int
	failed, hung               float64 // shares of all jobs
	weekendPerWeekday          float64 // jobs per weekend day / jobs per working day (UTC+1)
	officePerNight             float64 // jobs per hour 09-17 / jobs per hour 00-06, working days
	p50, p99                   time.Duration
	largestShare, smallestJobs float64
	withAgreement, priority    int
}

func measure(jobs []joblog.Job) stats {
	var s stats
	s.jobs = len(jobs)
	customers, nodes := map[string]int{}, map[string]bool{}
	var completed []time.Duration
	perDay := map[time.Time]int{}
	var office, night int
	zone := gen.Defaults().Zone
	for _, j := range jobs {
		customers[j.Customer]++
		nodes[j.Node] = true
		switch j.Outcome {
		case joblog.Failed:
			s.failed++
		case joblog.Hung:
			s.hung++
		case joblog.Completed:
			completed = append(completed, j.Duration)
		}
		local := j.Submitted.In(zone)
		day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
		perDay[day]++
		if wd := local.Weekday(); wd != time.Saturday && wd != time.Sunday {
			switch h := local.Hour(); {
			case h >= 9 && h < 17:
				office++
			case h < 6:
				night++
			}
		}
		if j.Agreement != (joblog.Agreement{}) {
			s.withAgreement++
		}
		if j.Agreement.Priority > 0 {
			s.priority++
		}
	}
	s.customers, s.nodes = len(customers), len(nodes)
	s.failed /= float64(s.jobs)
	s.hung /= float64(s.jobs)
	s.officePerNight = float64(office) / 8 / (float64(night) / 6)

	// Whole days of the period only, in the rhythm's zone.
	p := gen.Defaults()
	var weekend, weekday, nWeekend, nWeekday float64
	for d := p.From; d.Before(p.To); d = d.AddDate(0, 0, 1) {
		if d.Equal(p.From) {
			continue // starts at 01:00 local time
		}
		if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
			weekend += float64(perDay[d])
			nWeekend++
		} else {
			weekday += float64(perDay[d])
			nWeekday++
		}
	}
	s.weekendPerWeekday = (weekend / nWeekend) / (weekday / nWeekday)

	slices.Sort(completed)
	s.p50, s.p99 = completed[len(completed)/2], completed[len(completed)*99/100]
	top, least := 0, s.jobs
	for _, n := range customers {
		top, least = max(top, n), min(least, n)
	}
	s.largestShare, s.smallestJobs = float64(top)/float64(s.jobs), float64(least)
	return s
}

func (s stats) String() string {
	return fmt.Sprintf("%d jobs, %d customers, %d nodes, %.2f%% failed, %.2f%% hung, "+
		"weekend/weekday %.2f, office/night %.1f, completed p50 %v p99 %v (×%.1f), "+
		"largest customer %.1f%%, smallest %v jobs, %d priority jobs",
		s.jobs, s.customers, s.nodes, 100*s.failed, 100*s.hung, s.weekendPerWeekday, s.officePerNight,
		s.p50, s.p99, float64(s.p99)/float64(s.p50), 100*s.largestShare, s.smallestJobs, s.priority)
}

// TestDefaultLogMatchesThePaper checks the seed-1 log against what the
// paper says of the Controller's logs, with tolerances set from the
// generator's own variability:
//
//   - jobs: about 25,000. The count is Poisson (22,500 background jobs)
//     plus about 100 bursts of 25 on average; its standard deviation is
//     about 380 (1.5%), so ±5% is over three deviations.
//   - 180 customers, every one submitting (the smallest expects about
//     24 jobs), skewed: the largest has over 10%.
//   - failed: 3% less the hung share, a binomial deviation of 0.11%;
//     2-4% ("a few percent") is nine deviations either way.
//   - hung: 1%, a deviation of 0.06%; 0.7-1.3% is about five.
//   - weekends quieter: the rhythm gives 0.3; require below 0.5.
//   - office hours busier than nights: the shape gives about 6; require 3.
//   - heavy tail: durations are log-normal with log-spread about 1.22,
//     so p99/p50 is about 17; an exponential distribution has 6.6;
//     require 8.
func TestDefaultLogMatchesThePaper(t *testing.T) {
	p := gen.Defaults()
	jobs := generate(t, p)
	s := measure(jobs)
	t.Log(s)
	assert.InEpsilon(t, 25000, s.jobs, 0.05)
	assert.Equal(t, 180, s.customers)
	assert.Equal(t, 8, s.nodes)
	assert.Greater(t, s.largestShare, 0.10)
	assert.True(t, s.failed >= 0.02 && s.failed <= 0.04, "failed %.4f", s.failed)
	assert.True(t, s.hung >= 0.007 && s.hung <= 0.013, "hung %.4f", s.hung)
	assert.Less(t, s.weekendPerWeekday, 0.5)
	assert.Greater(t, s.officePerNight, 3.0)
	assert.Greater(t, float64(s.p99)/float64(s.p50), 8.0)
	assert.Equal(t, s.jobs, s.withAgreement, "every job carries its customer's agreement")
	assert.Positive(t, s.priority)

	for i, j := range jobs {
		require.False(t, j.Submitted.Before(p.From) || !j.Submitted.Before(p.To), "job %d at %v", i, j.Submitted)
		require.Equal(t, j.Submitted, j.Submitted.Truncate(time.Second))
		require.Equal(t, j.Duration, j.Duration.Truncate(time.Second))
		require.GreaterOrEqual(t, j.Duration, time.Second)
		require.Equal(t, fmt.Sprintf("J%06d", i+1), j.ID)
		if i > 0 {
			require.False(t, j.Submitted.Before(jobs[i-1].Submitted), "job %d out of order", i)
		}
	}
}

func TestCountAcrossSeeds(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		s := measure(generate(t, withSeed(seed)))
		assert.InEpsilon(t, 25000, s.jobs, 0.05, "seed %d", seed)
		assert.Equal(t, 180, s.customers, "seed %d", seed)
	}
}

func TestCustomers(t *testing.T) {
	g, err := gen.New(gen.Defaults())
	require.NoError(t, err)
	cs := g.Customers()
	require.Len(t, cs, 180)
	assert.Equal(t, "C001", cs[0].ID)
	assert.Equal(t, "C180", cs[179].ID)
	var share, fail float64
	prio := 0
	for i, c := range cs {
		share += c.Share
		fail += c.Share * c.FailRate
		if i > 0 {
			assert.Less(t, c.Share, cs[i-1].Share, "largest first")
		}
		assert.Positive(t, c.Agreement.StartDeadline)
		assert.GreaterOrEqual(t, c.Agreement.ResultTimeout, time.Hour)
		assert.GreaterOrEqual(t, c.Agreement.ResultTimeout, 20*c.MedianDuration)
		assert.Zero(t, c.Agreement.ResultTimeout%(15*time.Minute))
		if c.Agreement.Priority > 0 {
			prio++
			assert.Equal(t, 15*time.Minute, c.Agreement.StartDeadline)
		}
	}
	assert.InDelta(t, 1, share, 1e-9)
	assert.InDelta(t, 0.03, fail, 1e-9, "customers' failure rates average to FailRate")
	assert.Equal(t, 3, prio)
}

// Changing how outcomes are drawn must not move arrivals: the streams
// are independent.
func TestOutcomesDoNotMoveArrivals(t *testing.T) {
	p := gen.Defaults()
	base := generate(t, p)
	p.FailRate, p.HangRate, p.JobSpread = 0.2, 0.1, 2
	other := generate(t, p)
	require.Len(t, other, len(base))
	for i := range base {
		require.Equal(t, base[i].Submitted, other[i].Submitted)
		require.Equal(t, base[i].Customer, other[i].Customer)
	}
}

func TestAgreementsCanBeLeftOut(t *testing.T) {
	p := gen.Defaults()
	p.Agreements = false
	for _, j := range generate(t, p) {
		require.Zero(t, j.Agreement)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*gen.Params)
		says string
	}{
		{"no jobs", func(p *gen.Params) { p.Jobs = 0 }, "jobs must be at least 1"},
		{"no customers", func(p *gen.Params) { p.Customers = 0 }, "customers must be at least 1"},
		{"no nodes", func(p *gen.Params) { p.Nodes = -1 }, "nodes must be at least 1"},
		{"backwards period", func(p *gen.Params) { p.To = p.From }, "the period must end after it starts"},
		{"negative skew", func(p *gen.Params) { p.Skew = -1 }, "skew"},
		{"all bursts", func(p *gen.Params) { p.BurstShare = 1 }, "burst share"},
		{"tiny bursts", func(p *gen.Params) { p.BurstSize = 0.5 }, "burst size"},
		{"sub-second median", func(p *gen.Params) { p.MedianDuration = time.Millisecond }, "median duration"},
		{"failing everything", func(p *gen.Params) { p.FailRate = 0.9 }, "fail rate"},
		{"hanging everything", func(p *gen.Params) { p.HangRate = 0.9 }, "hang rate"},
		{"too many priority customers", func(p *gen.Params) { p.PriorityCustomers = 181 }, "priority customers"},
		{"no zone", func(p *gen.Params) { p.Zone = nil }, "zone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := gen.Defaults()
			c.edit(&p)
			_, err := gen.New(p)
			assert.ErrorContains(t, err, c.says)
		})
	}
	t.Run("a weekend with weekend share 0", func(t *testing.T) {
		p := gen.Defaults()
		p.From, p.To, p.WeekendShare = time.Date(2013, 2, 2, 0, 0, 0, 0, time.UTC), time.Date(2013, 2, 3, 0, 0, 0, 0, time.UTC), 0
		_, err := gen.New(p)
		assert.ErrorContains(t, err, "no hour in which customers submit jobs")
	})
}

func TestPartialHoursAndSmallLogs(t *testing.T) {
	p := gen.Defaults()
	p.From = time.Date(2013, 2, 4, 9, 30, 0, 0, time.UTC)
	p.To = time.Date(2013, 2, 4, 10, 15, 0, 0, time.UTC)
	p.Jobs, p.BurstShare = 500, 0.5
	jobs := generate(t, p)
	require.NotEmpty(t, jobs)
	assert.InEpsilon(t, 500, len(jobs), 0.3)
	for _, j := range jobs {
		require.False(t, j.Submitted.Before(p.From) || !j.Submitted.Before(p.To), "%v", j.Submitted)
	}
}

func BenchmarkJobs(b *testing.B) {
	g, err := gen.New(gen.Defaults())
	require.NoError(b, err)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for range g.Jobs() {
			n++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/job")
}
