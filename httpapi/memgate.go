package httpapi

import (
	"context"
	"sync"
	"time"
)

// memGate shares a number of bytes of memory among the requests that
// hold large amounts of it while they run: LISTs, which build their
// response (or a page of it) in memory and keep it until the client has
// read it. Without it, each LIST could take its whole list buffer, and
// 400 slow clients listing 4 MB each took a daemon with a 128 MiB budget
// to 1.1 GiB of RSS.
//
// A request asks for between least and want bytes and gets as much as is
// free, at least least; it waits, first come first served, when less than
// that is free. Grants are released when the request ends, and may be
// shrunk to what the request turned out to use.
type memGate struct {
	mu      sync.Mutex
	free    int64
	size    int64
	waiters []*memWaiter // in arrival order
}

// memWaiter is a request waiting for its grant; ready is closed once
// grant is set.
type memWaiter struct {
	least, want int64
	grant       int64
	ready       chan struct{}
}

// newMemGate returns a gate of size bytes.
func newMemGate(size int64) *memGate { return &memGate{free: size, size: size} }

// acquire waits for a grant of at least least and at most want bytes (both
// capped at the gate's size, so that one request larger than the gate
// runs alone) and returns its size. It gives up when ctx ends or after
// wait, returning 0 and ctx's error or errMemGateWait.
func (g *memGate) acquire(ctx context.Context, least, want int64, wait time.Duration) (int64, error) {
	want = min(max(want, 0), g.size)
	least = min(max(least, 0), want)
	g.mu.Lock()
	if len(g.waiters) == 0 && g.free >= least {
		n := min(want, g.free)
		g.free -= n
		g.mu.Unlock()
		return n, nil
	}
	w := &memWaiter{least: least, want: want, ready: make(chan struct{})}
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return w.grant, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errMemGateWait
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready:
		// Granted as it gave up: give it back.
		g.free += w.grant
		g.grantLocked()
		return 0, err
	default:
	}
	for i, o := range g.waiters {
		if o == w {
			g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
			break
		}
	}
	// The head may have left: the next may fit now.
	g.grantLocked()
	return 0, err
}

// release gives n granted bytes back.
func (g *memGate) release(n int64) {
	if n <= 0 {
		return
	}
	g.mu.Lock()
	g.free += n
	g.grantLocked()
	g.mu.Unlock()
}

// grantLocked grants waiters in order while the first one fits: at least
// each while others wait behind it, the rest to the last.
func (g *memGate) grantLocked() {
	for len(g.waiters) > 0 && g.free >= g.waiters[0].least {
		w := g.waiters[0]
		g.waiters = g.waiters[1:]
		w.grant = min(w.want, g.free)
		if len(g.waiters) > 0 {
			// Others wait behind it: as many as can, at least each.
			w.grant = w.least
		}
		g.free -= w.grant
		close(w.ready)
	}
}

// errMemGateWait is acquire's error when the wait ran out.
var errMemGateWait = errorString("waited too long for memory")

type errorString string

func (e errorString) Error() string { return string(e) }

// shrink gives back what a grant of *n bytes holds beyond keep, and sets
// *n to what it still holds.
func (g *memGate) shrink(n *int64, keep int64) {
	if keep < *n {
		g.release(*n - keep)
		*n = keep
	}
}
