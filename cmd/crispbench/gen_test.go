package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
	"github.com/crisprt/crisp/cmd/crispbench/internal/sample"
)

func countJobs(t *testing.T, r io.Reader) (int, joblog.Format) {
	t.Helper()
	jr := joblog.NewReader(r)
	n := 0
	for _, err := range jr.All() {
		require.NoError(t, err)
		n++
	}
	return n, jr.Format()
}

func TestGenWithoutFlagsWritesTheEmbeddedLog(t *testing.T) {
	out, errs, err := runArgs(t, "gen")
	require.NoError(t, err)
	assert.Empty(t, errs)
	want, err := io.ReadAll(sample.Open())
	require.NoError(t, err)
	assert.True(t, out == string(want), "crispbench gen differs from the embedded %s", sample.Name)
}

func TestGenFlags(t *testing.T) {
	t.Run("jsonl to standard output", func(t *testing.T) {
		out, _, err := runArgs(t, "gen", "--format", "jsonl", "--jobs", "300", "--customers", "20", "--priority-customers", "1")
		require.NoError(t, err)
		n, f := countJobs(t, strings.NewReader(out))
		assert.Equal(t, joblog.JSONL, f)
		assert.InEpsilon(t, 300, n, 0.3)
	})
	t.Run("same seed same bytes, other seed other bytes", func(t *testing.T) {
		a, _, err := runArgs(t, "gen", "--seed", "9", "--jobs", "500")
		require.NoError(t, err)
		b, _, err := runArgs(t, "gen", "--seed=9", "--jobs=500")
		require.NoError(t, err)
		c, _, err := runArgs(t, "gen", "--seed", "10", "--jobs", "500")
		require.NoError(t, err)
		assert.Equal(t, a, b)
		assert.NotEqual(t, a, c)
	})
	t.Run("a period given as days or times", func(t *testing.T) {
		out, _, err := runArgs(t, "gen", "--from", "2013-03-04", "--to", "2013-03-05T12:00:00+01:00", "--jobs", "200", "--no-agreements")
		require.NoError(t, err)
		from, to := time.Date(2013, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2013, 3, 5, 11, 0, 0, 0, time.UTC)
		jr := joblog.NewReader(strings.NewReader(out))
		for j, err := range jr.All() {
			require.NoError(t, err)
			require.False(t, j.Submitted.Before(from) || !j.Submitted.Before(to), "%v", j.Submitted)
			require.Zero(t, j.Agreement)
		}
	})
}

func TestGenToAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.jsonl")
	out, errs, err := runArgs(t, "gen", "-o", path, "--jobs", "1000", "--seed", "3")
	require.NoError(t, err)
	assert.Empty(t, out)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n, format := countJobs(t, f)
	assert.Equal(t, joblog.JSONL, format, "chosen by the file's extension")
	assert.Equal(t, fmt.Sprintf("wrote %d jobs to %s\n", n, path), errs)

	path = filepath.Join(dir, "jobs.jsonl.csv")
	_, _, err = runArgs(t, "gen", "--output", path, "--jobs", "10")
	require.NoError(t, err)
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(text), "job,customer,"), "csv unless the name ends in .jsonl")
}

func TestGenStopsWhenCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.csv")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, []string{"gen", "-o", path}, io.Discard, io.Discard)
	assert.ErrorIs(t, err, context.Canceled)
	assert.NoFileExists(t, path, "no half-written log is left")
}

func TestGenCannotCreateTheFile(t *testing.T) {
	_, _, err := runArgs(t, "gen", "-o", filepath.Join(t.TempDir(), "no", "such", "dir.csv"))
	assert.ErrorContains(t, err, "no such file or directory")
	var ue *usageError
	assert.False(t, errors.As(err, &ue), "not a usage error")
}

func TestBadCommandLines(t *testing.T) {
	cases := []struct {
		name string
		args []string
		says string
		help string
	}{
		{"unknown flag", []string{"gen", "--jbos", "10"}, "unknown flag --jbos", "crispbench gen --help"},
		{"not a number", []string{"gen", "--jobs", "many"}, `--jobs: expected a valid 64 bit int but got "many"`, "crispbench gen --help"},
		{"not a duration", []string{"gen", "--median-duration", "4"}, "--median-duration", "crispbench gen --help"},
		{"unknown format", []string{"gen", "--format", "xml"}, `--format must be one of "auto","csv","jsonl" but got "xml"`, "crispbench gen --help"},
		{"out of range", []string{"gen", "--jobs", "0"}, "jobs must be at least 1, not 0", "crispbench gen --help"},
		{"rate out of range", []string{"gen", "--fail-rate", "1.5"}, "fail rate must be in [0, 0.5], not 1.5", "crispbench gen --help"},
		{"bad day", []string{"gen", "--from", "1 Feb 2013"}, `--from: "1 Feb 2013" is neither a day`, "crispbench gen --help"},
		{"stray argument", []string{"gen", "jobs.csv"}, `unexpected argument jobs.csv`, "crispbench gen --help"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := runArgs(t, c.args...)
			var ue *usageError
			require.ErrorAs(t, err, &ue)
			assert.ErrorContains(t, err, c.says)
			assert.ErrorContains(t, err, "(see '"+c.help+"')")
			assert.Empty(t, out, "no log written")
		})
	}
}
