//go:build unix

package timeliness

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time, user and system, the process has used
// so far, and true; false where it cannot be read.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
