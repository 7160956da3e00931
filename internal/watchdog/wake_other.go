//go:build !linux

package watchdog

import (
	"errors"
	"time"
)

// fineTimer exists on Linux only (see wake_linux.go); elsewhere the
// watchdog uses its clock's timer.
type fineTimer struct{}

func newFineTimer() (*fineTimer, error) {
	return nil, errors.New("watchdog: no fine timer on this platform")
}

func (*fineTimer) set(time.Duration) {}
func (*fineTimer) stop()             {}
func (*fineTimer) wait([]byte) bool  { return false }
func (*fineTimer) close()            {}
