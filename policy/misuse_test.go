package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/crisprt/crisp/policy"
)

func TestMisuseNilComparisons(t *testing.T) {
	assert.PanicsWithValue(t, "crisp: policy.Func with a nil comparison", func() { policy.Func(nil) })
	assert.PanicsWithValue(t, "crisp: policy.NewHeap with a nil comparison", func() { policy.NewHeap(nil) })
}
