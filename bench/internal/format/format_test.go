package format

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
