package crisp_test

import (
	"context"
	"fmt"

	"github.com/crisprt/crisp/crisp"
)

// A group runs its messages in parallel on several workers. Here the
// three workers share one ledger, and Key keeps the messages on one
// account from overlapping and starts them in the order they were sent;
// messages on different accounts run side by side.
func ExampleSpawnGroup() {
	sys := crisp.NewSystem()
	defer sys.Shutdown(context.Background())

	type ledger struct{ history [2][]string } // per account
	l := &ledger{}
	g := crisp.SpawnGroup(sys, []*ledger{l, l, l})

	for _, op := range []string{"open", "deposit", "withdraw"} {
		for acct := range 2 {
			crisp.Tell(g, func(_ *crisp.Proc, l *ledger) {
				l.history[acct] = append(l.history[acct], op)
			}, crisp.Key(acct))
		}
	}
	// Holding both keys, this runs after every message above.
	h, _ := crisp.Call(g, func(_ *crisp.Proc, l *ledger) ([2][]string, error) {
		return l.history, nil
	}, crisp.Key(0), crisp.Key(1)).Get()
	fmt.Println(g.Workers(), "workers:", h)
	// Output: 3 workers: [[open deposit withdraw] [open deposit withdraw]]
}
