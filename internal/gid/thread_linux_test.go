package gid_test

import "syscall"

// threadID returns the calling OS thread's ID, or -1 where it is not known.
func threadID() int { return syscall.Gettid() }
