package remote

// SetQueuedHook sets the hook called after each request is queued on
// its actor (nil to clear). Tests call it before serving.
func SetQueuedHook(f func()) { testHookQueued = f }

// Flush waits until the NATS server has processed what n published.
func Flush(n *Node) error { return n.nc.Flush() }

// CloseConn closes n's NATS connection behind its back, as a server
// that gives up on the client would.
func CloseConn(n *Node) { n.nc.Close() }
