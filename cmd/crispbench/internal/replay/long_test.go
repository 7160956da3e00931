package replay_test

import "os"

// longTests is set by CRISP_LONG=1 in the environment: it turns on the
// tests that take tens of seconds (a million jobs), which a plain
// `go test ./...` leaves out to stay quick. .ci/run sets it.
var longTests = os.Getenv("CRISP_LONG") == "1"
