//go:build !amd64 && !arm64

package gid

import "runtime"

// current parses the goroutine number from the first line of the
// caller's stack trace ("goroutine 123 [running]:"): slow, but portable.
func current() ID {
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
