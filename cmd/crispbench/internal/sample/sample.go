// Package sample holds crispbench's default job log: what `crispbench
// gen` writes with its default flags (seed 1), about 25,000 jobs from
// 180 customers over February and March 2013, as CSV. It is embedded in
// the binary, so that commands that read a log need no file.
//
// After changing the generator, regenerate it with `go generate` in this
// directory; a test fails until the two agree.
package sample

import (
	_ "embed"
	"io"
	"strings"
)

//go:generate go run ../.. gen -o seed1.csv

// Name is the embedded log's file name, for messages.
const Name = "seed1.csv"

//go:embed seed1.csv
var log string

// Open returns a reader of the embedded log.
func Open() io.Reader { return strings.NewReader(log) }

// Size is the embedded log's length in bytes.
func Size() int { return len(log) }
