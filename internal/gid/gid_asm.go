//go:build amd64 || arm64

package gid

// getg returns the calling goroutine's runtime descriptor (the g the
// runtime keeps in thread-local storage on amd64, in a register on arm64).
func getg() uintptr

func current() ID { return ID(getg()) }
