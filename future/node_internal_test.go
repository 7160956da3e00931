package future

import (
	"testing"
	"unsafe"
)

// A waiter node is 32 bytes, a Go size class, whether it holds a
// channel or a callback: crisp registers a suspended process or a pending
// continuation itself, with no closure, and the node is all a pending
// Then or a suspended Await adds to the future.
func TestAWaiterNodeIs32Bytes(t *testing.T) {
	if s := unsafe.Sizeof(node{}); s > 32 {
		t.Fatalf("a future's waiter node is %d bytes, past the 32-byte size class", s)
	}
}
