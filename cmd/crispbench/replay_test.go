package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// genLog writes a generated log of about n jobs to a file and returns
// its path.
func genLog(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.csv")
	_, _, err := runArgs(t, "gen", "--jobs", itoa(n), "--to", "2013-02-08", "--seed", "3", "-o", path)
	require.NoError(t, err)
	return path
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestReplayEmbeddedLog(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("replays the whole embedded log")
	}
	out, errs, err := runArgs(t, "replay", "--strategy", "deadline", "--top", "3")
	require.NoError(t, err)
	assert.Empty(t, errs, "no progress bar when stderr is not a terminal")
	lines := strings.Split(out, "\n")
	assert.Equal(t, "Replay of seed1.csv (embedded): 24,784 jobs from 180 customers, submitted 2013-02-01 to 2013-03-31.", lines[0])
	assert.Contains(t, out, "\ntotal     deadline      24784 ")
	assert.Contains(t, out, "the 3 least satisfied customers:")
}

func TestReplayFormats(t *testing.T) {
	log := genLog(t, 300)
	table, errs, err := runArgs(t, "replay", log)
	require.NoError(t, err)
	assert.Empty(t, errs)
	assert.True(t, strings.HasPrefix(table, "Replay of "+log+": "), table)
	assert.Contains(t, table, "\ntotal     polling  ")
	assert.Contains(t, table, "\ntotal     deadline ")
	assert.Contains(t, table, "the 10 customers with the largest difference in satisfaction:")

	js, _, err := runArgs(t, "replay", log, "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Log        string
		Jobs       int
		Strategies []struct{ Strategy string }
	}
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	assert.Equal(t, log, doc.Log)
	assert.Len(t, doc.Strategies, 2)

	cs, _, err := runArgs(t, "replay", log, "--format=csv", "--strategy=polling")
	require.NoError(t, err)
	rows, err := csv.NewReader(strings.NewReader(cs)).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, "strategy", rows[0][0])
	assert.Equal(t, []string{"polling", ""}, rows[1][:2])
	for _, r := range rows[1:] {
		assert.Equal(t, "polling", r[0])
	}

	t.Run("the same log and flags give the same bytes", func(t *testing.T) {
		for _, args := range [][]string{{}, {"--format", "json"}, {"--format", "csv", "--strategy", "polling"}} {
			a, _, err := runArgs(t, append([]string{"replay", log}, args...)...)
			require.NoError(t, err)
			b, _, err := runArgs(t, append([]string{"replay", log}, args...)...)
			require.NoError(t, err)
			assert.True(t, a == b, "%v", args)
		}
		again, _, err := runArgs(t, "replay", log, "--format", "json")
		require.NoError(t, err)
		assert.Equal(t, js, again)
	})
}

func TestReplayFlags(t *testing.T) {
	log := genLog(t, 300)
	out, _, err := runArgs(t, "replay", log, "--policy", "customer", "--first", "C001,C002", "--nodes", "4",
		"--start-deadline", "20m", "--result-timeout", "90m", "--retries", "1", "--poll-interval", "5m", "--top", "0")
	require.NoError(t, err)
	assert.Contains(t, out, "4 nodes (the log names 8) take jobs customer (first: C001, C002). "+
		"polling checks every 5m; deadlines: start within 20m, result within 1h30m more, 1 retries.")
	assert.NotContains(t, out, "customers with the largest difference")
}

func TestReplayBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--strategy", "sometimes"}, `--strategy must be one of "polling","deadline","both" but got "sometimes"`},
		{[]string{"--policy", "lifo"}, `--policy must be one of "edf","fifo","priority","customer" but got "lifo"`},
		{[]string{"--format", "xml"}, `--format must be one of "table","json","csv" but got "xml"`},
		{[]string{"--nodes", "0"}, "replay: nodes must be at least 1, not 0"},
		{[]string{"--retries=-1"}, "replay: retries must not be negative, not -1"},
		{[]string{"--poll-interval", "0s"}, "replay: poll interval must be positive, not 0s"},
		{[]string{"--start-deadline=-1m"}, "replay: start deadline must not be negative, not -1m0s"},
		{[]string{"--first", "C001"}, "replay: --first applies only with --policy customer"},
		{[]string{"--top=-1"}, "replay: --top must not be negative, not -1"},
		{[]string{"--retries", "two"}, "--retries: expected a valid 64 bit int but got \"two\""},
		{[]string{"a.csv", "b.csv"}, "unexpected argument b.csv"},
	} {
		out, _, err := runArgs(t, append([]string{"replay"}, tc.args...)...)
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%v", tc.args)
		assert.EqualError(t, err, tc.want+" (see 'crispbench replay --help')", "%v", tc.args)
		assert.Empty(t, out)
	}
}

func TestReplayBadLogs(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("job,customer,submitted,duration,node,outcome\n"+
		"J1,C1,2013-02-01T09:00:00Z,5m,node-1,completed\n"+
		"J2,C1,2013-02-01T09:01:00Z,5m,node-1,done\n"+
		"J3,C2,2013-02-01T09:02:00Z,5m,node-2,failed\n"), 0o644))

	out, _, err := runArgs(t, "replay", bad)
	assert.EqualError(t, err, bad+`: line 3, field "outcome": "done" is not one of completed, failed, hung`)
	assert.Empty(t, out)

	out, _, err = runArgs(t, "replay", bad, "--skip-bad")
	require.NoError(t, err)
	assert.Contains(t, out, `Skipped 1 bad rows; the first: line 3, field "outcome": "done" is not one of completed, failed, hung.`)
	assert.Contains(t, out, "2 jobs from 2 customers")

	empty := filepath.Join(dir, "empty.csv")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, _, err = runArgs(t, "replay", empty)
	assert.EqualError(t, err, empty+": joblog: the log holds no jobs")

	_, _, err = runArgs(t, "replay", filepath.Join(dir, "missing.csv"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestReplayChart(t *testing.T) {
	log := genLog(t, 300)
	path := filepath.Join(t.TempDir(), "replay.svg")
	out, _, err := runArgs(t, "replay", log, "--chart", path, "--format", "csv")
	require.NoError(t, err)
	assert.NotEmpty(t, out)
	svg, err := os.ReadFile(path)
	require.NoError(t, err)
	d := xml.NewDecoder(bytes.NewReader(svg))
	var root xml.StartElement
	for root.Name.Local == "" {
		tok, err := d.Token()
		require.NoError(t, err)
		if s, ok := tok.(xml.StartElement); ok {
			root = s
		}
	}
	assert.Equal(t, "svg", root.Name.Local)

	_, _, err = runArgs(t, "replay", log, "--chart", filepath.Join(t.TempDir(), "no", "such", "dir", "r.svg"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestReplayHelp(t *testing.T) {
	out, _, err := runArgs(t, "replay", "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "Usage: crispbench replay [<log>] [flags]")
	assert.Contains(t, out, "    crispbench replay --policy customer --first C001 --format csv > report.csv")
	assert.Contains(t, out, "--strategy=\"both\"")
	out, _, err = runArgs(t, "--help")
	require.NoError(t, err)
	assert.Contains(t, out, "  replay        Replay a job log under the polling and the deadline Controller,")
}

// Issue 14, item 6, from the command line: terms whose sum passes the
// largest duration saturate; a completed job is reported completed.
func TestReplayHugeTerms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.csv")
	require.NoError(t, os.WriteFile(path, []byte("job,customer,submitted,duration,node,outcome\n"+
		"J1,C1,2013-02-01T09:00:00Z,10m,node-1,completed\n"), 0o644))
	out, _, err := runArgs(t, "replay", path, "--strategy", "deadline", "--format", "csv",
		"--start-deadline", "2562047h", "--result-timeout", "2562047h")
	require.NoError(t, err)
	assert.Contains(t, out, "deadline,,1,1,0,0,0,0,0,1,600,600\n", "completed, first answer after 10 minutes")
}
