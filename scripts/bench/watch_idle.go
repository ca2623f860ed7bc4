package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Defaults for the watch-idle workload.
const (
	// DefaultIdleConnectTimeout bounds the wait for every idle watcher to
	// connect.
	DefaultIdleConnectTimeout = 2 * time.Minute
	// idleWatchBuffer is each idle watcher's line and read buffer: they
	// receive one small event, so 10,000 of them stay small here.
	idleWatchBuffer = 4 << 10
	targetWatchIdle = "≤100 MB"
)

// runWatchIdle opens --idle-watchers watches on one empty namespace and
// reads the daemon's RSS once they are all open and idle. Then it creates
// one object and checks that every watcher receives it (the delivery
// latency of that one event is the result's latency).
func runWatchIdle(ctx context.Context, b *bench) ([]Result, error) {
	wi := b.w()
	ns := "bench-widle" + strings.TrimSpace(wi.name) + "-" + b.runID
	if err := wi.ensure(ctx, b, ns); err != nil {
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
	n := b.cfg.idleWatchers
	label := shortCount(n)
	before, _ := b.rss()

	var tr http.RoundTripper
	var conns *connCounter
	if wi.proto {
		rr, counter, err := b.clientGoTransports(b.cfg.idleWatchConns)
		if err != nil {
			return nil, err
		}
		tr, conns = rr, counter
	} else {
		h1 := newTransport(n)
		h1.WriteBufferSize = idleWatchBuffer
		h1.ReadBufferSize = idleWatchBuffer
		tr = h1
	}
	defer closeIdle(tr)
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	ws, cs := connectWatchersAs(watchCtx, tr, configMapsURL(wi.base, ns)+"?watch=1&resourceVersion="+string(rv), n, idleWatchBuffer, wi.proto)
	select {
	case <-cs.all:
	case <-time.After(DefaultIdleConnectTimeout):
		b.logf("watch-idle: %d of %d watchers connected after %s", cs.connected.Load(), n, DefaultIdleConnectTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	connectTime := time.Since(cs.start)
	b.logf("watch-idle: %d watchers connected (%d failed) in %s", cs.connected.Load(), cs.failed.Load(), connectTime.Round(time.Millisecond))
	settle(ctx, b.cfg.settle)

	var out []Result
	r := Result{Workload: "rss-watch-idle-" + label, Clients: n, Value: 0, Unit: "MiB", Target: targetWatchIdle}
	if mib, ok := b.rss(); ok {
		r.Value = mib
		r.note("%d idle watchers open for %s; RSS before them %.1f MiB (%.1f KiB per watcher)",
			cs.connected.Load(), b.cfg.settle, before, (mib-before)*1024/float64(max(cs.connected.Load(), 1)))
	} else {
		r.note("daemon pid unknown (use --pid with --server): no RSS")
	}
	r.note("%d watchers connected in %s, %d failed", cs.connected.Load(), connectTime.Round(time.Millisecond), cs.failed.Load())
	if conns != nil {
		r.note("Protobuf watches through %d client-go transport(s) (HTTP/2 over TLS, token user bound by RBAC): %d TCP connections open (%d dialed); the daemon allows %d streams per HTTP/2 connection, and client-go opens another connection when one is full",
			b.cfg.idleWatchConns, conns.open(), conns.dialed.Load(), daemonHTTP2MaxStreams)
	} else {
		r.note("JSON watches over plain HTTP/1.1, one connection each")
	}
	if cs.failed.Load() > 0 {
		for _, w := range ws {
			if w.errorMsg != "" {
				r.ErrSample = w.errorMsg
				break
			}
		}
	}
	r.Errors = cs.failed.Load()
	out = append(out, r)
	b.logResult(r)

	// One write, delivered to every watcher.
	m := b.beginMeasure(ctx)
	tmpl := newConfigMapBody(ns, b.cfg.payloadBytes)
	body := newReqBody()
	body.set(tmpl.appendCreate(nil, "idle-", 0, time.Now().UnixNano()))
	if _, _, err := b.c.do(ctx, "POST", configMapsURL(b.base, ns), body, nil); err != nil {
		stopWatches()
		cs.done.Wait()
		return out, fmt.Errorf("create: %w", err)
	}
	waitDelivered(ctx, ws, 1, DefaultWatchDrainTimeout)
	stopWatches()
	cs.done.Wait()
	d := Result{Workload: "watch-idle-" + label + "-deliver", Clients: n}
	h := newHistogram()
	var missing int64
	for _, w := range ws {
		h.merge(w.hist)
		d.Ops += w.events.Load()
		if w.events.Load() < 1 {
			missing++
		}
	}
	lat := h.summary()
	d.Latency = &lat
	d.Seconds = time.Since(m.start).Seconds()
	d.OpsPerSec = float64(d.Ops) / d.Seconds
	m.end(ctx, &d)
	d.note("one create delivered to %d idle watchers; %d got nothing", n, missing)
	d.Errors = missing
	b.logResult(d)
	return append(out, d), nil
}
