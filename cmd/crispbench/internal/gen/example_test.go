package gen_test

import (
	"fmt"
	"os"

	"github.com/crisprt/crisp/cmd/crispbench/internal/gen"
	"github.com/crisprt/crisp/cmd/crispbench/internal/joblog"
)

func ExampleGenerator_Jobs() {
	p := gen.Defaults()
	p.Jobs, p.Customers, p.PriorityCustomers = 6, 2, 1 // about six jobs in two months
	g, err := gen.New(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := joblog.NewWriter(os.Stdout, joblog.CSV)
	for j := range g.Jobs() {
		if err := w.Write(j); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// job,customer,submitted,duration,node,outcome,start_deadline,result_timeout,priority
	// J000001,C2,2013-02-01T18:23:04Z,7m29s,node-2,completed,15m0s,1h45m0s,1
	// J000002,C1,2013-02-08T22:52:00Z,4m2s,node-1,completed,2h0m0s,1h30m0s,
	// J000003,C2,2013-02-13T06:32:49Z,35s,node-2,completed,15m0s,1h45m0s,1
	// J000004,C1,2013-02-24T20:36:55Z,30s,node-1,completed,2h0m0s,1h30m0s,
	// J000005,C2,2013-02-25T08:12:00Z,5m53s,node-2,completed,15m0s,1h45m0s,1
	// J000006,C1,2013-03-05T14:54:12Z,1m44s,node-1,completed,2h0m0s,1h30m0s,
}
