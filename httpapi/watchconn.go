package httpapi

import (
	"errors"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
)

// workerWriteTimeout is how long a stream worker waits for a client to
// take a write before it moves that stream to a goroutine of its own.
const workerWriteTimeout = 20 * time.Millisecond

// errSlowClient: a write on a stream worker timed out; what is left of it
// is written on the next flush.
var errSlowClient = errors.New("watch client is slow to read")

// streamQueue bounds the streams waiting for a stream worker; when it is
// full, a stream runs on a goroutine of its own.
const streamQueue = 1 << 14

// runStream runs a kicked stream: on a stream worker when it owns its
// connection, else on a goroutine of its own. A stream that owns its
// connection and was written less than watchCoalesce ago waits for the end
// of the interval; one that writes through net/http batches by itself:
// while its write waits for the connection (HTTP/2's serve loop, a TLS
// write), its events queue, and its next drain writes them all at once.
//
// A few long-lived workers serve the kicked streams instead of a goroutine
// per kick: a commit kicks every watcher at once, and a thousand runnable
// goroutines would queue the requests that write (and everything else)
// behind them; the workers also keep their grown stacks.
func (s *Server) runStream(ws *watchStream) {
	if ws.pooled && time.Now().UnixNano()-ws.lastWrite.Load() < int64(watchCoalesce) {
		s.coalesce(ws)
		return
	}
	s.queueStream(ws)
}

// queueStream hands a kicked stream to a stream worker.
func (s *Server) queueStream(ws *watchStream) {
	if ws.pooled {
		s.startWorkers.Do(func() {
			s.runq = make(chan *watchStream, streamQueue)
			s.stopWorkers = make(chan struct{})
			for range max(2, runtime.GOMAXPROCS(0)) {
				go s.streamWorker()
			}
		})
		select {
		case s.runq <- ws:
			return
		default:
		}
	}
	go ws.serve(false)
}

// watchCoalesce is the shortest time between two writes of events to one
// watch stream. Each write is a system call whose fixed cost is several
// times that of copying an event, both here and in the client: under a
// steady stream of events, writing what came in the last few milliseconds
// at once takes far less CPU than a write per commit, for a few
// milliseconds of latency. A stream idle for longer is written at once.
const watchCoalesce = 5 * time.Millisecond

// coalesce queues ws for a stream worker at the end of the current
// coalescing interval.
func (s *Server) coalesce(ws *watchStream) {
	s.coalesceMu.Lock()
	defer s.coalesceMu.Unlock()
	s.coalesced = append(s.coalesced, ws)
	if !s.coalesceArmed {
		s.coalesceArmed = true
		if s.coalesceTimer == nil {
			s.coalesceTimer = time.AfterFunc(watchCoalesce, s.releaseCoalesced)
		} else {
			s.coalesceTimer.Reset(watchCoalesce)
		}
	}
}

// releaseCoalesced queues the streams that waited for the interval's end.
func (s *Server) releaseCoalesced() {
	s.coalesceMu.Lock()
	batch := s.coalesced
	s.coalesced = make([]*watchStream, 0, len(batch))
	s.coalesceArmed = false
	s.coalesceMu.Unlock()
	for _, ws := range batch {
		s.queueStream(ws)
	}
}

// streamWorker serves queued streams until the server has closed and
// every stream has ended.
func (s *Server) streamWorker() {
	for {
		select {
		case ws := <-s.runq:
			ws.serve(true)
			// Let the goroutines serving requests (the writes the events
			// come from) run between streams: a worker rarely blocks, and
			// would otherwise keep its thread for a whole time slice.
			runtime.Gosched()
		case <-s.stopWorkers:
			return
		}
	}
}

// watchPeerCheck is how often streams on hijacked connections are checked
// for clients that closed the connection.
const watchPeerCheck = 2 * time.Second

