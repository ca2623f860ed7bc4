package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// The informer workload: how long a client-go typed SharedInformer for
// ConfigMaps takes from Start to HasSynced over --informer-objects objects
// in one namespace, asking for Protobuf as Kubernetes' own components do,
// and the server's CPU over that time (with etcd's for kube-apiserver).
// client-go 1.36 gets the initial state with a streaming watch
// (sendInitialEvents, the WatchListClient feature, on by default) and falls
// back to LIST when the server does not offer it; the report says which
// requests it made.

// protobufContentType is Kubernetes' Protobuf wire format.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// informerPoll is how often the workload asks the informer whether it has
// synced (cache.WaitForCacheSync polls every 100 ms, too coarse here).
const informerPoll = 2 * time.Millisecond

func runInformer(ctx context.Context, b *bench) ([]Result, error) {
	n := b.cfg.informerObjects
	ns := "bench-informer-" + b.runID
	b.logf("informer: seeding %d ConfigMaps in %s", n, ns)
	seedStart := time.Now()
	rate, err := b.seedConfigMaps(ctx, ns, "i-", n, 64)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	b.logf("informer: seeded in %.1f s (%.0f/s)", time.Since(seedStart).Seconds(), rate)
	settle(ctx, b.cfg.settle)

	cfg := b.restConfig()
	cfg.ContentType = protobufContentType
	cfg.AcceptContentTypes = protobufContentType + ",application/json"
	reqs := &requestLog{}
	cfg.WrapTransport = reqs.wrap
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()

	stop := make(chan struct{})
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	var cpu0 time.Duration
	haveCPU := b.pid > 0
	if haveCPU {
		if cpu0, err = b.serverCPUTime(); err != nil {
			haveCPU = false
		}
	}
	self0 := selfCPU()
	start := time.Now()
	reqs.start = start
	factory.Start(stop)
	tick := time.NewTicker(informerPoll)
	defer tick.Stop()
	for !inf.HasSynced() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	elapsed := time.Since(start)
	self := selfCPU() - self0
	r := Result{Workload: "informer-" + shortCount(n), Value: elapsed.Seconds(), Unit: "s", Ops: int64(n)}
	if haveCPU {
		if cpu1, err := b.serverCPUTime(); err == nil {
			srv := cpu1 - cpu0
			r.ServerCPU = float64(srv) / float64(elapsed)
			r.note("server CPU %.2f core-s (%.2f cores; %.1f µs per object)", srv.Seconds(), r.ServerCPU, float64(srv.Microseconds())/float64(n))
		}
	} else {
		r.note("server CPU n/a (pid unknown: give --pid)")
	}
	r.ClientCPU = float64(self) / float64(elapsed)
	r.note("bench process CPU %.2f core-s (informer decoding and store)", self.Seconds())
	got := len(inf.GetStore().ListKeys())
	if got != n {
		r.note("WARNING: the informer holds %d ConfigMaps, want %d", got, n)
	}
	r.note("Start to HasSynced, typed SharedInformer, Protobuf; %s", reqs.summary())
	r.note("seeded at %.0f creates/s (64 clients)", rate)
	b.logResult(r)
	return []Result{r}, nil
}

// requestLog records the requests a client-go client makes and the bytes
// of their responses, to tell a LIST from a streaming watch-list.
type requestLog struct {
	mu    sync.Mutex
	lines []string
	bytes atomic.Int64
	// start is when the informer started; first is when the first
	// response byte arrived, in nanoseconds after start (0: none yet).
	start time.Time
	first atomic.Int64
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		l.mu.Lock()
		line := describeRequest(req)
		if resp != nil {
			line += fmt.Sprintf(" %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		l.lines = append(l.lines, line)
		l.mu.Unlock()
		if resp != nil {
			resp.Body = &countingBody{ReadCloser: resp.Body, log: l}
		}
		return resp, err
	})
}

// describeRequest names a request as list, watch or watch-list
// (sendInitialEvents), with its query's size-relevant parameters.
func describeRequest(req *http.Request) string {
	q := req.URL.Query()
	kind := "list"
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		kind = "watch"
		if q.Get("sendInitialEvents") == "true" {
			kind = "watch-list"
		}
	case req.Method != http.MethodGet:
		kind = req.Method
	}
	var params []string
	for _, k := range []string{"resourceVersion", "resourceVersionMatch", "limit"} {
		if v := q.Get(k); v != "" {
			params = append(params, k+"="+v)
		}
	}
	if len(params) == 0 {
		return kind
	}
	return kind + " (" + strings.Join(params, " ") + ")"
}

// summary lists the requests (at most 4) and the response bytes read until
// now.
func (l *requestLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	more := ""
	if len(lines) > 4 {
		more = fmt.Sprintf(" and %d more", len(lines)-4)
		lines = lines[:4]
	}
	first := "none"
	if f := l.first.Load(); f > 0 {
		first = fmt.Sprintf("%.3f s after Start", time.Duration(f).Seconds())
	}
	return fmt.Sprintf("requests: %s%s; %.1f MiB of responses, the first byte %s", strings.Join(lines, ", "), more, float64(l.bytes.Load())/(1<<20), first)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// countingBody adds the bytes read through it to its log's count, and
// notes when the first arrived.
type countingBody struct {
	io.ReadCloser
	log *requestLog
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	if k > 0 {
		c.log.bytes.Add(int64(k))
		if c.log.first.Load() == 0 && !c.log.start.IsZero() {
			c.log.first.CompareAndSwap(0, int64(max(time.Since(c.log.start), 1)))
		}
	}
	return k, err
}
