package vclock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crisprt/crisp/vclock"
)

func TestMisuseNilFunctionsAndParents(t *testing.T) {
	vc := vclock.New(t0)
	assert.PanicsWithValue(t, "vclock: AfterFunc with a nil function", func() { vc.AfterFunc(0, nil) })
	assert.PanicsWithValue(t, "vclock: At with a nil function", func() { vc.At(t0, nil) })
	assert.PanicsWithValue(t, "vclock: WithDeadline with a nil parent", func() {
		//lint:ignore SA1012 the nil parent is the point
		vc.WithDeadline(nil, t0)
	})
}