// hijackWatch takes an HTTP/1.1 connection over from net/http for a watch
// stream and writes the response header. ok is false when the connection
// cannot be taken over: HTTP/1.0 (no chunked framing), HTTP/2, TLS, test
// recorders, and platforms where a closed connection cannot be noticed
// without a reader. Then nothing was written.
//
// Not over TLS: a peek at the TCP socket under a *tls.Conn cannot tell a
// client's close_notify alert (TLS 1.3 encrypts it as application data)
// from the bytes of its next request, so a client that closed cleanly
// would never be noticed; and a write that times out leaves a *tls.Conn
// unusable, so the stream workers' short write deadlines cannot be used
// either. TLS watches write through net/http, whose reader of the
// connection (HTTP/1.1) or stream reset (HTTP/2) ends the request's
// context when the client leaves.
func (s *Server) hijackWatch(c echo.Context) (out *connOut, ok bool) {
	req, resp := c.Request(), c.Response()
	if !canPeek || !req.ProtoAtLeast(1, 1) || req.ProtoMajor != 1 || req.TLS != nil {
		return nil, false
	}
	rc := http.NewResponseController(resp.Writer)
	conn, brw, err := rc.Hijack()
	if err != nil {
		return nil, false
	}
	resp.Committed, resp.Status = true, http.StatusOK
	out = &connOut{conn: conn}
	// The connection can serve another request after the watch when its
	// request is fully read (no body: what net/http buffered beyond the
	// header is the next request) and the client did not ask to close it.
	// Not after a HEAD, whose client reads no body: what this writes
	// would be read as the next response.
	if s.handoff.open() && req.ContentLength == 0 && len(req.TransferEncoding) == 0 && !req.Close &&
		req.Method != http.MethodHead {
		out.handoff = s.handoff
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			out.pre = append([]byte(nil), b...)
		}
	}
	if sc, ok := conn.(syscall.Conn); ok {
		out.raw, _ = sc.SyscallConn()
	}
	hdr := make([]byte, 0, 256)
	hdr = append(hdr, "HTTP/1.1 200 OK\r\n"...)
	for k, vs := range resp.Header() {
		for _, v := range vs {
			hdr = append(append(append(append(hdr, k...), ": "...), v...), "\r\n"...)
		}
	}
	if out.handoff == nil {
		hdr = append(hdr, "Connection: close\r\n"...)
	}
	hdr = append(hdr, "Date: "...)
	hdr = time.Now().UTC().AppendFormat(hdr, http.TimeFormat)
	hdr = append(hdr, "\r\nTransfer-Encoding: chunked\r\n\r\n"...)
	if err := out.writeNow(hdr); err != nil {
		out.failed = true
	}
	return out, true
}

// addStream registers a running stream, so that Close ends it and, when
// it owns its connection, the peer check watches its client.
func (s *Server) addStream(ws *watchStream, hijacked bool) {
	s.streams.Add(1)
	if s.baseCtx.Err() != nil {
		// Closing: the stream ends at its first step.
		ws.gone.Store(true)
	}
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streamSet == nil {
		s.streamSet = make(map[*watchStream]bool)
	}
	s.streamSet[ws] = hijacked
	if !s.peerCheckRunning {
		s.peerCheckRunning = true
		go s.runPeerCheck()
	}
}

// removeStream forgets an ended stream.
func (s *Server) removeStream(ws *watchStream) {
	s.streamsMu.Lock()
	delete(s.streamSet, ws)
	s.streamsMu.Unlock()
	s.streams.Done()
}

// endStreams ends every stream (server shutdown).
func (s *Server) endStreams() {
	s.streamsMu.Lock()
	all := make([]*watchStream, 0, len(s.streamSet))
	for ws := range s.streamSet {
		all = append(all, ws)
	}
	s.streamsMu.Unlock()
	for _, ws := range all {
		ws.cancel()
	}
}

// runPeerCheck ends, every watchPeerCheck, the streams whose client closed
// its connection, and those whose write through net/http has been blocked
// for longer than watchWriteTimeout (see responseOut). A stream that owns
// its connection has no reader that would notice (that reader would be a
// goroutine per watch): the check is one non-blocking peek per connection.
func (s *Server) runPeerCheck() {
	t := time.NewTicker(watchPeerCheck)
	defer t.Stop()
	var batch []*watchStream
	for {
		select {
		case <-s.baseCtx.Done():
			return
		case <-t.C:
		}
		batch = batch[:0]
		s.streamsMu.Lock()
		for ws := range s.streamSet {
			batch = append(batch, ws)
		}
		s.streamsMu.Unlock()
		now := time.Now()
		for _, ws := range batch {
			switch o := ws.out.(type) {
			case *connOut:
				if o.peerClosed() {
					ws.cancel()
				}
			case *responseOut:
				if o.stuck(now) {
					ws.cancel()
				}
			}
		}
		clear(batch)
	}
}

