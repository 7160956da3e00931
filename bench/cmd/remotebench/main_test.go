package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor-go's remote leaves gRPC's and its endpoint
		// manager's goroutines behind after Shutdown, for a while.
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}

// Every system answers every request correctly (run checks each reply)
// and the table has a figure in each cell.
func TestEverySystemRunsBothWorkloads(t *testing.T) {
	systems, header, cells := "crisp-local,crisp-remote,crisp-remote-pb,proto-remote", "| workload | crisp-local | crisp-remote | crisp-remote-pb | proto-remote |", 6
	if raceEnabled {
		systems, header, cells = "crisp-local,crisp-remote,crisp-remote-pb", "| workload | crisp-local | crisp-remote | crisp-remote-pb |", 5
	}
	var out bytes.Buffer
	err := run([]string{"-roundtrips", "50", "-pairs", "2", "-inflight", "10", "-per", "40", "-reps", "1", "-system", systems}, &out, io.Discard)
	require.NoError(t, err)
	text := out.String()
	assert.Contains(t, text, header)
	for _, row := range []string{"| round trip", "| throughput 2x10", "| throughput: CPU"} {
		i := strings.Index(text, row)
		require.GreaterOrEqual(t, i, 0, row)
		line := text[i:]
		line = line[:strings.Index(line, "\n")]
		assert.Equal(t, cells, strings.Count(line, "|"), line)
		assert.NotContains(t, line, "| 0 |", line)
	}
	assert.Contains(t, text, "A remote call costs")
}

func TestBadFlagsAreErrors(t *testing.T) {
	assert.Error(t, run([]string{"-system", "nope"}, io.Discard, io.Discard))
	assert.Error(t, run([]string{"-per", "5", "-inflight", "10"}, io.Discard, io.Discard))
}

// With -hogs the run still answers everything, says how many hogs ran
// beside it, and stops them (goleak checks at the end).
func TestHogsRunBesideAndStop(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-roundtrips", "20", "-pairs", "1", "-inflight", "5", "-per", "10", "-reps", "1",
		"-system", "crisp-remote", "-hogs", "1"}, &out, io.Discard)
	require.NoError(t, err)
	assert.Contains(t, out.String(), "1 CPU-bound goroutines beside")
	assert.Error(t, run([]string{"-hogs", "-1"}, io.Discard, io.Discard))
}
