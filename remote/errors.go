package remote

import (
	"errors"
	"fmt"
)

// Errors a remote call's future may hold, besides those of crisp
// itself (a [*deadline.MissedError], crisp.ErrStopped, a
// [*crisp.PanicError], a [*crisp.PolicyError]) and the context's. Each
// arrives wrapped in an [*Error] that says where it happened; errors.Is
// and errors.As see through it.
var (
	// ErrRefused: the receiver turned the request away without queueing
	// it (the service's MaxInFlight was reached). Never a miss.
	ErrRefused = errors.New("remote: request refused")
	// ErrUnknownEndpoint: the request reached a node that does not
	// serve the endpoint as called (the service was closing, or it has
	// another partition count).
	ErrUnknownEndpoint = errors.New("remote: unknown endpoint")
	// ErrNoResponders: no node serves the endpoint (NATS had no
	// subscriber for its subject).
	ErrNoResponders = errors.New("remote: no responders")
	// ErrBadRequest: the receiver could not read the request's frame
	// (another wire version, a malformed or oversized field or payload),
	// or the call's frame is over the NATS server's maximum payload.
	ErrBadRequest = errors.New("remote: bad request")
	// ErrNoAnswer: no answer came by the call's bound (the deadline plus
	// the node's allowance, or MaxWait for a call without deadline).
	// Whether the request ran is unknown: it is not a miss.
	ErrNoAnswer = errors.New("remote: no answer by the bound")
	// ErrClosed: the calling node was closed before the answer came, or
	// before the call.
	ErrClosed = errors.New("remote: node closed")
	// ErrCodec is matched by every [*CodecError].
	ErrCodec = errors.New("remote: codec error")
)

// Where a remote call failed: the values of [Error.Where].
const (
	// AtCaller: on the calling node, before the request left or when
	// its answer was read.
	AtCaller = "caller"
	// AtNetwork: between the nodes (no responders, no answer in time).
	AtNetwork = "network"
	// AtArrival: on the receiving node, as the request arrived (a
	// deadline already past, a bad request, a refusal).
	AtArrival = "receiver on arrival"
	// AtReceiver: on the receiving node, after the request was queued
	// on its actor (a miss found in the queue, the handler's own error,
	// a panic, a stopped actor).
	AtReceiver = "receiver"
)

// Error is the error of a remote call that failed: it names the
// endpoint and where the failure happened, and unwraps to the cause.
type Error struct {
	// Endpoint is the endpoint's name.
	Endpoint string
	// Where is one of AtCaller, AtNetwork, AtArrival, AtReceiver.
	Where string
	// Err is the cause: a sentinel of this package, a crisp error, the
	// handler's error (its text only: an error's type does not cross
	// the wire), or the context's error.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("remote %s (%s): %v", e.Endpoint, e.Where, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the cause is a timeout (a miss, no answer by
// the bound).
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.Is(e.Err, ErrNoAnswer) || (errors.As(e.Err, &t) && t.Timeout())
}

// CodecError is a failure to encode or decode a request or response.
// It matches [ErrCodec].
type CodecError struct {
	// Op is "encode request", "decode request", "encode response" or
	// "decode response".
	Op string
	// Codec is the codec's name.
	Codec string
	// Text describes the failure.
	Text string
}

func (e *CodecError) Error() string {
	return fmt.Sprintf("remote: %s (%s): %s", e.Op, e.Codec, e.Text)
}

// Is reports whether target is ErrCodec.
func (e *CodecError) Is(target error) bool { return target == ErrCodec }
