package gid_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/crisprt/crisp/internal/gid"
)

// TestStackReadsTheGoroutinesOwnStack checks Stack against frames of
// known size: a fresh goroutine uses little of a stack of at least 2
// KiB; each 1 KiB frame below adds a little over 1 KiB to what is in
// use; and a goroutine that went 16 KiB deep has a stack larger than
// that, still in use by it after the recursion returns.
func TestStackReadsTheGoroutinesOwnStack(t *testing.T) {
	if _, _, known := gid.Stack(); !known {
		used, size, _ := gid.Stack()
		assert.Zero(t, used)
		assert.Zero(t, size)
		t.Skipf("no reading of the stack on %s", runtime.GOARCH)
	}
	type reading struct{ used, size uintptr }
	done := make(chan [4]reading)
	go func() {
		var r [4]reading
		r[0].used, r[0].size, _ = gid.Stack()
		r[1] = readBelow(1, func() (u, s uintptr) { u, s, _ = gid.Stack(); return u, s })
		// The recursion, which grows the stack, reads it at its bottom
		// (r[3]); r[2] is read back at the top after it.
		r[3] = readBelow(16, func() (u, s uintptr) { u, s, _ = gid.Stack(); return u, s })
		r[2].used, r[2].size, _ = gid.Stack()
		done <- r
	}()
	r := <-done
	bottom := r[3]
	require.Greater(t, bottom.used, uintptr(16<<10), "16 frames of 1 KiB")
	require.Less(t, bottom.used, uintptr(20<<10))
	require.GreaterOrEqual(t, bottom.size, bottom.used)
	assert.Less(t, r[0].used, uintptr(1<<10), "a fresh goroutine's top frames")
	assert.GreaterOrEqual(t, r[0].size, uintptr(2<<10))
	assert.Greater(t, r[0].size, r[0].used)
	d := r[1].used - r[0].used
	assert.Greater(t, d, uintptr(1<<10), "one frame of 1 KiB")
	assert.Less(t, d, uintptr(1<<10+256))
	assert.Greater(t, r[2].size, uintptr(16<<10), "the stack grew past the frames in use at the bottom")
	assert.Equal(t, r[0].used, r[2].used, "the same frame reads the same use after its stack moved")
}

// readBelow calls read from n frames of 1 KiB below its caller's.
//
//go:noinline
func readBelow(n int, read func() (used, size uintptr)) (r struct{ used, size uintptr }) {
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n == 1 {
		r.used, r.size = read()
	} else {
		r = readBelow(n-1, read)
	}
	if pad[n%len(pad)] != byte(n) {
		panic("stack corrupted")
	}
	return r
}
