package gid_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/crisprt/crisp/internal/gid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func deep(n int) gid.ID {
	if n == 0 {
		return gid.Current()
	}
	return deep(n - 1)
}

func TestStableWithinAGoroutineAndDistinctAcrossLiveOnes(t *testing.T) {
	me := gid.Current()
	assert.NotZero(t, me)
	assert.Equal(t, me, deep(200), "the stack grew and moved; the ID did not")

	const n = 64
	ids := make([]gid.ID, n)
	var started, done sync.WaitGroup
	release := make(chan struct{})
	for i := range ids {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ids[i] = gid.Current()
			started.Done()
			<-release // all alive at once, so no descriptor is reused
			assert.Equal(t, ids[i], deep(50))
		}()
	}
	started.Wait()
	seen := map[gid.ID]bool{me: true}
	for _, id := range ids {
		assert.False(t, seen[id], "two live goroutines share an ID")
		seen[id] = true
	}
	close(release)
	done.Wait()
}

func BenchmarkCurrent(b *testing.B) {
	for b.Loop() {
		_ = gid.Current()
	}
}
