package replay_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
)

// timeline renders answers as "+offset job kind [first] [final]" lines.
func timeline(as []replay.Answer) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		s := fmt.Sprintf("+%v %s %s", a.At.Sub(t0), a.Job, a.Kind)
		if a.First {
			s += " first"
		}
		if a.Final {
			s += " final"
		}
		out = append(out, s)
	}
	return out
}

func TestAHungJobLosesTheJobsBehindIt(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Nodes = 2
	rep, got := replayWith(t, cfg, csvLog(t,
		"J1 C1 +0 1h node-1 hung 10m 30m",           // holds node-1 for an hour, then the node restarts
		"J2 C2 +1m 5m node-1 completed 10m 30m",     // waits behind J1
		"J3 C3 +2m 5m node-2 completed 10m 30m",     // on the other node
		"J4 C4 +58m 5m node-1 completed 30m 30m",    // still waiting, in time, when node-1 restarts
		"J5 C5 +1h30m 90s node-1 completed 10m 30m", // after the restart
	))

	t.Run("polling never answers the hung job nor those it holds up", func(t *testing.T) {
		assert.Equal(t, []string{
			"+7m0s J3 completed first final",
			"+1h32m0s J5 completed first final", // ended at +1h31m30s, seen at the next check
		}, timeline(got.of(replay.Polling)))
		assert.Equal(t, 3, rep.Results[0].Total.Never)
	})
	t.Run("deadlines answer every job", func(t *testing.T) {
		assert.Equal(t, []string{
			"+7m0s J3 completed first final",
			"+11m0s J2 missed first",        // node-1 is busy with J1 at J2's deadline
			"+16m0s J2 completed final",     // retried on node-2, free
			"+40m0s J1 unknown first final", // started, no result within 10m+30m
			"+1h31m30s J5 completed first final",
			"+1h58m0s J4 unknown first final", // started as node-1 restarted, and was lost
		}, timeline(got.of(replay.Deadline)))
		tot := rep.Results[1].Total
		assert.Equal(t, replay.Stats{Requested: 5, Completed: 3, Retried: 1, Unknown: 2,
			FirstP50: 10 * time.Minute, FirstP99: time.Hour}, withoutWaits(tot))
	})
}

// withoutWaits drops what Stats keeps unexported, for comparing.
func withoutWaits(s replay.Stats) replay.Stats {
	return replay.Stats{Customer: s.Customer, Requested: s.Requested, Completed: s.Completed, Failed: s.Failed,
		Retried: s.Retried, Missed: s.Missed, Unknown: s.Unknown, Never: s.Never, FirstP50: s.FirstP50, FirstP99: s.FirstP99}
}

func TestARetryGoesWhereFewestJobsAreInFlight(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Nodes, cfg.Strategies = 3, []replay.Strategy{replay.Deadline}
	_, got := replayWith(t, cfg, csvLog(t,
		"J1 X +0 2h node-1 completed 4h 4h",
		"J2 X +0 2h node-2 completed 4h 4h", // node-2 is as busy as node-1 ...
		"J3 X +0 1m node-2 completed 4h 4h", // ... and has a job waiting besides
		"J4 Y +1m 1m node-3 completed 4h 4h",
		"J5 Y +2m 5m node-1 completed 10m 1h",
	))
	// J5 misses on node-1 at +12m: node-2 has two jobs in flight, node-3
	// (which was free again at +2m) none.
	assert.Contains(t, timeline(got.of(replay.Deadline)), "+17m0s J5 completed final")
}

func TestRetriesAreBounded(t *testing.T) {
	log := func() []string {
		return []string{
			"J1 X +0 2h node-1 completed 4h 4h",
			"J2 X +0 2h node-2 completed 4h 4h",
			"J3 Y +1m 1m node-1 completed 10m 1h",
		}
	}
	for _, tc := range []struct {
		retries int
		want    []string
	}{
		{0, []string{"+11m0s J3 missed first final"}},
		{2, []string{"+11m0s J3 missed first", "+21m0s J3 missed", "+31m0s J3 missed final"}},
	} {
		t.Run(fmt.Sprintf("%d retries", tc.retries), func(t *testing.T) {
			cfg := replay.Defaults()
			cfg.Nodes, cfg.Retries, cfg.Strategies = 2, tc.retries, []replay.Strategy{replay.Deadline}
			rep, got := replayWith(t, cfg, csvLog(t, log()...))
			var j3 []string
			for _, l := range timeline(got.of(replay.Deadline)) {
				if strings.Fields(l)[1] == "J3" {
					j3 = append(j3, l)
				}
			}
			assert.Equal(t, tc.want, j3)
			y := rep.Results[0].Customers[1]
			require.Equal(t, "Y", y.Customer)
			assert.Equal(t, 1, y.Missed)
			assert.Equal(t, min(tc.retries, 1), y.Retried)
		})
	}
}

func TestFailuresAndSlowJobs(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Nodes = 2
	rows := []string{
		"J1 X +0 1h node-1 completed 10m 20m", // longer than its agreement allows
		"J2 Y +0 5m node-2 failed 10m 20m",    // bad data
	}
	_, got := replayWith(t, cfg, csvLog(t, rows...))
	assert.Equal(t, []string{"+5m0s J2 failed first final", "+1h0m0s J1 completed first final"},
		timeline(got.of(replay.Polling)))
	assert.Equal(t, []string{"+5m0s J2 failed first final", "+30m0s J1 unknown first final"},
		timeline(got.of(replay.Deadline)))
}

func TestNodePolicies(t *testing.T) {
	rows := []string{
		"J1 B +0 10m node-1 completed 1h 1h",   // keeps the node busy while the others arrive
		"J2 B +1m 1m node-1 completed 1h 1h",   // the earlier deadline
		"J3 A +2m 1m node-1 completed 2h 1h 1", // customer A, priority class 1
		"J4 B +3m 1m node-1 completed 30m 1h",  // the earliest deadline
		"J5 C +4m 1m node-1 completed 1h30m 1h",
	}
	for _, tc := range []struct {
		policy replay.Policy
		first  []string
		order  []string // completions after J1's
	}{
		{replay.EDF, nil, []string{"J4", "J2", "J5", "J3"}},
		{replay.FIFO, nil, []string{"J2", "J3", "J4", "J5"}},
		{replay.Priority, nil, []string{"J3", "J4", "J2", "J5"}},
		{replay.CustomerFirst, nil, []string{"J3", "J4", "J2", "J5"}},           // first: the priority class
		{replay.CustomerFirst, []string{"C"}, []string{"J5", "J4", "J2", "J3"}}, // first: C
	} {
		t.Run(fmt.Sprintf("%v first %v", tc.policy, tc.first), func(t *testing.T) {
			cfg := replay.Defaults()
			cfg.Nodes, cfg.Retries, cfg.Strategies = 1, 0, []replay.Strategy{replay.Deadline}
			cfg.Policy, cfg.First = tc.policy, tc.first
			_, got := replayWith(t, cfg, csvLog(t, rows...))
			var order []string
			for _, a := range got.of(replay.Deadline) {
				if a.Kind == replay.Completed && a.Job != "J1" {
					order = append(order, a.Job)
				}
			}
			assert.Equal(t, tc.order, order)
		})
	}
}
