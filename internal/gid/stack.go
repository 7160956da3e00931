package gid

import "runtime"

// fromStack parses the calling goroutine's number from the first line of
// its stack trace ("goroutine 123 [running]:"): slow, but portable. It is
// Current where no assembly reads the runtime's descriptor, and it is
// built everywhere so that its tests run on every architecture.
func fromStack() ID {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	var id uintptr
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return ID(id)
}
