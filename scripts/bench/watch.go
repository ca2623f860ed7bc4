package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the watch workload.
const (
	// DefaultWatchConnectTimeout bounds the wait for every watcher to get
	// its response headers before the writer starts anyway (a server that
	// flushes headers only with the first event is still measured: the
	// watches start at a resourceVersion, so no event is missed).
	DefaultWatchConnectTimeout = 15 * time.Second
	// DefaultWatchDrainTimeout bounds the wait, after the last write, for
	// every watcher to receive every event.
	DefaultWatchDrainTimeout = 10 * time.Second
	// watchReadBuffer is each watcher's line buffer; longer lines are
	// assembled in an overflow buffer.
	watchReadBuffer = 16 << 10
	// watchDialConcurrency limits simultaneous watch connects.
	watchDialConcurrency = 64
)

// watchRuns numbers the fan-out runs of a bench run, for their namespaces.
var watchRuns atomic.Int64

// watcher is one watch connection's state. Its counters are atomic because
// the progress check reads them while it runs; the histogram is read only
// after it ends.
type watcher struct {
	hist     *histogram
	events   atomic.Int64 // events carrying the sent annotation
	other    atomic.Int64 // bookmarks and events of objects not ours
	errors   atomic.Int64 // ERROR events
	errorMsg string       // first ERROR event or failure; read after the watcher ends
	closed   atomic.Bool  // the stream ended (by the server, or by us at the end)
	// bufSize is the line buffer's size; 0 means watchReadBuffer.
	bufSize int
	// proto: the stream is Protobuf (length-prefixed frames), not JSON
	// lines.
	proto bool
}

var sentKey = []byte(`"` + sentAnnotation + `":"`)

// sentFrom and sentTo bound where in an event line parseSent looks first:
// the annotation is in metadata, after the event's type, the object's kind
// and apiVersion, and before managedFields and data. Scanning every byte of
// a million lines a second is a large part of the reader's CPU.
const sentFrom, sentTo = 64, 512

