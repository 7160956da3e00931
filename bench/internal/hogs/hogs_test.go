package hogs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStopEndsEveryHog(t *testing.T) {
	h := Start(3)
	h.Stop()
	goleak.VerifyNone(t)
	assert.NotZero(t, h.sink.Load(), "every hog adds its last value on the way out")
}
