package crisp

import (
	"errors"
	"fmt"
)

// ErrStopped resolves the futures of messages that never started because
// their actor was stopped or their system shut down, and of processes
// ended while suspended.
var ErrStopped = errors.New("crisp: actor stopped")

// errGoexit resolves the future of a handler that called runtime.Goexit
// (t.FailNow in a test, for instance) instead of returning.
var errGoexit = errors.New("crisp: handler called runtime.Goexit")

// PanicError is the error of a message whose handler panicked. The actor
// recovers, records the panic in the message's future, and goes on with
// its next message: one bad message must not take down an actor that
// others depend on. Errors unwrap to Value when Value is an error.
type PanicError struct {
	// Value is what the handler passed to panic.
	Value any
	// Stack is the handler goroutine's stack at the panic.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("crisp: handler panicked: %v", e.Value) }

// Unwrap returns Value if it is an error, else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// PolicyError is the error of a message that never ran because the
// actor's policy panicked while ordering it (a comparison that cannot
// handle the message's tag, say). The actor drops that message and keeps
// serving the others. Errors unwrap to Value when Value is an error.
type PolicyError struct {
	// Value is what the policy passed to panic.
	Value any
	// Stack is the stack at the panic.
	Stack []byte
}

func (e *PolicyError) Error() string { return fmt.Sprintf("crisp: policy panicked: %v", e.Value) }

// Unwrap returns Value if it is an error, else nil.
func (e *PolicyError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
