package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
	"github.com/crisprt/crisp/cmd/crispbench/internal/sample"
)

// bounded checks that every job requested got answers within its
// agreement: a first answer within its start deadline plus its result
// timeout, a final one within (1+retries) start deadlines plus the
// result timeout, and exactly one final answer after any others.
func bounded(t *testing.T, rep *replay.Report, got *answers, retries int) {
	t.Helper()
	byJob := got.byJob(replay.Deadline)
	res := rep.Results[len(rep.Results)-1]
	require.Equal(t, replay.Deadline, res.Strategy)
	require.Equal(t, res.Total.Requested, len(byJob), "every job answered")
	for id, as := range byJob {
		first, last := as[0], as[len(as)-1]
		d, r := first.StartDeadline, first.ResultTimeout
		require.True(t, first.First && last.Final, "%s: %v", id, as)
		require.LessOrEqual(t, first.At.Sub(first.Submitted), d+r, "%s: first answer", id)
		require.LessOrEqual(t, last.At.Sub(first.Submitted), time.Duration(1+retries)*d+r, "%s: final answer", id)
		for _, a := range as[:len(as)-1] {
			require.False(t, a.Final, "%s: answered after its final answer", id)
			require.Equal(t, replay.Missed, a.Kind, "%s", id)
		}
	}
	for _, c := range res.Customers {
		require.Zero(t, c.Never, "customer %s", c.Customer)
	}
}

func TestDeadlinesAnswerEveryJobWithinItsAgreement(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Strategies = []replay.Strategy{replay.Deadline}
	t.Run("the embedded log", func(t *testing.T) {
		if testing.Short() || raceEnabled {
			t.Skip("a 25,000-job replay; the generated logs below stand in for it")
		}
		rep, got := replayWith(t, cfg, sample.Open())
		bounded(t, rep, got, cfg.Retries)
	})
	jobs := 4000
	if raceEnabled {
		jobs = 800
	}
	for _, seed := range []uint64{2, 3, 4} {
		t.Run(fmt.Sprintf("generated log, seed %d", seed), func(t *testing.T) {
			rep, got := replayWith(t, cfg, generated(t, seed, jobs))
			bounded(t, rep, got, cfg.Retries)
		})
	}
	t.Run("no retries, tight agreements, fewer nodes", func(t *testing.T) {
		c := cfg
		c.Retries, c.Nodes, c.StartDeadline, c.ResultTimeout = 0, 3, 5*time.Minute, 10*time.Minute
		rep, got := replayWith(t, c, generated(t, 5, jobs))
		bounded(t, rep, got, c.Retries)
		assert.Equal(t, 5*time.Minute, got.of(replay.Deadline)[0].StartDeadline, "the override applies")
	})
}

func TestPollingLeavesJobsUnanswered(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Strategies = []replay.Strategy{replay.Polling}
	rep, got := replayWith(t, cfg, generated(t, 2, 3000))
	tot := rep.Results[0].Total
	assert.Positive(t, tot.Never)
	assert.Zero(t, tot.Retried+tot.Missed+tot.Unknown, "polling neither retries nor gives up")
	assert.Equal(t, replay.NoAnswer, tot.FirstP99)
	for _, a := range got.of(replay.Polling) {
		require.True(t, a.First && a.Final)
		require.Zero(t, a.At.Sub(a.Submitted)%cfg.PollInterval, "answered at a check: %v", a)
	}
}

// TestPollingChecksLiterally replays with the polling Controller making
// every status check, each a timed wait and a look, and compares the
// answers with the Controller that waits for the job's end and then for
// the next check.
func TestPollingChecksLiterally(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Strategies = []replay.Strategy{replay.Polling}
	cfg.PollInterval = 5 * time.Minute
	jobs := 1200
	if raceEnabled {
		jobs, cfg.PollInterval = 500, 15*time.Minute
	}
	log := generated(t, 6, jobs).(*bytes.Buffer).Bytes()
	rep, want := replayWith(t, cfg, bytes.NewReader(log))

	lit := cfg
	replay.PollLiterally(&lit, rep.Results[0].End.Add(time.Hour)) // after the last job that ends
	litRep, got := replayWith(t, lit, bytes.NewReader(log))

	assert.Equal(t, timeline(want.of(replay.Polling)), timeline(got.of(replay.Polling)))
	assert.Equal(t, withoutWaits(rep.Results[0].Total), withoutWaits(litRep.Results[0].Total))
	assert.Positive(t, rep.Results[0].Total.Never)
}

func TestBothStrategiesReplayTheSameJobs(t *testing.T) {
	rep, got := replayWith(t, replay.Defaults(), generated(t, 7, 2000))
	require.Len(t, rep.Results, 2)
	p, d := rep.Results[0], rep.Results[1]
	assert.Equal(t, replay.Polling, p.Strategy)
	assert.Equal(t, rep.Jobs, p.Total.Requested)
	assert.Equal(t, rep.Jobs, d.Total.Requested)
	require.Equal(t, len(p.Customers), len(d.Customers))
	for i := range p.Customers {
		assert.Equal(t, p.Customers[i].Customer, d.Customers[i].Customer)
		assert.Equal(t, p.Customers[i].Requested, d.Customers[i].Requested, p.Customers[i].Customer)
	}
	// The same jobs, with the same submission times and terms.
	submitted := func(s replay.Strategy) map[string]string {
		m := map[string]string{}
		for id, as := range got.byJob(s) {
			m[id] = fmt.Sprint(as[0].Submitted, as[0].StartDeadline, as[0].ResultTimeout)
		}
		return m
	}
	sp, sd := submitted(replay.Polling), submitted(replay.Deadline)
	for id, s := range sp {
		assert.Equal(t, s, sd[id], id)
	}
}

