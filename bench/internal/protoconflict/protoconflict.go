// Package protoconflict lets hollywood and protoactor-go live in one
// binary. Both register a protobuf file named "actor.proto" declaring
// "actor.PID", and the protobuf runtime panics at start-up on such a
// clash unless GOLANG_PROTOBUF_REGISTRATION_CONFLICT says otherwise
// (https://protobuf.dev/reference/go/faq#namespace-conflict). The clash
// is harmless here: each library uses its own generated Go types, and
// nothing in the suite looks a message up by name in the global registry.
//
// Import it (for its side effect) from every package that links both
// libraries. Its init sets the variable before either library's init
// registers its file: the Go specification initializes, at each step, the
// first package by import path whose imports are initialized, and this
// package, which imports only os, sorts before google.golang.org/protobuf,
// on which both libraries depend. A variable already set by the user is
// left alone.
package protoconflict

import "os"

const env = "GOLANG_PROTOBUF_REGISTRATION_CONFLICT"

func init() {
	if os.Getenv(env) == "" {
		os.Setenv(env, "ignore")
	}
}
