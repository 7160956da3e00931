package remote_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/crisprt/crisp/crisp"
	"github.com/crisprt/crisp/remote"
)

func TestMisusePanicsWithACrispPrefix(t *testing.T) {
	cases := map[string]func(){
		"an empty endpoint name":     func() { remote.NewEndpoint[int, int]("") },
		"a name with a space":        func() { remote.NewEndpoint[int, int]("a b") },
		"a name with a wildcard":     func() { remote.NewEndpoint[int, int]("a.*") },
		"a name with an empty token": func() { remote.NewEndpoint[int, int]("a..b") },
		"a name over 200 bytes":      func() { remote.NewEndpoint[int, int](strings.Repeat("a", 201)) },
		"no partitions":              func() { remote.Partitions(0) },
		"too many partitions":        func() { remote.Partitions(1 << 17) },
		"a nil codec":                func() { remote.WithCodec(nil) },
		"a negative cost":            func() { remote.Cost(-time.Second) },
		//lint:ignore SA1012 the misuse under test
		"a nil context":               func() { remote.Context(nil) },
		"a negative allowance":        func() { remote.Allowance(-time.Second) },
		"a zero MaxWait":              func() { remote.MaxWait(0) },
		"a negative MaxInFlight":      func() { remote.MaxInFlight(-1) },
		"a zero MaxRequest":           func() { remote.MaxRequest(0) },
		"a call on a nil node":        func() { remote.Call(nil, add, Add{}) },
		"a call on the zero endpoint": func() { remote.Call(&remote.Node{}, remote.Endpoint[Add, int]{}, Add{}) },
		"a serve with a nil actor": func() {
			remote.Serve[*Counter](&remote.Node{}, add, nil, func(*crisp.Proc, *Counter, Add) (int, error) { return 0, nil })
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				s, _ := r.(string)
				assert.True(t, strings.HasPrefix(s, "crisp: "), "panic %v", r)
			}()
			f()
			t.Error("no panic")
		})
	}
	t.Run("a partition out of range", func(t *testing.T) {
		sys := newSystem(t, newMock())
		n := newNode(t)
		ep := remote.NewEndpoint[int, int]("test.parts", remote.Partitions(2))
		assert.PanicsWithValue(t, "crisp: remote.OwnPartitions(2) on an endpoint of 2 partitions", func() {
			remote.Serve(n, ep, crisp.Spawn(sys, &Counter{}), func(*crisp.Proc, *Counter, int) (int, error) { return 0, nil },
				remote.OwnPartitions(1, 2))
		})
	})
}
