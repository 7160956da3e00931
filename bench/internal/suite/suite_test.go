package suite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/bench/internal/suite"
	"github.com/crisprt/crisp/bench/internal/workload"
)

type noTimer struct{}

func (noTimer) StartTimer() {}
func (noTimer) StopTimer()  {}

// checkAll runs workload name at its short size on every system that
// implements it and checks each answer against the expected one.
func checkAll(t *testing.T, name string) {
	w := suite.Lookup(name)
	require.NotNil(t, w, "workload %s", name)
	size := w.Size(suite.Short)
	require.NotNil(t, size, "workload %s has no short size", name)
	want := size.Expect()
	for _, sys := range suite.Systems {
		run, ok := w.Impl[sys]
		if !ok {
			continue
		}
		t.Run(sys, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := run(ctx, noTimer{}, size)
			if known := w.Known[sys]; known != nil && errors.Is(err, known) {
				t.Skipf("known failure of %s on %s: %v", sys, name, err)
			}
			require.NoError(t, err)
			assert.Equal(t, want, got, "%s on %s, %v", name, sys, size)
		})
	}
}

func TestPingPong(t *testing.T)       { checkAll(t, "pingpong") }
func TestRequestReply(t *testing.T)   { checkAll(t, "request-reply") }
func TestThroughput(t *testing.T)     { checkAll(t, "throughput-4x100") }
func TestSavinaPingPong(t *testing.T) { checkAll(t, "savina-pingpong") }
func TestCounting(t *testing.T)       { checkAll(t, "counting") }
func TestThreadRing(t *testing.T)     { checkAll(t, "threadring") }
func TestForkJoin(t *testing.T)       { checkAll(t, "fork-join") }
func TestChameneos(t *testing.T)      { checkAll(t, "chameneos") }
func TestBig(t *testing.T)            { checkAll(t, "big") }
func TestNQueens(t *testing.T)        { checkAll(t, "nqueens") }
func TestBank(t *testing.T)           { checkAll(t, "bank") }
func TestFib(t *testing.T)            { checkAll(t, "fib") }
func TestRing(t *testing.T)           { checkAll(t, "ring-1k") }

// The expected answers themselves, against numbers known independently.
func TestExpectations(t *testing.T) {
	for size, want := range map[int]int64{6: 4, 8: 92, 10: 724, 12: 14200} {
		got := workload.NQueens{Size: size, Threshold: 4, Workers: 1, Limit: 1 << 30}.Expect().Count
		assert.Equal(t, want, got, "solutions of %d queens", size)
	}
	assert.Equal(t, int64(75025), workload.Fib{N: 25}.Expect().Count)
	assert.Equal(t, 150049, workload.Fib{N: 25}.Actors())
	assert.Equal(t, workload.Result{Count: 10, Check: 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9},
		workload.Ring{Processes: 10, Tokens: 10, Hops: 10}.Expect())
}
