package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The README's program runs as shown: an idle actor starts the call long
// before its one-second deadline.
func Example_main() {
	main()
	// Output: count: 1
}

// The README shows this file from "package main" on, so that what a
// reader copies is what this package's example runs.
func TestTheREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	prog := string(src[strings.Index(string(src), "package main"):])
	assert.Contains(t, string(readme), "```go\n"+prog+"```\n", "README.md's first program differs from examples/hello/main.go")
}
