package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunWritesJSON(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-suite", "short", "-reps", "2", "-workload", "pingpong,bank", "-json"}, &out, io.Discard)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	require.Len(t, rep.Rows, 2)
	for _, r := range rep.Rows {
		assert.NotEmpty(t, r.Cells, r.Workload)
		for _, c := range r.Cells {
			assert.Empty(t, c.Failures, "%s on %s", r.Workload, c.System)
			assert.Len(t, c.Times, 2, "%s on %s", r.Workload, c.System)
			assert.Positive(t, c.Median, "%s on %s", r.Workload, c.System)
			assert.Len(t, c.Allocs, 2, "%s on %s: bytes allocated by each run", r.Workload, c.System)
			assert.Len(t, c.GCs, 2, "%s on %s: collections during each run", r.Workload, c.System)
			if c.System == "crisp" && r.Workload == "bank" {
				// Each transfer's closures, Call and future are allocations of
				// their own: the figure counts them. (pingpong's Sends
				// allocate nothing.)
				assert.GreaterOrEqual(t, c.Allocs[0], uint64(r.Ops)*64, "%s on crisp: bytes allocated by a run of %d operations", r.Workload, r.Ops)
			}
		}
	}
}

func TestRunWritesMarkdown(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-suite", "short", "-reps", "1", "-workload", "fib", "-system", "crisp,chan"}, &out, io.Discard)
	require.NoError(t, err)
	text := out.String()
	assert.Contains(t, text, "| workload | size | crisp | chan |")
	assert.Contains(t, text, "| fib | fib(12), 287 actors |")
	assert.Contains(t, text, "crisp / chan")
	assert.Contains(t, text, "Hogs: 0 ")
	assert.Contains(t, text, "Allocated per operation and collections per run")
	assert.Regexp(t, `\| fib \| \d+ B, \d+ GC \| \d+ B, \d+ GC \|`, text)
	assert.True(t, strings.HasSuffix(text, "Failures: none.\n"), text)
}

func TestRunWithHogs(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-suite", "short", "-reps", "1", "-workload", "pingpong,fib", "-system", "crisp,chan", "-hogs", "2", "-json"}, &out, io.Discard)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.Equal(t, 2, rep.Hogs)
	require.Len(t, rep.Rows, 2)
	for _, r := range rep.Rows {
		for _, c := range r.Cells {
			assert.Empty(t, c.Failures, "%s on %s", r.Workload, c.System)
			assert.Len(t, c.Times, 1, "%s on %s", r.Workload, c.System)
		}
	}
	// run stops the hogs before it returns: none may be left spinning.
	goleak.VerifyNone(t)
}

func TestListWorkloads(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-suite", "short", "-list"}, &out, io.Discard))
	names := strings.Fields(out.String())
	assert.Equal(t, "pingpong", names[0])
	assert.Contains(t, names, "fib")
	assert.NotContains(t, names, "ring-1m", "the short suite has no million-actor ring")
}

func TestFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"-suite", "huge"},
		{"-system", "akka"},
		{"-workload", "nope"},
		{"-cpuprofile", "x.prof"},
		{"-trace", "x.trace"},
		{"-reps", "0"},
		{"-hogs", "-1"},
		{"extra"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		assert.Error(t, err, "%q", args)
	}
}

func TestProfileAndTraceAreWritten(t *testing.T) {
	for flag, magic := range map[string]string{
		"-trace":      "go 1.",    // a runtime execution trace's header
		"-cpuprofile": "\x1f\x8b", // a pprof profile: gzip
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := []string{"-suite", "short", "-workload", "pingpong", "-system", "crisp", "-reps", "1", flag, out}
		require.NoError(t, run(context.Background(), args, io.Discard, io.Discard), flag)
		b, err := os.ReadFile(out)
		require.NoError(t, err, flag)
		assert.True(t, bytes.HasPrefix(b, []byte(magic)), "%s wrote %.20q", flag, b)
	}
}

func TestMedian(t *testing.T) {
	assert.Equal(t, int64(0), int64(median(nil)))
	assert.Equal(t, int64(2), int64(median([]time.Duration{3, 1, 2})))
	assert.Equal(t, int64(25), int64(median([]time.Duration{10, 40, 20, 30})))
}
