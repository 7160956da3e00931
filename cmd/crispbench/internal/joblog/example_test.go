package joblog_test

import (
	"fmt"
	"strings"

	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

func ExampleReader() {
	log := `job,customer,submitted,duration,node,outcome,start_deadline,result_timeout,priority
J1,C001,2013-02-01T09:00:00Z,4m30s,node-1,completed,15m,2h,1
J2,C002,2013-02-01T09:00:05Z,270,node-2,hung,,,
`
	r := joblog.NewReader(strings.NewReader(log))
	for job, err := range r.All() {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(job.ID, job.Customer, job.Duration, job.Outcome, job.Agreement.StartDeadline)
	}
	// Output:
	// J1 C001 4m30s completed 15m0s
	// J2 C002 4m30s hung 0s
}