// connOut writes a watch response on a hijacked connection, with HTTP/1.1
// chunked framing: each flush is one chunk, written with one writev of the
// chunk header and the (shared) event lines.
type connOut struct {
	conn net.Conn
	raw  syscall.RawConn
	// handoff, when not nil, takes the connection back for its next
	// request once the response ended cleanly; pre are the bytes of that
	// request net/http had already read. When nil the response said
	// "Connection: close".
	handoff *handoffListener
	pre     []byte
	// mu guards released: the connection was handed back, so the peer
	// check and abort leave it alone (a peek would wait behind the
	// reader of the next request).
	mu       sync.Mutex
	released bool
	// bufs are the lines written since the last flush, after a slot for
	// the chunk header; borrowed from lineBuffers while not empty.
	bufs     *net.Buffers
	size     int
	deadline writeDeadline
	// failed: a write failed, the response cannot go on.
	failed bool
	// worker: see watchOut.setWorker.
	worker bool
	// pending is what a timed-out write left unwritten, in pendingBufs
	// (borrowed from lineBuffers).
	pending     net.Buffers
	pendingBufs *net.Buffers
}

// lineBuffers holds the line lists of connOuts between flushes, so that
// an idle stream keeps none.
var lineBuffers = sync.Pool{New: func() any {
	b := make(net.Buffers, 0, maxEventsPerFlush+2)
	return &b
}}

var crlf = []byte("\r\n")

func (o *connOut) write(line []byte) error {
	if o.bufs == nil {
		o.bufs = lineBuffers.Get().(*net.Buffers)
		*o.bufs = append((*o.bufs)[:0], nil)
	}
	*o.bufs = append(*o.bufs, line)
	o.size += len(line)
	if len(*o.bufs) > maxEventsPerFlush {
		return o.flush()
	}
	return nil
}

func (o *connOut) flush() error {
	if o.failed {
		return net.ErrClosed
	}
	if o.pendingBufs != nil {
		if err := o.writeBufs(&o.pending); err != nil {
			return err
		}
		o.release(o.pendingBufs)
		o.pending, o.pendingBufs = nil, nil
	}
	if o.size == 0 {
		return nil
	}
	h := make([]byte, 0, 20)
	h = strconv.AppendInt(h, int64(o.size), 16)
	all := append(*o.bufs, crlf)
	all[0] = append(h, crlf...)
	*o.bufs = all
	bp := o.bufs
	o.bufs, o.size = nil, 0
	bufs := all
	if err := o.writeBufs(&bufs); err != nil {
		if errors.Is(err, errSlowClient) {
			o.pending, o.pendingBufs = bufs, bp
		} else {
			o.release(bp)
		}
		return err
	}
	o.release(bp)
	return nil
}

// writeBufs writes bufs, consuming what was written. On a worker it waits
// at most workerWriteTimeout, and a timeout is errSlowClient.
func (o *connOut) writeBufs(bufs *net.Buffers) error {
	if o.worker {
		_ = o.conn.SetWriteDeadline(time.Now().Add(workerWriteTimeout))
		o.deadline = writeDeadline{}
	} else {
		o.deadline.move(o.conn.SetWriteDeadline)
	}
	_, err := bufs.WriteTo(o.conn)
	if err != nil {
		if o.worker && errors.Is(err, os.ErrDeadlineExceeded) {
			return errSlowClient
		}
		o.failed = true
	}
	return err
}

// release returns a line list to lineBuffers.
func (o *connOut) release(bp *net.Buffers) {
	clear((*bp)[:cap(*bp)])
	*bp = (*bp)[:0]
	lineBuffers.Put(bp)
}

func (o *connOut) setWorker(on bool) { o.worker = on }

// writeNow writes b unframed (the response header).
func (o *connOut) writeNow(b []byte) error {
	o.deadline.move(o.conn.SetWriteDeadline)
	_, err := o.conn.Write(b)
	return err
}

// writeDeadline moves a write deadline watchWriteTimeout ahead, at most
// every watchWriteTimeout/30 (setting it costs more than a write when
// events come fast): a stuck client is still cut off within about
// watchWriteTimeout. The zero value moves it at the next write.
type writeDeadline struct{ set time.Time }

func (d *writeDeadline) move(setWriteDeadline func(time.Time) error) {
	if now := time.Now(); now.Sub(d.set) > watchWriteTimeout/30 {
		_ = setWriteDeadline(now.Add(watchWriteTimeout))
		d.set = now
	}
}

// close writes the last chunk, so the client sees a clean end of the
// response, then hands the connection back for its next request (see
// handoffListener) or closes it.
func (o *connOut) close() {
	if o.flush() == nil {
		_ = o.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, err := o.conn.Write([]byte("0\r\n\r\n"))
		if err == nil && o.handoff != nil {
			o.mu.Lock()
			o.released = true
			o.mu.Unlock()
			o.handoff.park(o.conn, o.pre)
			o.pre = nil
			return
		}
	}
	_ = o.conn.Close()
}

