package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var update = flag.Bool("update", false, "rewrite testdata/want.md from the output")

// The fixture is two sets of two workloads, quiet and with 2 hogs:
// crisp 10% slower on pingpong under hogs (not flagged), 50% on bank
// (flagged against chan and phony), and goakt timing out on bank under
// hogs (no ratio to compare).
func TestRendersBothSetsAndComparison(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-cpu", "Test CPU", "testdata/quiet", "testdata/hogs"}, &out, io.Discard)
	require.NoError(t, err)
	golden := filepath.Join("testdata", "want.md")
	if *update {
		require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), out.String())
}

func TestCells(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"-cpu", "Test CPU", "testdata/quiet"}, &out, io.Discard))
	text := out.String()
	// 290 µs over 500 round trips; phony's 250 µs is the fastest actor
	// library, chan's 200 µs the baseline.
	assert.Contains(t, text, "| pingpong (per round trip) | 500 round trips | 580 ns (1.16x, 1.45x chan) | — | 400 ns (0.80x) |")
	assert.Contains(t, text, "crisp-tell | chan |", "crisp-tell, first seen in the second file, keeps the runner's order")
	assert.Contains(t, text, "Run on 2026-11-23; Test CPU, GOMAXPROCS 2; go1.26.8 linux/amd64. Suite short, 3 repetitions")
	assert.Contains(t, text, "is 1.09 in the median row (1.07 to 1.10 over rows)")
	assert.NotContains(t, text, "crisp / peer", "one set: no comparison")
}

func TestRejectsMixedSets(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"quiet/01-pingpong.json", "hogs/02-bank.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644))
	}
	err := run([]string{dir}, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "hogs 2, but")
}

func TestRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"a", "b", "c"},
		{"testdata/nonexistent"},
		{"testdata/want.md"},
	} {
		assert.Error(t, run(args, io.Discard, io.Discard), "%q", args)
	}
}

func TestCPUModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpuinfo")
	require.NoError(t, os.WriteFile(path, []byte("processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\n"), 0o644))
	assert.Equal(t, "Some CPU @ 2.0GHz", cpuModel(path))
	assert.Equal(t, "unknown CPU", cpuModel(filepath.Join(t.TempDir(), "none")))
}
