//go:build !go1.25 || go1.27 || race

package park

import "sync"

// Spot is a place to park one goroutine. The zero Spot needs Expect
// before use. On this Go release, or under the race detector, it is a WaitGroup
// (see linkname.go).
type Spot struct {
	wg sync.WaitGroup
}

func (s *Spot) expect() { s.wg.Add(1) }
func (s *Spot) signal() { s.wg.Done() }
func (s *Spot) wait()   { s.wg.Wait() }

// usesRuntimePark says this build parks with gopark.
const usesRuntimePark = false
