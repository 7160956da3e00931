package policytest_test

import (
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/policy/policytest"
)

func byDeadline(a, b *policy.Item) int { return deadline.Compare(a.Deadline, b.Deadline) }

func byPriority(a, b *policy.Item) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	return byDeadline(a, b)
}

func arrivalOnly(a, b *policy.Item) int { return 0 }

func TestBuiltinPolicies(t *testing.T) {
	for _, tt := range []struct {
		name  string
		p     policy.Policy
		order func(a, b *policy.Item) int
	}{
		{"EDF", policy.EDF(), byDeadline},
		{"FIFO", policy.FIFO(), arrivalOnly},
		{"Priority", policy.ByPriority(), byPriority},
		{"Func", policy.Func(byPriority), byPriority},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.NoError(t, policytest.TestPolicy(tt.p, tt.order), "with its order")
			assert.NoError(t, policytest.TestPolicy(tt.p, nil), "structure only")
		})
	}
}

func TestOrderIsCheckedOnlyWhenGiven(t *testing.T) {
	assert.NoError(t, policytest.TestPolicy(policy.FIFO(), nil))
	err := policytest.TestPolicy(policy.FIFO(), byDeadline)
	require.Error(t, err)
	assert.ErrorContains(t, err, "order: pushed in arrival order: queue A.Pop() returned")
}

func TestNilPolicy(t *testing.T) {
	assert.EqualError(t, policytest.TestPolicy(nil, nil), "policytest: nil policy")
}

func TestNewQueueReturningNilStopsTheSuite(t *testing.T) {
	err := policytest.TestPolicy(policy.QueueFunc(func() policy.Queue { return nil }), nil)
	assert.EqualError(t, err, "NewQueue: NewQueue() returned nil")
}

// panicsOnPop is an EDF heap whose Pop panics once it has popped three
// items.
type panicsOnPop struct {
	*policy.Heap
	pops int
}

func (q *panicsOnPop) Pop() *policy.Item {
	if q.pops++; q.pops > 3 {
		panic("tired of popping")
	}
	return q.Heap.Pop()
}

func TestAPanicIsAFailure(t *testing.T) {
	p := policy.QueueFunc(func() policy.Queue { return &panicsOnPop{Heap: policy.NewHeap(byDeadline)} })
	var err error
	require.NotPanics(t, func() { err = policytest.TestPolicy(p, nil) })
	require.Error(t, err)
	assert.ErrorContains(t, err, "empty queue: the queue panicked in queue A.Pop(): tired of popping\n")
	assert.ErrorContains(t, err, "policytest_test.(*panicsOnPop).Pop", "the failure has the stack")
}

// lenIsZero is an EDF heap that always reports itself empty.
type lenIsZero struct{ *policy.Heap }

func (lenIsZero) Len() int { return 0 }

func TestEveryFailingCheckIsReported(t *testing.T) {
	p := policy.QueueFunc(func() policy.Queue { return lenIsZero{policy.NewHeap(byDeadline)} })
	err := policytest.TestPolicy(p, byDeadline)
	require.Error(t, err)

	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "errors.Join")
	var checks []string
	for _, e := range joined.Unwrap() {
		check, _, _ := strings.Cut(e.Error(), ":")
		checks = append(checks, check)
	}
	assert.Subset(t, checks, []string{
		"push and pop", "remove", "remove from another queue", "independent queues",
		"push again", "items unchanged", "order", "order of equals", "order of resumed items",
		"random interleaving (balanced, seed 1)",
	})
	assert.ErrorContains(t, err, "push and pop: after queue A.Push({seq 34, deadline +6ms, priority 2, tag \"B\"}), queue A.Len() = 0, want 1")
}

func TestFailuresRepeat(t *testing.T) {
	p := policy.QueueFunc(func() policy.Queue { return lenIsZero{policy.NewHeap(byDeadline)} })
	first := policytest.TestPolicy(p, byDeadline)
	require.Error(t, first)
	assert.Equal(t, first.Error(), policytest.TestPolicy(p, byDeadline).Error())
}

func TestItemsAreAsDocumented(t *testing.T) {
	// The package documentation tells order functions what items to
	// expect; an order that looks at everything sees nothing else.
	tags := make(map[any]bool)
	priorities := make(map[int]bool)
	var resumed, noDeadline bool
	var earliest, latest time.Time
	look := func(it *policy.Item) {
		tags[it.Tag] = true
		priorities[it.Priority] = true
		resumed = resumed || it.Resumed
		if it.Deadline.IsZero() {
			noDeadline = true
			return
		}
		if earliest.IsZero() || it.Deadline.Before(earliest) {
			earliest = it.Deadline
		}
		if it.Deadline.After(latest) {
			latest = it.Deadline
		}
	}
	order := func(a, b *policy.Item) int {
		look(a)
		look(b)
		return byPriority(a, b)
	}
	require.NoError(t, policytest.TestPolicy(policy.ByPriority(), order))

	assert.Equal(t, map[any]bool{nil: true, "A": true, "B": true, "C": true}, tags)
	assert.Equal(t, map[int]bool{-1: true, 0: true, 1: true, 2: true}, priorities)
	assert.True(t, resumed, "some items are resumed")
	assert.True(t, noDeadline, "some items have no deadline")
	assert.Less(t, latest.Sub(earliest), 10*time.Millisecond, "deadlines are a few milliseconds apart")
}

func TestAPanicOfTheOrderIsNotBlamedOnTheQueue(t *testing.T) {
	customerFirst := func(a, b *policy.Item) int {
		// Asserts the tag's type, which the documentation warns against:
		// a nil tag panics.
		return cmp.Compare(b.Tag.(string), a.Tag.(string))
	}
	err := policytest.TestPolicy(policy.EDF(), customerFirst)
	require.Error(t, err)
	assert.ErrorContains(t, err, "push and pop: the order function panicked: interface conversion")
	assert.NotContains(t, err.Error(), "the queue panicked")
}
