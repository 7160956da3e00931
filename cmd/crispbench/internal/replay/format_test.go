package replay_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
	"github.com/crisprt/crisp/cmd/crispbench/internal/replay"
)

func smallReport(t *testing.T, cfg replay.Config) *replay.Report {
	t.Helper()
	cfg.Name = "test.csv"
	rep, _ := replayWith(t, cfg, csvLog(t,
		"J1 C1 +0 1h node-1 hung 10m 30m",
		"J2 C2 +1m 5m node-1 completed 10m 30m",
		"J3 C3 +2m 5m node-2 completed 10m 30m",
		"J4 C3 +3m 2m node-2 failed 10m 30m",
	))
	return rep
}

func TestTable(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Nodes = 2
	var b bytes.Buffer
	require.NoError(t, smallReport(t, cfg).WriteTable(&b, 2))
	assert.Equal(t, `Replay of test.csv: 4 jobs from 3 customers, submitted 2013-02-01 to 2013-02-01.
2 nodes take jobs edf. polling checks every 1m; deadlines: start within the log's term (1h if none), result within the log's term (2h if none) more, 2 retries.

customer  strategy  requested  completed  failed  retried  missed  unknown  never  satisfaction  first answer p50    p99
total     polling           4          1       1        0       0        0      2        25.00%                6m  never
total     deadline          4          2       1        1       0        1      0        50.00%                6m    40m

the 2 customers with the largest difference in satisfaction:
C2        polling           1          0       0        0       0        0      1         0.00%             never  never
          deadline          1          1       0        1       0        0      0       100.00%               10m    10m
C1        polling           1          0       0        0       0        0      1         0.00%             never  never
          deadline          1          0       0        0       0        1      0         0.00%               40m    40m

satisfaction = completed / requested. Every job is completed, failed, missed (on every
attempt), unknown (no result within its timeout) or never answered; retried jobs missed a
start deadline and were sent to another node. p50/p99: time from submission to the first
answer, counting jobs never answered as longest.
`, b.String())

	cfg.Strategies = []replay.Strategy{replay.Deadline}
	cfg.Policy, cfg.First, cfg.StartDeadline = replay.CustomerFirst, []string{"C3"}, 20*60e9
	b.Reset()
	require.NoError(t, smallReport(t, cfg).WriteTable(&b, 1))
	assert.Contains(t, b.String(), "2 nodes take jobs customer (first: C3). deadlines: start within 20m, result within the log's term (2h if none) more, 2 retries.")
	assert.Contains(t, b.String(), "the 1 least satisfied customers:\nC1 ")
}

// TestFormatsAgree reads the JSON and CSV reports back and checks that
// they say the same.
func TestFormatsAgree(t *testing.T) {
	rep, _ := replayWith(t, replay.Defaults(), generated(t, 11, 600))
	var js, cs bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	require.NoError(t, rep.WriteCSV(&cs))

	var doc struct {
		Jobs       int
		Customers  int
		Strategies []struct {
			Strategy  string
			Total     map[string]any
			Customers []map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	assert.Equal(t, rep.Jobs, doc.Jobs)
	rows, err := csv.NewReader(&cs).ReadAll()
	require.NoError(t, err)
	require.Equal(t, replay.CSVHeader, rows[0])
	rows = rows[1:]
	require.Len(t, rows, len(doc.Strategies)*(1+doc.Customers))

	k := 0
	for _, s := range doc.Strategies {
		for i, st := range append([]map[string]any{s.Total}, s.Customers...) {
			row := rows[k]
			k++
			assert.Equal(t, s.Strategy, row[0])
			if i == 0 {
				assert.Empty(t, row[1], "the totals have no customer")
				assert.NotContains(t, st, "customer")
			} else {
				assert.Equal(t, st["customer"], row[1])
			}
			for c, name := range replay.CSVHeader[2:] {
				want := st[name]
				got := row[2+c]
				switch w := want.(type) {
				case nil:
					assert.Equal(t, "never", got, name)
				case float64:
					g, err := strconv.ParseFloat(got, 64)
					require.NoError(t, err)
					assert.Equal(t, w, g, "%s %s", row[1], name)
				default:
					t.Fatalf("%s: %T", name, want)
				}
			}
		}
	}
	assert.Contains(t, js.String(), `"first_answer_p99_s": null`, "polling leaves jobs unanswered")
	assert.True(t, strings.HasSuffix(js.String(), "}\n"))
}

// Issue 14, item 7: the table pads by display width, not bytes, and a
// tab or newline in a name does not break its row.
func TestTableAlignsNamesOfAnyScript(t *testing.T) {
	cfg := replay.Defaults()
	cfg.Name = "names.csv"
	names := []string{"株式会社テスト", "Zoe\u0301 Müller", "tab\there", "line\nbreak", "plain"}
	var rows []string
	for i, n := range names {
		rows = append(rows, fmt.Sprintf("J%d|%s|+%dm|5m|node-1|completed|10m|30m", i, n, i))
	}
	rep, _ := replayWith(t, cfg, pipeLog(t, rows...))
	var b bytes.Buffer
	require.NoError(t, rep.WriteTable(&b, len(names)))
	out := b.String()
	t.Log("\n" + out)

	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "  polling  ") || strings.Contains(l, "  deadline  ") || strings.HasPrefix(l, "customer  ") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 1+2+2*len(names), "one line per row: names break no row")
	col := func(l string) int { // display column where the strategy starts
		i := strings.Index(l, "  polling  ")
		if i < 0 {
			i = strings.Index(l, "  deadline  ")
		}
		if i < 0 {
			i = strings.Index(l, "  strategy  ")
		}
		return runewidth.StringWidth(l[:i])
	}
	for _, l := range lines {
		assert.Equal(t, col(lines[0]), col(l), "strategy column of %q", l)
		assert.Equal(t, runewidth.StringWidth(lines[0]), runewidth.StringWidth(l), "width of %q", l)
		assert.NotContains(t, l, "\t")
	}
	assert.Contains(t, out, `tab\there`)
	assert.Contains(t, out, `line\nbreak`)
	assert.Contains(t, out, "株式会社テスト")
}

// pipeLog is csvLog with fields separated by "|", so that names may hold
// spaces, tabs and newlines.
func pipeLog(t testing.TB, rows ...string) io.Reader {
	t.Helper()
	var b bytes.Buffer
	w := joblog.NewWriter(&b, joblog.CSV)
	for _, r := range rows {
		f := strings.Split(r, "|")
		require.Len(t, f, 8, r)
		require.Equal(t, "completed", f[5])
		j := joblog.Job{ID: f[0], Customer: f[1], Submitted: t0.Add(dur(t, f[2])), Duration: dur(t, f[3]), Node: f[4],
			Outcome: joblog.Completed, Agreement: joblog.Agreement{StartDeadline: dur(t, f[6]), ResultTimeout: dur(t, f[7])}}
		require.NoError(t, w.Write(j))
	}
	require.NoError(t, w.Flush())
	return &b
}
