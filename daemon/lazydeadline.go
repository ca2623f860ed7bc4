package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A request's deadline, armed only when something waits on it.
//
// context.WithTimeout starts a runtime timer and registers the new context
// with its parent (on HTTP/2, the stream's cancelable context: a map
// allocated per request), and stops and unregisters both when the request
// ends: about a microsecond of each GET over client-go's HTTP/2
// connection, most of which never looks at its context (a GET served from
// the object cache). lazyDeadline is a context with the same deadline
// that makes the real one (context.WithDeadline) only when Done is first
// called, or when Err finds it ended (the deadline passed, the parent
// ended, stop called); until then Value gives the parent's values (so
// context.Cause, which finds the cancelable context by Value, sees the
// parent's until the real one is made). Whoever waits on it
// (a SQLite read, a watch of the revision) or derives a cancelable context
// from it gets the real one, and so the same cancellation as before.

// lazyDeadline is a context.Context that ends at deadline or with its
// parent; see above. Make it with newLazyDeadline, and end it with stop.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	mu      sync.Mutex // guards making real, and cancel
	real    atomic.Pointer[context.Context]
	cancel  context.CancelFunc
	stopped atomic.Bool // stop was called: a real context made later is canceled
}

// newLazyDeadline returns a context that ends when parent does or at
// deadline. When parent ends earlier than deadline it is
// context.WithDeadline's.
func newLazyDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		return context.WithDeadline(parent, deadline)
	}
	c := &lazyDeadline{parent: parent, deadline: deadline}
	return c, c.stop
}

// arm returns the real context, making it the first time (canceled at
// once when stop came first).
func (c *lazyDeadline) arm() context.Context {
	if p := c.real.Load(); p != nil {
		return *p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.real.Load(); p != nil {
		return *p
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	c.cancel = cancel
	if c.stopped.Load() {
		cancel()
	}
	c.real.Store(&ctx)
	return ctx
}

// stop cancels the context, as context.WithDeadline's cancel does; when
// nothing made the real context there is no timer to stop.
func (c *lazyDeadline) stop() {
	c.mu.Lock()
	c.stopped.Store(true)
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Deadline implements context.Context.
func (c *lazyDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *lazyDeadline) Done() <-chan struct{} { return c.arm().Done() }

// Err implements context.Context.
func (c *lazyDeadline) Err() error {
	if p := c.real.Load(); p != nil {
		return (*p).Err()
	}
	if c.stopped.Load() || !time.Now().Before(c.deadline) || c.parent.Err() != nil {
		// The real context, made now, is canceled already: Done is
		// closed, as a non-nil Err requires.
		return c.arm().Err()
	}
	return nil
}

// Value implements context.Context; once the real context is made it
// answers, so that context's own lookups (of the cancelable context a
// child registers with) find it.
func (c *lazyDeadline) Value(key any) any {
	if p := c.real.Load(); p != nil {
		return (*p).Value(key)
	}
	return c.parent.Value(key)
}