// report renders rep in all three formats.
func report(t *testing.T, rep *replay.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, rep.WriteTable(&b, 10))
	require.NoError(t, rep.WriteJSON(&b))
	require.NoError(t, rep.WriteCSV(&b))
	return b.String()
}

func TestSameLogSameReport(t *testing.T) {
	log := func() io.Reader { return sample.Open() }
	if raceEnabled {
		log = func() io.Reader { return generated(t, 8, 1500) }
	}
	cfg := replay.Defaults()
	cfg.Name = "log"
	var first string
	for run, procs := range []int{2, 1, 4, 2} {
		prev := runtime.GOMAXPROCS(procs)
		rep, err := replay.Run(context.Background(), log(), cfg)
		runtime.GOMAXPROCS(prev)
		require.NoError(t, err)
		out := report(t, rep)
		if run == 0 {
			first = out
			continue
		}
		require.True(t, out == first, "run %d (GOMAXPROCS=%d) differs from the first", run, procs)
	}
}

func TestMalformedLogs(t *testing.T) {
	bad := "job,customer,submitted,duration,node,outcome\n" +
		"J1,C1,2013-02-01T09:00:00Z,5m,node-1,completed\n" +
		"J2,C1,2013-02-01T09:01:00Z,-5m,node-1,completed\n" +
		"J3,C2,2013-02-01T09:02:00Z,5m,node-2,failed\n"
	t.Run("stops at the first bad row", func(t *testing.T) {
		_, err := replay.Run(context.Background(), strings.NewReader(bad), replay.Defaults())
		var le *joblog.LineError
		require.ErrorAs(t, err, &le)
		assert.EqualError(t, err, `line 3, field "duration": "-5m" is negative`)
	})
	t.Run("skips bad rows when asked", func(t *testing.T) {
		cfg := replay.Defaults()
		cfg.SkipBad = true
		rep, err := replay.Run(context.Background(), strings.NewReader(bad), cfg)
		require.NoError(t, err)
		assert.Equal(t, 2, rep.Jobs)
		assert.Equal(t, 1, rep.Skipped)
		assert.Equal(t, []string{`line 3, field "duration": "-5m" is negative`}, rep.SkipErrors)
		assert.Equal(t, 2, rep.Results[1].Total.Completed+rep.Results[1].Total.Failed)
	})
	t.Run("an empty log", func(t *testing.T) {
		_, err := replay.Run(context.Background(), strings.NewReader(""), replay.Defaults())
		assert.ErrorIs(t, err, joblog.ErrEmpty)
	})
	t.Run("a bad row deep in a long log", func(t *testing.T) {
		var b bytes.Buffer
		_, err := io.Copy(&b, generated(t, 9, 3000))
		require.NoError(t, err)
		b.WriteString("J999999,C001,2013-01-01T00:00:00Z,5m,node-1,completed,1h0m0s,2h0m0s,\n")
		_, err = replay.Run(context.Background(), &b, replay.Defaults())
		assert.ErrorIs(t, err, joblog.ErrOutOfOrder)
	})
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := replay.Defaults()
	calls := 0
	cfg.Progress = func(int64) {
		if calls++; calls == 3 {
			cancel()
		}
	}
	_, err := replay.Run(ctx, sample.Open(), cfg)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*replay.Config)
		want   string
	}{
		{func(c *replay.Config) { c.Strategies = nil }, "no strategy to replay"},
		{func(c *replay.Config) { c.Strategies = []replay.Strategy{replay.Deadline, replay.Deadline} }, "strategy deadline given twice"},
		{func(c *replay.Config) { c.Nodes = 0 }, "nodes must be at least 1, not 0"},
		{func(c *replay.Config) { c.Policy = 9 }, "unknown policy Policy(9)"},
		{func(c *replay.Config) { c.Retries = -1 }, "retries must not be negative, not -1"},
		{func(c *replay.Config) { c.PollInterval = 0 }, "poll interval must be positive, not 0s"},
		{func(c *replay.Config) { c.StartDeadline = -time.Second }, "start deadline must not be negative, not -1s"},
	} {
		cfg := replay.Defaults()
		tc.change(&cfg)
		assert.EqualError(t, cfg.Validate(), tc.want)
		_, err := replay.Run(context.Background(), sample.Open(), cfg)
		assert.EqualError(t, err, tc.want)
	}
	d := replay.Defaults()
	assert.NoError(t, d.Validate())
	_, err := replay.ParsePolicy("lifo")
	assert.EqualError(t, err, `unknown policy "lifo" (edf, fifo, priority or customer)`)
	for _, p := range []replay.Policy{replay.EDF, replay.FIFO, replay.Priority, replay.CustomerFirst} {
		q, err := replay.ParsePolicy(p.String())
		assert.NoError(t, err)
		assert.Equal(t, p, q)
	}
}
