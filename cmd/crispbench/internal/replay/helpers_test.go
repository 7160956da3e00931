package replay_test

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/gen"
	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
)

var t0 = time.Date(2013, 2, 1, 9, 0, 0, 0, time.UTC)

// answers collects what customers are told, per strategy.
type answers struct {
	mu sync.Mutex
	by map[replay.Strategy][]replay.Answer
}

func (a *answers) observe(s replay.Strategy, ans replay.Answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.by == nil {
		a.by = map[replay.Strategy][]replay.Answer{}
	}
	a.by[s] = append(a.by[s], ans)
}

// of returns the answers under s, in a fixed order: by time, job and
// finality.
func (a *answers) of(s replay.Strategy) []replay.Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.Clone(a.by[s])
	slices.SortFunc(out, func(x, y replay.Answer) int {
		return cmp.Or(x.At.Compare(y.At), cmp.Compare(x.Job, y.Job), compareBool(x.Final, y.Final))
	})
	return out
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// byJob returns the answers under s, grouped by job.
func (a *answers) byJob(s replay.Strategy) map[string][]replay.Answer {
	m := map[string][]replay.Answer{}
	for _, ans := range a.of(s) {
		m[ans.Job] = append(m[ans.Job], ans)
	}
	return m
}

// replayWith replays log under cfg, collecting every answer.
func replayWith(t testing.TB, cfg replay.Config, log io.Reader) (*replay.Report, *answers) {
	t.Helper()
	var got answers
	cfg.Observe = got.observe
	rep, err := replay.Run(context.Background(), log, cfg)
	require.NoError(t, err)
	return rep, &got
}

// csvLog builds a log from rows of "job customer +offset duration node
// outcome [start_deadline result_timeout [priority]]", offset from t0.
func csvLog(t testing.TB, rows ...string) io.Reader {
	t.Helper()
	var b bytes.Buffer
	w := joblog.NewWriter(&b, joblog.CSV)
	for _, r := range rows {
		f := strings.Fields(r)
		require.GreaterOrEqual(t, len(f), 6, r)
		j := joblog.Job{ID: f[0], Customer: f[1], Submitted: t0.Add(dur(t, f[2])), Duration: dur(t, f[3]), Node: f[4]}
		switch f[5] {
		case "completed":
			j.Outcome = joblog.Completed
		case "failed":
			j.Outcome = joblog.Failed
		case "hung":
			j.Outcome = joblog.Hung
		default:
			t.Fatalf("outcome %q", f[5])
		}
		if len(f) >= 8 {
			j.Agreement.StartDeadline, j.Agreement.ResultTimeout = dur(t, f[6]), dur(t, f[7])
		}
		if len(f) >= 9 {
			j.Agreement.Priority = 1
		}
		require.NoError(t, w.Write(j))
	}
	require.NoError(t, w.Flush())
	return &b
}

func dur(t testing.TB, s string) time.Duration {
	d, err := time.ParseDuration(strings.TrimPrefix(s, "+"))
	require.NoError(t, err)
	return d
}

// generated returns a log made by the generator: the default log's
// customers and habits, jobs jobs, seed seed.
func generated(t testing.TB, seed uint64, jobs int) io.Reader {
	t.Helper()
	p := gen.Defaults()
	p.Seed, p.Jobs = seed, jobs
	// Keep the load of the default log: fewer jobs over a shorter period.
	p.To = p.From.Add(time.Duration(float64(p.To.Sub(p.From)) * float64(jobs) / float64(gen.Defaults().Jobs)))
	g, err := gen.New(p)
	require.NoError(t, err)
	var b bytes.Buffer
	w := joblog.NewWriter(&b, joblog.CSV)
	for j := range g.Jobs() {
		require.NoError(t, w.Write(j))
	}
	require.NoError(t, w.Flush())
	return &b
}
