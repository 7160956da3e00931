package policytest_test

import (
	"fmt"
	"strings"

	"github.com/crisprt/crisp/deadline"
	"github.com/crisprt/crisp/policy"
	"github.com/crisprt/crisp/policy/policytest"
)

// customerAFirst runs customer A's work first, whatever the deadlines,
// and the rest earliest deadline first.
func customerAFirst(a, b *policy.Item) int {
	if aIsA, bIsA := a.Tag == "A", b.Tag == "A"; aIsA != bIsA {
		if aIsA {
			return -1
		}
		return 1
	}
	return deadline.Compare(a.Deadline, b.Deadline)
}

// In a test, call t.Fatal(err) on a non-nil error.
func ExampleTestPolicy() {
	err := policytest.TestPolicy(policy.Func(customerAFirst), customerAFirst)
	fmt.Println("errors:", err)
	// Output: errors: <nil>
}

// A failure names the check and the items involved. Here a policy
// promised to be customer-first is plain EDF.
func ExampleTestPolicy_failure() {
	err := policytest.TestPolicy(policy.EDF(), customerAFirst)
	first, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Println(first)
	// Output: push and pop: queue A.Pop() returned {seq 5, deadline +0s, tag "B"}, but {seq 33, deadline +0s, priority 2, tag "A"} was queued and comes first
}