// parseSent returns the UnixNano send time embedded in an event line, or 0.
func parseSent(line []byte) int64 {
	i := -1
	if len(line) > sentFrom {
		if i = bytes.Index(line[sentFrom:min(len(line), sentTo)], sentKey); i >= 0 {
			i += sentFrom
		}
	}
	if i < 0 {
		i = bytes.Index(line, sentKey)
	}
	if i < 0 {
		return 0
	}
	var v int64
	for _, c := range line[i+len(sentKey):] {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	return v
}

var errorEvent = []byte(`"type":"ERROR"`)

// run reads events from body until it ends, recording for each event of
// ours the delay from the writer's send time to its arrival here.
func (w *watcher) run(body io.Reader) {
	if w.proto {
		w.runProto(body)
		return
	}
	size := w.bufSize
	if size == 0 {
		size = watchReadBuffer
	}
	br := bufio.NewReaderSize(body, size)
	var long []byte
	// now is when the bytes in br arrived: read the clock only when
	// ReadSlice had to read more, not once per line.
	var now int64
	for {
		before := br.Buffered()
		line, err := br.ReadSlice('\n')
		if len(line) > before || now == 0 {
			now = time.Now().UnixNano()
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if len(long) > 0 {
			long = append(long, line...)
			line, long = long, long[:0]
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if sent := parseSent(line); sent != 0 {
				w.hist.record(time.Duration(now - sent))
				w.events.Add(1)
			} else if bytes.Contains(line, errorEvent) {
				if w.errors.Add(1) == 1 {
					w.errorMsg = string(line[:min(len(line), 300)])
				}
			} else {
				w.other.Add(1)
			}
		}
		if err != nil {
			w.closed.Store(true)
			if !errors.Is(err, io.EOF) && w.errorMsg == "" {
				w.errorMsg = err.Error()
			}
			return
		}
	}
}

func runWatch(ctx context.Context, b *bench) ([]Result, error) {
	if wi := b.w(); wi.proto {
		return b.watchFanOut(ctx, fanOutSpec{
			name:     fmt.Sprintf("watch-%dw-%d/s", b.cfg.watchers, b.cfg.writeRate),
			base:     wi.base,
			tr:       wi.c.tr,
			watchers: b.cfg.watchers,
			rate:     b.cfg.writeRate,
			proto:    true,
			grant:    wi.grant,
			notes:    []string{"watches through client-go's transport (HTTP/2 over TLS), Protobuf; writes over plain HTTP/1.1"},
		})
	}
	// Watch connections only read: small write buffers, and a read buffer
	// that with the line buffer keeps 1000 watchers near 50 MiB.
	tr := newTransport(b.cfg.watchers)
	tr.WriteBufferSize = 4 << 10
	tr.ReadBufferSize = 32 << 10
	defer tr.CloseIdleConnections()
	var rt http.RoundTripper = tr
	var notes []string
	if st := b.serverTLS; st != nil {
		// An HTTPS server (kube-apiserver, or edgeapi with --main-tls):
		// as the shared client reaches it, TLS on HTTP/1.1 with the
		// token, one connection per watch.
		tlsCfg, err := st.tlsConfig()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tlsCfg
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		if st.token != "" {
			rt = &bearerTransport{Transport: tr, auth: "Bearer " + st.token}
		}
		notes = append(notes, "watches over TLS, HTTP/1.1, JSON, with the shared client's token")
	}
	return b.watchFanOut(ctx, fanOutSpec{
		name:     fmt.Sprintf("watch-%dw-%d/s", b.cfg.watchers, b.cfg.writeRate),
		base:     b.base,
		tr:       rt,
		notes:    notes,
		watchers: b.cfg.watchers,
		rate:     b.cfg.writeRate,
		grant:    func(context.Context, string) error { return nil },
	})
}

// fanOutSpec is one watch fan-out measurement: watchers watches of one
// namespace through tr to base, while the bench's own client creates
// objects in it at rate per second.
type fanOutSpec struct {
	name     string
	base     string
	tr       http.RoundTripper
	watchers int
	rate     int
	// notes are added to the watch result.
	notes []string
	// proto: the watchers ask for Protobuf, as client-go's typed
	// clients do.
	proto bool
	// grant, when set, lets the watchers' user watch the namespace.
	grant func(ctx context.Context, ns string) error
}

// watchFanOut runs spec and returns the watchers' delivery latency and
// the writer's result.
func (b *bench) watchFanOut(ctx context.Context, spec fanOutSpec) ([]Result, error) {
	ns := "bench-watch-" + b.runID + "-" + strconv.Itoa(int(watchRuns.Add(1)))
	if err := b.c.ensureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	grant := spec.grant
	if grant == nil {
		grant = b.grantBenchUser
	}
	if err := grant(ctx, ns); err != nil {
		return nil, err
	}
	code, listBody, err := b.c.doSimple(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps", "")
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("list %s: HTTP %d %v", ns, code, err)
	}
	rv := resourceVersionOf(listBody)
	if rv == nil {
		return nil, errors.New("list: no metadata.resourceVersion")
	}
	watchURL := configMapsURL(spec.base, ns) + "?watch=1&resourceVersion=" + string(rv)

	nWatchers := spec.watchers
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()

	ws, cs := connectWatchersAs(watchCtx, spec.tr, watchURL, nWatchers, 0, spec.proto)
	select {
	case <-cs.all:
	case <-time.After(DefaultWatchConnectTimeout):
		b.logf("watch: %d of %d watchers connected after %s; writing anyway",
			cs.connected.Load(), nWatchers, DefaultWatchConnectTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	connected, failed, doneWG := &cs.connected, &cs.failed, &cs.done
	connectTime := time.Since(cs.start)
	b.logf("watch: %d watchers connected (%d failed) in %s", connected.Load(), failed.Load(), connectTime.Round(time.Millisecond))
	if connected.Load() == 0 {
		stopWatches()
		doneWG.Wait()
		return nil, fmt.Errorf("no watcher connected: %s", ws[0].errorMsg)
	}

	m := b.beginMeasure(ctx)
	pr := b.paceWrites(ctx, ns, spec.rate)
	writes := pr.ok

	// Wait for every connected watcher to see every successful write.
	waitDelivered(ctx, ws, writes, DefaultWatchDrainTimeout)
	var closedEarly int64
	for _, w := range ws {
		if w.closed.Load() {
			closedEarly++
		}
	}
	stopWatches()
	doneWG.Wait()

	var r Result
	r.Workload = spec.name
	r.Clients = nWatchers
	h := newHistogram()
	var received, other, evErrs, short, missing int64
	for _, w := range ws {
		h.merge(w.hist)
		n := w.events.Load()
		received += n
		other += w.other.Load()
		evErrs += w.errors.Load()
		if n < writes {
			short++
			missing += writes - n
		}
		if w.errorMsg != "" && r.ErrSample == "" {
			r.ErrSample = w.errorMsg
		}
	}
	r.Ops = received
	r.Errors = evErrs + failed.Load()
	r.Seconds = b.cfg.duration.Seconds()
	r.OpsPerSec = float64(received) / time.Since(m.start).Seconds()
	lat := h.summary()
	r.Latency = &lat
	m.end(ctx, &r)
	r.note("delivery latency: writer's send time → watcher's receipt")
	r.Notes = append(r.Notes, spec.notes...)
	r.note("%d writes ok, %d failed, %d not sent (writer behind); %d events received, %d watchers got fewer than %d (%d events missing)",
		writes, pr.failed, pr.skipped, received, short, writes, missing)
	r.note("%d watchers connected in %s, %d failed, %d streams ended by the server; %d other events (bookmarks), %d ERROR events",
		connected.Load(), connectTime.Round(time.Millisecond), failed.Load(), closedEarly-failed.Load(), other, evErrs)
	r.note("writer's worst send lag behind schedule %s", pr.maxLag.Round(time.Millisecond))

	wr := Result{Workload: "watch-writer", Clients: b.cfg.watchWriters, Ops: writes, Errors: pr.failed,
		ErrSample: pr.sample, Seconds: pr.elapsed.Seconds(),
		OpsPerSec: float64(writes) / pr.elapsed.Seconds()}
	wl := pr.hist.summary()
	wr.Latency = &wl
	wr.note("open-loop creates at %d/s target while %d watchers watch", spec.rate, nWatchers)
	b.logResult(r)
	b.logResult(wr)
	return []Result{r, wr}, nil
}

// watchConns tracks the watchers connectWatchers started.
type watchConns struct {
	start             time.Time
	connected, failed atomic.Int64
	// all is closed once every watcher has its response headers or failed.
	all chan struct{}
	// done is waited on for every watcher's reader to end (cancel the
	// context given to connectWatchers first).
	done sync.WaitGroup
}

// connectWatchers opens n watches of url, at most watchDialConcurrency
// connects at a time, each read by its own goroutine until ctx ends or
// the server ends the stream. bufSize is each reader's line buffer (0 for
// the default).
func connectWatchers(ctx context.Context, tr http.RoundTripper, url string, n, bufSize int) ([]*watcher, *watchConns) {
	return connectWatchersAs(ctx, tr, url, n, bufSize, false)
}

// connectWatchersAs is connectWatchers asking for Protobuf streams when
// proto is set (Accept as client-go's typed clients send it).
func connectWatchersAs(ctx context.Context, tr http.RoundTripper, url string, n, bufSize int, proto bool) ([]*watcher, *watchConns) {
	hdr := hdrJSON
	if proto {
		hdr = hdrProtoGet
	}
	ws := make([]*watcher, n)
	cs := &watchConns{start: time.Now(), all: make(chan struct{})}
	var connectWG sync.WaitGroup
	dialSem := make(chan struct{}, watchDialConcurrency)
	for i := range ws {
		w := &watcher{hist: newHistogram(), bufSize: bufSize, proto: proto}
		ws[i] = w
		connectWG.Add(1)
		cs.done.Add(1)
		go func() {
			defer cs.done.Done()
			dialSem <- struct{}{}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header = hdr
			resp, err := tr.RoundTrip(req)
			<-dialSem
			if err != nil || resp.StatusCode != http.StatusOK {
				if err == nil {
					msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
					resp.Body.Close()
					err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
				}
				w.errorMsg = "watch: " + err.Error()
				w.closed.Store(true)
				cs.failed.Add(1)
				connectWG.Done()
				return
			}
			cs.connected.Add(1)
			connectWG.Done()
			defer resp.Body.Close()
			w.run(resp.Body)
		}()
	}
	go func() { connectWG.Wait(); close(cs.all) }()
	return ws, cs
}

// waitDelivered waits until every watcher that is still open has received
// at least want events, or timeout passes; it reports whether all did.
func waitDelivered(ctx context.Context, ws []*watcher, want int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		done := true
		for _, w := range ws {
			if !w.closed.Load() && w.events.Load() < want {
				done = false
				break
			}
		}
		if done {
			return true
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// paceWrites creates ConfigMaps in ns at rate per second for cfg.duration,
// open loop: writer k of W sends writes k, k+W, k+2W… each at its scheduled
// time (or at once when it is late), and stops at cfg.duration even when
// it is behind (the writes not sent are reported as skipped). Each object
// carries its actual send time in sentAnnotation.
func (b *bench) paceWrites(ctx context.Context, ns string, rate int) paceResult {
	nw := b.cfg.watchWriters
	total := int64(float64(rate) * b.cfg.duration.Seconds())
	interval := time.Second / time.Duration(rate)
	tmpl := newConfigMapBody(ns, b.cfg.payloadBytes)
	url := configMapsURL(b.base, ns)
	ctx, cancel := context.WithTimeout(ctx, b.cfg.duration+DefaultRequestTimeout)
	defer cancel()

	hists := make([]*histogram, nw)
	oks := make([]int64, nw)
	errs := make([]int64, nw)
	samples := make([]string, nw)
	lates := make([]time.Duration, nw)
	start := time.Now()
	end := start.Add(b.cfg.duration)
	var wg sync.WaitGroup
	for k := range nw {
		hists[k] = newHistogram()
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := newReqBody()
			var buf []byte
			var sink bytes.Buffer
			for i := int64(k); i < total && ctx.Err() == nil; i += int64(nw) {
				at := start.Add(time.Duration(i) * interval)
				if d := time.Until(at); d > 0 {
					time.Sleep(d)
				}
				if !body.acquire() {
					body, buf = newReqBody(), nil
				}
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				lates[k] = max(lates[k], t0.Sub(at))
				buf = tmpl.appendCreate(buf[:0], "w-", i, t0.UnixNano())
				body.set(buf)
				if _, _, err := b.c.do(ctx, "POST", url, body, &sink); err != nil {
					errs[k]++
					if samples[k] == "" {
						samples[k] = err.Error()
					}
					continue
				}
				hists[k].record(time.Since(t0))
				oks[k]++
			}
		}()
	}
	wg.Wait()
	res := paceResult{hist: newHistogram(), elapsed: time.Since(start)}
	for k := range nw {
		res.hist.merge(hists[k])
		res.ok += oks[k]
		res.failed += errs[k]
		if res.sample == "" {
			res.sample = samples[k]
		}
		res.maxLag = max(res.maxLag, lates[k])
	}
	res.skipped = total - res.ok - res.failed
	return res
}

// paceResult is what paceWrites did.
type paceResult struct {
	ok, failed int64      // writes answered 201, and not
	skipped    int64      // scheduled writes not sent before the end
	sample     string     // first failure
	hist       *histogram // latency of the successful writes
	maxLag     time.Duration
	elapsed    time.Duration
}
