package watchdog

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// fineTimer is a Linux timerfd on CLOCK_MONOTONIC, read through Go's
// network poller. Go's own timers fire up to a millisecond late on an
// idle machine: the runtime sleeps in epoll_wait, whose timeout is in
// whole milliseconds, rounded up below one. A timerfd is a file that
// becomes readable when its timer expires, which wakes the same
// epoll_wait at once: the goroutine reading it runs within the kernel's
// wake-up latency (tens of microseconds). It does not help when every
// processor is busy (the reader then waits for one like any goroutine:
// that is what Nudge is for).
type fineTimer struct {
	f  *os.File
	fd uintptr // f's descriptor, kept apart: f.Fd() would make it blocking
}

const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

type itimerspec struct{ interval, value syscall.Timespec }

// newFineTimer makes a disarmed fineTimer, or reports why it cannot.
func newFineTimer() (*fineTimer, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil, errno
	}
	return &fineTimer{f: os.NewFile(fd, "crisp-watchdog-timerfd"), fd: fd}, nil
}

// set arms the timer to expire d from now (at once if d is not positive),
// replacing any earlier setting.
func (t *fineTimer) set(d time.Duration) {
	if d <= 0 {
		d = 1 // a zero setting would disarm it
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	t.settime(&spec) // clock seam: d was measured on the watchdog's (real) clock; the kernel counts it down on the same monotonic clock
}

// stop disarms the timer.
func (t *fineTimer) stop() { t.settime(&itimerspec{}) }

func (t *fineTimer) settime(spec *itimerspec) {
	// A raw system call: timerfd_settime never blocks, so it needs none
	// of the runtime's bookkeeping for calls that might (which would let
	// another thread take the processor meanwhile). It fails only for a
	// closed descriptor, or with EINVAL for a setting out of range, which
	// set never makes.
	syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, t.fd, 0, uintptr(unsafe.Pointer(spec)), 0, 0, 0)
}

// wait blocks until the timer expires, and reports false once the timer
// is closed.
func (t *fineTimer) wait(buf []byte) bool {
	_, err := t.f.Read(buf)
	return err == nil
}

// close ends the timer; a wait in progress returns false.
func (t *fineTimer) close() { t.f.Close() }
