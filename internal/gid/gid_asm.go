//go:build amd64 || arm64

package gid

// getg returns the calling goroutine's runtime descriptor (the g the
// runtime keeps in thread-local storage on amd64, in a register on arm64).
func getg() uintptr

func current() ID { return ID(getg()) }

// stack returns the bytes of the calling goroutine's stack in use (from
// its top down to the caller's frame) and the stack's size.
func stack() (used, size uintptr)

// Stack returns how many bytes of the calling goroutine's stack are in
// use, from its top down to the caller's frame, and how large the stack
// is now (it starts at 2 KiB, or more, and doubles each time a call
// finds too little room below the frames in use). It reads the
// runtime's descriptor of the goroutine, as Current does, with the
// same caveats (package comment); known is false where it cannot (other
// architectures), and used and size are then zero.
func Stack() (used, size uintptr, known bool) {
	used, size = stack()
	return used, size, true
}
