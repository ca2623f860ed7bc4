package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The watch-ref workload is the physical limit of watch fan-out on this
// machine: no edgeapi, no store, no encoding. A minimal HTTP/1.1 server in
// the bench process holds --watchers chunked responses on loopback and, at
// --write-rate, writes one watch event line of the watch workload's size to
// every one of them, flushing each (one chunk, one write system call per
// connection and event). The watchers are the watch workload's own readers
// (connectWatchers, watcher.run), so the client side costs the same; the
// difference between the two workloads' delivery latency is what edgeapi
// adds to the bytes a watch server must write.
//
// watch-ref-h2 is the same over what client-go's transport uses: one TLS
// connection with HTTP/2, every watch a stream of it (the server allows
// DefaultH2RefStreams streams per connection, as edgeapi and
// kube-apiserver allow 1,000). It is the reference for tls-watch's tls-h2
// rows: what one connection of Go's HTTP/2 carries on this machine, with
// no edgeapi in it.

// wireRefEvent builds the event lines of the reference: what edgeapi sends
// a watcher of the watch workload for one create, an ADDED event of a
// ConfigMap with the metadata the server adds (uid, resourceVersion,
// creationTimestamp, managedFields) in edgeapi's order and the writer's
// send time in the sentAnnotation, where parseSent looks first.
type wireRefEvent struct {
	head []byte // up to the name's sequence number
	mid  []byte // from the name's end to the sent time
	tail []byte // after the sent time, to the newline
}

func newWireRefEvent(namespace string, payloadBytes int) *wireRefEvent {
	pad := make([]byte, payloadBytes)
	for i := range pad {
		pad[i] = 'a' + byte(i%26)
	}
	return &wireRefEvent{
		head: []byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"1000000","name":"w-`),
		mid: []byte(`","namespace":"` + namespace + `","uid":"6b1f4c1e-8f7a-4d2b-9a51-3c2e0d9f7b64",` +
			`"creationTimestamp":"2026-11-26T00:00:00Z","annotations":{"` + sentAnnotation + `":"`),
		tail: []byte(`"},"managedFields":[{"manager":"Go-http-client","operation":"Update","apiVersion":"v1","time":"2026-11-26T00:00:00Z",` +
			`"fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{}},"f:metadata":{"f:annotations":{".":{},"f:` + sentAnnotation + `":{}}}}}]},` +
			`"data":{"payload":"` + string(pad) + `"}}}` + "\n"),
	}
}

// append appends the event line of object seq sent at sent (UnixNano).
func (e *wireRefEvent) append(dst []byte, seq, sent int64) []byte {
	dst = append(dst, e.head...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, e.mid...)
	dst = strconv.AppendInt(dst, sent, 10)
	return append(dst, e.tail...)
}

// wireRefShards is how many goroutines write the fan-out, each to its own
// share of the connections: one per CPU the process may use.
func wireRefShards() int { return max(1, runtime.GOMAXPROCS(0)) }

// wireRefConn is one watch response the fan-out writes to.
type wireRefConn struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	dead bool // a write failed: skipped from then on
}

// wireRefShard is one writer goroutine's share of the connections and the
// lines queued for them since its last round. A round writes everything
// queued to each connection in turn, as one chunk and one flush (one write
// system call), so a writer that fell behind catches up in larger writes,
// and no goroutine is woken per connection and event.
type wireRefShard struct {
	mu      sync.Mutex
	conns   []*wireRefConn
	pending []byte
	// writing is held for a round, and by a handler that leaves, so that
	// no round writes to a response whose handler returned.
	writing sync.Mutex
	wake    chan struct{} // capacity 1: lines were queued
}

// wireRefServer is the reference watch server.
type wireRefServer struct {
	shards     []*wireRefShard
	registered atomic.Int64
	h2Streams  atomic.Int64 // watches that came as HTTP/2 streams
	next       atomic.Int64
	writes     atomic.Int64 // flushes (write system calls) made
	writeErrs  atomic.Int64
	stop       chan struct{} // the writers write what is queued and end
	done       chan struct{} // closed once they have: the handlers return
	wg         sync.WaitGroup
}

