package deadline_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/crisprt/crisp/deadline"
)

func ExampleMissedError() {
	due := time.Date(2013, 3, 1, 12, 0, 0, 0, time.UTC)
	var err error = &deadline.MissedError{
		Actor: "data-service", Message: "etl-job-17",
		Deadline: due, Detected: due.Add(2 * time.Millisecond),
	}

	var miss *deadline.MissedError
	if errors.Is(err, deadline.ErrMissed) && errors.As(err, &miss) {
		fmt.Println(miss.Message, "noticed", miss.Lateness(), "after its deadline")
	}
	// Output: etl-job-17 noticed 2ms after its deadline
}

func ExampleCompare() {
	due := time.Date(2013, 3, 1, 12, 0, 0, 0, time.UTC)
	var none time.Time
	fmt.Println(deadline.Compare(due, due.Add(time.Second)), deadline.Compare(none, due), deadline.Missed(due, due))
	// Output: -1 1 true
}
