package vclock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/vclock"
)

// A meter is read every six hours, each reading due within a minute of
// its instant, for one day of virtual time; the run takes microseconds.
func Example() {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	vc := vclock.New(start)
	sys := crisp.NewSystem(crisp.WithClock(vc))
	defer sys.Shutdown(context.Background())

	type meter struct{ readings int }
	m := crisp.Spawn(sys, &meter{})
	var read func()
	read = func() { // runs on the driver, at each reading's instant
		crisp.Tell(m, func(p *crisp.Proc, s *meter) {
			s.readings++
			fmt.Printf("%s reading %d, due by %s\n",
				p.Now().Format("Jan 2 15:04"), s.readings, p.Deadline().Format("15:04"))
		}, crisp.Within(time.Minute))
		vc.AfterFunc(6*time.Hour, read)
	}
	vc.AfterFunc(6*time.Hour, read)

	if err := vc.RunUntil(context.Background(), sys.WaitIdle, start.Add(24*time.Hour)); err != nil {
		fmt.Println(err)
	}
	n, _ := crisp.Call(m, func(_ *crisp.Proc, s *meter) (int, error) { return s.readings, nil }).Get()
	next, _ := vc.Next()
	fmt.Printf("at %s: %d readings; next at %s\n",
		vc.Now().Format("Jan 2 15:04"), n, next.Format("Jan 2 15:04"))
	// Output:
	// Jan 1 06:00 reading 1, due by 06:01
	// Jan 1 12:00 reading 2, due by 12:01
	// Jan 1 18:00 reading 3, due by 18:01
	// Jan 2 00:00 reading 4, due by 00:01
	// at Jan 2 00:00: 4 readings; next at Jan 2 06:00
}