func newWireRefServer(shards int) *wireRefServer {
	s := &wireRefServer{stop: make(chan struct{}), done: make(chan struct{})}
	for range shards {
		sh := &wireRefShard{wake: make(chan struct{}, 1)}
		s.shards = append(s.shards, sh)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var batch []byte
			for {
				stopping := false
				select {
				case <-sh.wake:
				case <-s.stop:
					stopping = true
				}
				sh.writing.Lock()
				sh.mu.Lock()
				batch, sh.pending = sh.pending, batch[:0]
				conns := sh.conns
				sh.mu.Unlock()
				if len(batch) > 0 {
					for _, c := range conns {
						if c.dead {
							continue
						}
						if _, err := c.w.Write(batch); err != nil || c.rc.Flush() != nil {
							c.dead = true
							s.writeErrs.Add(1)
							continue
						}
						s.writes.Add(1)
					}
				}
				sh.writing.Unlock()
				if stopping {
					return
				}
			}
		}()
	}
	return s
}

// ServeHTTP answers any GET as a watch: headers at once, then whatever the
// fan-out writes, until the client goes or the server stops.
func (s *wireRefServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return
	}
	c := &wireRefConn{w: w, rc: rc}
	sh := s.shards[int(s.next.Add(1)-1)%len(s.shards)]
	sh.mu.Lock()
	sh.conns = append(sh.conns, c)
	sh.mu.Unlock()
	s.registered.Add(1)
	if r.ProtoMajor == 2 {
		s.h2Streams.Add(1)
	}
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
	sh.writing.Lock()
	c.dead = true
	sh.writing.Unlock()
}

// send queues line for every connection.
func (s *wireRefServer) send(line []byte) {
	for _, sh := range s.shards {
		sh.mu.Lock()
		sh.pending = append(sh.pending, line...)
		sh.mu.Unlock()
		select {
		case sh.wake <- struct{}{}:
		default:
		}
	}
}

// close has the writers write what is queued, then ends the handlers.
func (s *wireRefServer) close() {
	close(s.stop)
	s.wg.Wait()
	close(s.done)
}

// wireRefRun is what one reference run measured.
type wireRefRun struct {
	ws                []*watcher
	connected, failed int64
	connectTime       time.Duration
	sent, skipped     int64 // events fanned out, and scheduled but not sent by the end
	closedEarly       int64 // streams ended (or never started) before the readers were stopped
	maxLag            time.Duration
	lineBytes         int
	writeErrs         int64
	elapsed           time.Duration
	cpu               time.Duration // this process's CPU: server, fan-out and readers
	flushes           int64         // write system calls the server made
	h2Streams         int64         // watches that came as HTTP/2 streams
	shards            int           // writer goroutines
}

// DefaultH2RefStreams is the streams per connection the HTTP/2 reference
// server allows: edgeapi's DefaultHTTP2MaxStreams and kube-apiserver's
// --http2-max-streams-per-connection default.
const DefaultH2RefStreams = 1000

