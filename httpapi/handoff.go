package httpapi

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// A watch that owns its connection (see hijackWatch) takes it from
// net/http, which can then no longer serve the connection's next request.
// Clients that keep connections alive (Python's http.client and urllib3,
// client-go) send that request anyway, as they may after a complete
// response without "Connection: close". So a watch that ends cleanly
// hands its connection back: the handoff listener's Accept returns it to
// the http.Server that serves this Server's handler, which reads the next
// request from it as from a new connection.

// handoffListener is a net.Listener whose Accept returns connections of
// finished watches once their next request begins. It never blocks a
// stream: a returned connection waits for its next request on a goroutine
// of its own, as net/http's idle keep-alive connections do, and for at
// most idle.
type handoffListener struct {
	idle  time.Duration
	conns chan net.Conn
	// done is closed by Close.
	done      chan struct{}
	closeOnce sync.Once
	// mu guards closed and waiting, the connections waiting for their
	// next request (closed by Close).
	mu      sync.Mutex
	closed  bool
	waiting map[*handoffConn]struct{}
	// served: Accept was called once, so someone serves the listener;
	// until then finished watches close their connections.
	served chan struct{}
	serve  sync.Once
}

func newHandoffListener(idle time.Duration) *handoffListener {
	return &handoffListener{
		idle:    idle,
		conns:   make(chan net.Conn),
		done:    make(chan struct{}),
		waiting: make(map[*handoffConn]struct{}),
		served:  make(chan struct{}),
	}
}

// open reports whether connections handed back now will be served.
func (l *handoffListener) open() bool {
	select {
	case <-l.served:
	default:
		return false
	}
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}

// Accept returns the next handed-back connection whose next request has
// begun; after Close it returns net.ErrClosed.
func (l *handoffListener) Accept() (net.Conn, error) {
	l.serve.Do(func() { close(l.served) })
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and closes the connections still waiting for their
// next request. It is safe to call more than once.
func (l *handoffListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.mu.Lock()
		l.closed = true
		waiting := l.waiting
		l.waiting = nil
		l.mu.Unlock()
		for c := range waiting {
			_ = c.Conn.Close()
		}
	})
	return nil
}

func (l *handoffListener) Addr() net.Addr { return handoffAddr{} }

type handoffAddr struct{}

func (handoffAddr) Network() string { return "handoff" }
func (handoffAddr) String() string  { return "finished watches" }

// park takes a connection whose watch response ended cleanly (its
// request fully read, its last chunk written). pre are the bytes of the
// next request that net/http had already read from it. The connection is
// accepted once its next request begins, or closed after idle (or by
// Close).
func (l *handoffListener) park(c net.Conn, pre []byte) {
	// net/http sets its own deadlines per request; the watch's write
	// deadline must not outlive it.
	_ = c.SetDeadline(time.Time{})
	hc, ok := c.(*handoffConn)
	if ok {
		// Handed back before: bytes net/http had buffered came from the
		// connection before what is left of its own pre.
		hc.pre = append(pre, hc.pre...)
	} else {
		hc = &handoffConn{Conn: c, pre: pre}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = c.Close()
		return
	}
	l.waiting[hc] = struct{}{}
	l.mu.Unlock()
	go l.wait(hc)
}

// wait waits up to idle for the first byte of hc's next request (unless
// net/http had already read some), then hands hc to Accept. Waiting here
// instead of in net/http keeps its ReadHeaderTimeout from starting before
// the client sends anything, as for its own idle connections.
func (l *handoffListener) wait(hc *handoffConn) {
	ok := true
	if len(hc.pre) == 0 {
		_ = hc.Conn.SetReadDeadline(time.Now().Add(l.idle))
		b := make([]byte, 1)
		n, err := hc.Conn.Read(b)
		_ = hc.Conn.SetReadDeadline(time.Time{})
		ok = n == 1 && err == nil
		hc.pre = b[:n]
	}
	l.mu.Lock()
	delete(l.waiting, hc)
	ok = ok && !l.closed
	l.mu.Unlock()
	if !ok {
		_ = hc.Conn.Close()
		return
	}
	select {
	case l.conns <- hc:
	case <-l.done:
		_ = hc.Conn.Close()
	}
}

// handoffConn is a handed-back connection: reads return pre, the bytes
// already read from it, before reading on.
type handoffConn struct {
	net.Conn
	pre []byte
}

func (c *handoffConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		if len(c.pre) == 0 {
			c.pre = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// SyscallConn lets a later watch on the connection peek at it (see
// connOut.peerClosed).
func (c *handoffConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// CloseWrite lets net/http half-close the connection before closing it,
// as it does for TCP connections.
func (c *handoffConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
