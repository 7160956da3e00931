package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		512:                      "512 ns",
		3630 * time.Nanosecond:   "3.63 µs",
		20700 * time.Microsecond: "20.7 ms",
		2010 * time.Millisecond:  "2.01 s",
	} {
		assert.Equal(t, want, Duration(d))
	}
}

func TestFailed(t *testing.T) {
	assert.Equal(t, "not run", Failed("", false))
	assert.Equal(t, "over memory *", Failed("heap over -maxheap 6 GiB", true))
	assert.Equal(t, "timed out *", Failed("timed out after 20s", true))
	assert.Equal(t, "wrong answer *", Failed("wrong answer: 3", true))
	assert.Equal(t, "failed *", Failed("spawn failed", true))
}

func TestFailureLines(t *testing.T) {
	rows := []*Row{{Workload: "fib", Cells: []*Cell{
		{System: "goakt", Failures: []Failure{{Rep: 1, Error: "spawn failed"}}, Skipped: 4},
		{System: "crisp"},
	}}}
	assert.Equal(t, []string{
		"- fib on goakt, run 1: spawn failed",
		"- fib on goakt: the remaining 4 runs skipped (why)",
	}, FailureLines(rows, " (why)"))
	assert.Equal(t, "failed *", FailedCell(rows[0].Cells[0]))
	assert.Equal(t, "not run", FailedCell(rows[0].Cells[1]))
	assert.Nil(t, rows[0].Cell("phony"))
	assert.True(t, IsVariant("crisp+dl"))
	assert.False(t, IsVariant("crisp"))
}