// runWireRef serves n watches on loopback and fans out events at rate per
// second for d, then waits for every watcher to read every event. With h2
// the watches are streams of HTTP/2 over TLS, which the client's
// transport puts on one connection (up to DefaultH2RefStreams each);
// without it each is an HTTP/1.1 connection of its own.
func runWireRef(ctx context.Context, n, rate int, d time.Duration, namespace string, payloadBytes int, h2 bool, logf func(string, ...any)) (*wireRefRun, error) {
	res := &wireRefRun{shards: wireRefShards()}
	s := newWireRefServer(res.shards)
	var base string
	var tr *http.Transport
	var closeSrv func()
	if h2 {
		srv := httptest.NewUnstartedServer(s)
		srv.EnableHTTP2 = true
		srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: DefaultH2RefStreams}
		srv.Config.ReadHeaderTimeout = 10 * time.Second
		srv.StartTLS()
		base, closeSrv = srv.URL, srv.Close
		tr = srv.Client().Transport.(*http.Transport)
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		base, closeSrv = "http://"+ln.Addr().String(), func() { srv.Close() }
		tr = newTransport(n)
		tr.WriteBufferSize = 4 << 10
		tr.ReadBufferSize = 32 << 10
	}
	serverClosed := false
	stopServer := func() {
		if !serverClosed {
			serverClosed = true
			s.close()
			closeSrv()
		}
	}
	defer stopServer()
	defer tr.CloseIdleConnections()
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	url := base + "/api/v1/namespaces/" + namespace + "/configmaps?watch=1"
	ws, cs := connectWatchers(watchCtx, tr, url, n, 0)
	res.ws = ws
	select {
	case <-cs.all:
	case <-time.After(DefaultWatchConnectTimeout):
		logf("watch-ref: %d of %d watchers connected after %s; writing anyway",
			cs.connected.Load(), n, DefaultWatchConnectTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// A watcher has its headers just before its handler registers it.
	for deadline := time.Now().Add(5 * time.Second); s.registered.Load() < cs.connected.Load() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	res.connected, res.failed = cs.connected.Load(), cs.failed.Load()
	res.h2Streams = s.h2Streams.Load()
	if h2 && res.h2Streams != s.registered.Load() {
		stopWatches()
		cs.done.Wait()
		return nil, fmt.Errorf("%d of %d watches came over HTTP/2", res.h2Streams, s.registered.Load())
	}
	res.connectTime = time.Since(cs.start)
	if res.connected == 0 {
		stopWatches()
		cs.done.Wait()
		return nil, fmt.Errorf("no watcher connected: %s", ws[0].errorMsg)
	}

	ev := newWireRefEvent(namespace, payloadBytes)
	total := int64(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	cpu0 := selfCPU()
	start := time.Now()
	end := start.Add(d)
	for i := int64(0); i < total && ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		t0 := time.Now()
		if !t0.Before(end) {
			break
		}
		res.maxLag = max(res.maxLag, t0.Sub(at))
		line := ev.append(nil, i, t0.UnixNano())
		res.lineBytes = len(line)
		s.send(line)
		res.sent++
	}
	res.skipped = total - res.sent

	waitDelivered(ctx, ws, res.sent, DefaultWatchDrainTimeout)
	res.elapsed = time.Since(start)
	res.cpu = selfCPU() - cpu0
	for _, w := range ws {
		if w.closed.Load() {
			res.closedEarly++
		}
	}
	stopWatches()
	stopServer()
	cs.done.Wait()
	res.writeErrs = s.writeErrs.Load()
	res.flushes = s.writes.Load()
	return res, nil
}

// wireRefName is the watch-ref result's workload name; with h2, the
// watch-ref-h2 one's.
func wireRefName(watchers, rate int, h2 bool) string {
	if h2 {
		return fmt.Sprintf("watch-ref-h2-%dx%d", watchers, rate)
	}
	return fmt.Sprintf("watch-ref-%dx%d", watchers, rate)
}

func runWatchRef(ctx context.Context, b *bench) ([]Result, error) {
	return b.watchRef(ctx, false)
}

func runWatchRefH2(ctx context.Context, b *bench) ([]Result, error) {
	return b.watchRef(ctx, true)
}

// watchRef runs the reference at --watchers and --write-rate, over HTTP/1.1
// or (h2) one HTTP/2 connection with TLS.
func (b *bench) watchRef(ctx context.Context, h2 bool) ([]Result, error) {
	n, rate := b.cfg.watchers, b.cfg.writeRate
	run, err := runWireRef(ctx, n, rate, b.cfg.duration, "bench-watch-"+b.runID+"-ref", b.cfg.payloadBytes, h2, b.logf)
	if err != nil {
		return nil, err
	}
	var r Result
	r.Workload = wireRefName(n, rate, h2)
	r.Clients = n
	h := newHistogram()
	var received, other, short, missing int64
	for _, w := range run.ws {
		h.merge(w.hist)
		got := w.events.Load()
		received += got
		other += w.other.Load()
		if got < run.sent {
			short++
			missing += run.sent - got
		}
		if w.errorMsg != "" && r.ErrSample == "" {
			r.ErrSample = w.errorMsg
		}
	}
	r.Ops = received
	r.Errors = run.failed + run.writeErrs
	r.Seconds = b.cfg.duration.Seconds()
	r.OpsPerSec = float64(received) / run.elapsed.Seconds()
	lat := h.summary()
	r.Latency = &lat
	r.ClientCPU = float64(run.cpu) / float64(run.elapsed)
	if received > 0 {
		r.ClientCPUPerOpUS = float64(run.cpu) / float64(received) / 1e3
	}
	transport := "a minimal HTTP/1.1 server in the bench process, a connection per watch,"
	if h2 {
		transport = "a minimal HTTP/2 server over TLS in the bench process, every watch a stream of one connection (as client-go's transport opens them),"
	}
	r.note("physical-limit reference: no edgeapi; %s queues each %d-byte event line for every watch, at the watch workload's rate; %d writer goroutines, each for its share of the watches, write what is queued to each watch as one chunk and one flush (%d flushes, %.2f events each); read by the watch workload's readers", transport, run.lineBytes, run.shards, run.flushes, float64(received)/float64(max(run.flushes, 1)))
	r.note("delivery latency: writer's send time → watcher's receipt; cpu gen is the bench process (server, fan-out and readers)")
	r.note("%d events sent, %d not sent (writer behind); %d events received, %d watchers got fewer than %d (%d events missing), %d write errors",
		run.sent, run.skipped, received, short, run.sent, missing, run.writeErrs)
	r.note("%d watchers connected in %s (%d as HTTP/2 streams), %d failed, %d streams ended early; %d other lines",
		run.connected, run.connectTime.Round(time.Millisecond), run.h2Streams, run.failed, run.closedEarly-run.failed, other)
	r.note("writer's worst send lag behind schedule %s", run.maxLag.Round(time.Millisecond))
	b.logResult(r)
	return []Result{r}, nil
}

// watchRefRatios returns, for each watch result with a watch-ref result of
// the same watchers and rate in results, the ratio of their delivery p99s
// as a single-value result (issue 13's target: at most 1.5). The
// tls-watch workload's HTTP/2 rows ("... tls-h2") and the client-go pass's
// watch ("... clientgo") go with watch-ref-h2.
func watchRefRatios(results []Result) []Result {
	refs := map[string]*Result{}
	for i := range results {
		if strings.HasPrefix(results[i].Workload, "watch-ref-") && results[i].Latency != nil { // and watch-ref-h2-
			refs[results[i].Workload] = &results[i]
		}
	}
	var out []Result
	for i := range results {
		w := &results[i]
		var n, rate int
		if _, err := fmt.Sscanf(w.Workload, "watch-%dw-%d/s", &n, &rate); err != nil || w.Latency == nil {
			continue
		}
		h2 := strings.HasSuffix(w.Workload, " tls-h2") || strings.HasSuffix(w.Workload, " clientgo")
		ref := refs[wireRefName(n, rate, h2)]
		if ref == nil || ref.Latency.P99MS <= 0 {
			continue
		}
		name := "watch-p99/ref-"
		if h2 {
			name = "watch-p99/ref-h2-"
		}
		r := Result{Workload: name + strconv.Itoa(n) + "x" + strconv.Itoa(rate),
			Value: w.Latency.P99MS / ref.Latency.P99MS, Unit: "×", Target: "≤1.5×"}
		r.note("edgeapi's delivery p99 %s against the reference's %s", fmtMS(w.Latency.P99MS), fmtMS(ref.Latency.P99MS))
		if w.ServerCPU > 0 && w.OpsPerSec > 0 && ref.ClientCPUPerOpUS > 0 {
			srv := w.ServerCPU / w.OpsPerSec * 1e6
			r.note("CPU per event delivered to one watcher: edgeapi %.1f µs + bench %.1f µs (readers and the creating writer) = %.1f µs; reference %.1f µs (server, fan-out and the same readers, one process)",
				srv, w.ClientCPUPerOpUS, srv+w.ClientCPUPerOpUS, ref.ClientCPUPerOpUS)
		}
		// Each side delivered at most its sent events to each watcher: 1%
		// fewer than scheduled means it fell behind the rate, and the two
		// p99s are then of different loads.
		want := int64(float64(rate) * w.Seconds)
		for _, side := range []*Result{w, ref} {
			if side.Clients > 0 && side.Seconds > 0 && side.Ops/int64(side.Clients) < want*99/100 {
				r.note("NOT COMPARABLE: %s delivered %d events per watcher of the %d scheduled (it fell behind the rate)",
					side.Workload, side.Ops/int64(side.Clients), want)
			}
		}
		out = append(out, r)
	}
	return out
}
