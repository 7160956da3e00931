package watchdog_test

import (
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/crisprt/crisp/internal/watchdog"
)

// request is a value with a deadline. It embeds the watchdog's Entry, so
// watching it allocates nothing.
type request struct {
	watchdog.Entry
	name    string
	start   time.Time
	expired chan<- string
}

// Expire runs on the watchdog's goroutine; it must be quick and must not
// block, so it only hands the news on.
func (r *request) Expire(now time.Time) {
	r.expired <- fmt.Sprintf("%s expired at +%v", r.name, now.Sub(r.start))
}

func Example() {
	mock := clock.NewMock()
	w := watchdog.New(mock)
	defer w.Stop()

	expired := make(chan string, 3)
	now := mock.Now()
	poll := &request{name: "poll", start: now, expired: expired}
	save := &request{name: "save", start: now, expired: expired}
	call := &request{name: "call", start: now, expired: expired}
	w.Watch(&call.Entry, call, now.Add(20*time.Millisecond), now)
	w.Watch(&poll.Entry, poll, now.Add(10*time.Millisecond), now)
	w.Watch(&save.Entry, save, now.Add(15*time.Millisecond), now)
	fmt.Println("watching", w.Len())

	// save finished in time.
	fmt.Println("cancelled save:", w.Cancel(&save.Entry))

	// A deadline that has already passed is not watched.
	late := &request{name: "late", start: now, expired: expired}
	fmt.Println("watched late:", w.Watch(&late.Entry, late, now, now))

	// Advance the virtual clock to each deadline in turn, and wait for the news.
	mock.Add(10 * time.Millisecond)
	fmt.Println(<-expired)
	mock.Add(10 * time.Millisecond)
	fmt.Println(<-expired)
	fmt.Println("watching", w.Len())
	// Output:
	// watching 3
	// cancelled save: true
	// watched late: false
	// poll expired at +10ms
	// call expired at +20ms
	// watching 0
}

func ExampleAfterBatch() {
	mock := clock.NewMock()
	quiet := make(chan struct{}, 1)
	w := watchdog.New(mock, watchdog.AfterBatch(func() { quiet <- struct{}{} }))
	defer w.Stop()

	expired := make(chan string, 2)
	now := mock.Now()
	due := now.Add(time.Second)
	for _, name := range []string{"first", "second"} {
		r := &request{name: name, start: now, expired: expired}
		w.Watch(&r.Entry, r, due, now)
	}

	mock.Add(time.Second)
	<-quiet // both targets have been told, in the order they were watched
	fmt.Println(<-expired)
	fmt.Println(<-expired)
	fmt.Println("idle:", w.Idle(mock.Now()))
	// Output:
	// first expired at +1s
	// second expired at +1s
	// idle: true
}
