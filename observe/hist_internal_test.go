package observe

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucketsCoverEveryValueInOrder(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 15, 16, 17, 31, 32, 1000, 1 << 40, 1<<63 - 1, 1<<64 - 1} {
		i := bucketOf(v)
		require.Less(t, i, nBuckets, "value %d", v)
		assert.GreaterOrEqual(t, i, prev, "buckets grow with the value")
		assert.LessOrEqual(t, v, upperOf(i), "value %d within its bucket's bound", v)
		if i > 0 {
			assert.Greater(t, v, upperOf(i-1), "value %d above the bucket before", v)
		}
		prev = i
	}
	for i := 1; i < nBuckets; i++ {
		assert.Equal(t, i, bucketOf(upperOf(i)), "bucket %d holds its own bound", i)
		assert.Equal(t, i, bucketOf(upperOf(i-1)+1), "bucket %d starts after the one before", i)
	}
}

func TestQuantilesWithinOneBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h histogram
	vals := make([]time.Duration, 10000)
	for i := range vals {
		vals[i] = time.Duration(r.ExpFloat64() * float64(time.Millisecond))
		h.record(vals[i])
	}
	slices.Sort(vals)
	var c counts
	h.read(&c)
	d := c.durations()
	assert.EqualValues(t, len(vals), d.Count)
	assert.Equal(t, vals[len(vals)-1], d.Max)
	for _, q := range []struct {
		got  time.Duration
		want time.Duration
	}{{d.P50, vals[len(vals)/2-1]}, {d.P99, vals[len(vals)*99/100-1]}} {
		assert.GreaterOrEqual(t, q.got, q.want)
		assert.LessOrEqual(t, float64(q.got), float64(q.want)*1.125+1)
	}
	var empty counts
	assert.Zero(t, empty.quantile(0.5))
}
