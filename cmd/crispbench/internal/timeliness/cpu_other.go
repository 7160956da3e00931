//go:build !unix

package timeliness

import "time"

// processCPU reports false: getrusage is a Unix call.
func processCPU() (time.Duration, bool) { return 0, false }