func (o *connOut) abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.released {
		_ = o.conn.Close()
	}
}

// peerClosed reports whether the client closed the connection.
func (o *connOut) peerClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.released && (o.raw == nil || peek(o.raw))
}

// responseWriteBatch bounds the bytes a responseOut gathers before it
// hands them to net/http in one Write: a drain under load writes its
// events in writes of at most this size (one larger event alone), so a
// stream holds at most this much besides the shared event encodings.
const responseWriteBatch = 64 << 10

// writeBatches holds the buffers responseOuts gather lines into, so that
// an idle stream keeps none.
var writeBatches = sync.Pool{New: func() any {
	b := make([]byte, 0, responseWriteBatch)
	return &b
}}

// responseOut writes a watch response through net/http (HTTP/2, TLS, test
// recorders).
//
// Each write through net/http's HTTP/2 server is a synchronous hand-off to
// the connection's single serve loop, which every stream of the
// connection shares: for every 4 KiB its response writer buffers, for
// every Flush and for every SetWriteDeadline. So responseOut keeps the
// lines of a drain (references to the shared encodings) and writes them
// at the flush as one Write, which net/http passes on whole when it is
// larger than its buffer, and one Flush: an idle stream still gets each
// event at once, while a stream that fell behind carries every event
// queued for it in one hand-off. Instead of a write deadline that would be
// set and lifted around every flush (two more hand-offs), the peer check
// (runPeerCheck) aborts a write still blocked after watchWriteTimeout.
type responseOut struct {
	resp *echo.Response
	rc   *http.ResponseController
	// lines are the lines written since the last flush, size their
	// bytes; borrowed from lineBuffers while not empty.
	lines *net.Buffers
	size  int
	// writing is when the write in progress began (UnixNano), 0 when
	// none is.
	writing atomic.Int64
	// mu guards returned: the handler has returned, so the response
	// writer must not be touched (HTTP/2's panics). abort runs on other
	// goroutines (server close, the request context's AfterFunc, the
	// peer check) and may come after that.
	mu       sync.Mutex
	returned bool
}

func (o *responseOut) write(line []byte) error {
	if o.lines == nil {
		o.lines = lineBuffers.Get().(*net.Buffers)
	}
	*o.lines = append(*o.lines, line)
	o.size += len(line)
	if o.size >= responseWriteBatch {
		return o.writeLines()
	}
	return nil
}

// writeLines hands the gathered lines to net/http in one Write (without
// a copy when there is one line).
func (o *responseOut) writeLines() error {
	if o.lines == nil {
		return nil
	}
	lp := o.lines
	lines := *lp
	o.lines = nil
	defer func() {
		clear(lines)
		*lp = lines[:0]
		lineBuffers.Put(lp)
	}()
	var b []byte
	if len(lines) == 1 {
		b = lines[0]
	} else {
		bp := writeBatches.Get().(*[]byte)
		defer func() {
			*bp = b[:0]
			if cap(b) > responseWriteBatch*2 {
				*bp = make([]byte, 0, responseWriteBatch)
			}
			writeBatches.Put(bp)
		}()
		b = (*bp)[:0]
		for _, l := range lines {
			b = append(b, l...)
		}
	}
	o.size = 0
	o.writing.Store(time.Now().UnixNano())
	defer o.writing.Store(0)
	_, err := o.resp.Write(b)
	return err
}

// flush writes what was gathered and sends it.
func (o *responseOut) flush() error {
	if err := o.writeLines(); err != nil {
		return err
	}
	o.writing.Store(time.Now().UnixNano())
	defer o.writing.Store(0)
	return o.rc.Flush()
}

// stuck reports whether a write has been blocked for longer than
// watchWriteTimeout at now.
func (o *responseOut) stuck(now time.Time) bool {
	w := o.writing.Load()
	return w != 0 && now.UnixNano()-w > int64(watchWriteTimeout)
}

// close writes what is still gathered (an ERROR event after a failed
// drain); net/http sends it as the handler returns.
func (o *responseOut) close() {
	_ = o.writeLines()
}

func (o *responseOut) setWorker(bool) {}

// abort makes a blocked write fail: a deadline in the past resets an
// HTTP/2 stream at once and fails an HTTP/1.1 connection's writes.
func (o *responseOut) abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.returned {
		_ = o.rc.SetWriteDeadline(time.Now())
	}
}

// handlerReturns is called by the handler as it returns: later aborts do
// nothing.
func (o *responseOut) handlerReturns() {
	o.mu.Lock()
	o.returned = true
	o.mu.Unlock()
}
