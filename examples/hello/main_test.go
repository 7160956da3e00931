package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The README's program runs as shown: an idle actor starts the call long
// before its one-second deadline.
func Example_main() {
	main()
	// Output: count: 1
}
