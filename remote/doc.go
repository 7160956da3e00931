// Package remote carries crisp calls across processes over NATS.
//
// crisp handlers are closures and cannot cross a wire; an [Endpoint] can.
// A node ([Start]) serves an actor's typed handler under a name
// ([Serve]); any node of the same NATS network calls it ([Call]) and
// gets a [future.Future] of the response, with the send options of a
// local call ([Within], [By], [Priority], [Tag], [Key], [Cost],
// [Context]). Requests and responses are encoded by the endpoint's
// [Codec] (JSON by default).
//
//	n, err := remote.Start()      // an embedded NATS server; remote.URL(u) for a deployment
//	defer n.Close(ctx)
//	add := remote.NewEndpoint[Add, int]("bank.add")
//	remote.Serve(n, add, acct, func(p *crisp.Proc, a *Account, req Add) (int, error) { ... })
//	f := remote.Call(n, add, Add{By: 5}, remote.Within(50*time.Millisecond))
//
// # Deadlines on the wire
//
// A call's deadline travels absolute, with the caller's clock reading
// (docs/wire.md). The receiver answers with a miss, at once and without
// queueing, a request whose deadline has passed on its clock when it
// arrives; otherwise it sends the request to the actor with crisp.By,
// so the actor's policy orders it among local work and its watchdog
// reports a miss at the deadline. The caller fails the future with
// [ErrNoAnswer] if no answer has come by the deadline plus the node's
// [Allowance] (or after [MaxWait] for a call without deadline): every
// remote future resolves by its bound, whatever the network or the
// other node does. The clocks of the nodes are assumed synchronised to
// well within the allowance (NTP); [Node.Skew] estimates their offset.
//
// # Errors
//
// A failed call's error is an [*Error] saying where it failed
// ([AtCaller], [AtNetwork], [AtArrival], [AtReceiver]); errors.Is and
// errors.As see through it to the cause, as for a local call: a
// [*deadline.MissedError] (a miss, with the receiver's actor name and
// the instant it was detected), crisp.ErrStopped, a [*crisp.PanicError]
// or [*crisp.PolicyError] (their Value is the text of the remote value),
// the handler's error (as text), [ErrRefused], [ErrUnknownEndpoint],
// [ErrNoResponders], [ErrBadRequest], a [*CodecError], [ErrNoAnswer],
// [ErrClosed], or the context's error.
//
// # Groups
//
// Several nodes may serve one endpoint: NATS gives each request to one
// of them (a queue group). An endpoint with [Partitions] sends a keyed
// call to the subject of its key's partition; each member serves the
// partitions it owns ([OwnPartitions]), so while a partition has one
// member, calls with one key run in the order they were sent. docs/wire.md
// gives the rule for members joining and leaving.
//
// # Goroutines and costs
//
// A node owns the NATS connection's goroutines, the embedded server's,
// one goroutine per service, which answers the calls that fail without
// their handler returning, and, while it has frames to publish, a
// flusher goroutine for calls and one for replies; [Node.Close] ends
// them. A handler's answer is encoded on the actor as the handler
// returns, and published by the node's flusher of replies. A call costs
// an encoding of each value, a frame of 51 bytes plus its codec name,
// tag, key and payload, an entry in the node's map of calls in flight
// and in its heap of bounds (O(log n); one timer serves the node). Calls
// to one subject made before the flusher runs share a NATS message, and
// so do replies to one caller, so under load many calls share one
// message each way (docs/wire.md). All functions and methods are safe
// for concurrent use.
package remote
