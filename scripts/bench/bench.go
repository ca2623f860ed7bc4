package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// bench is the state shared by the workloads of one run.
type bench struct {
	cfg   config
	c     *client
	base  string // server URL
	runID string // makes object names unique across runs on one data dir

	// d is the daemon this tool started, nil with --server. pid is the
	// daemon's process id when known (ours, or --pid), for RSS and CPU.
	d      *daemon
	pid    int
	tmpDir string
	// storePid is a store process beside the daemon (kube-apiserver's
	// etcd), whose CPU and RSS count with the daemon's; 0 when none.
	storePid int
	// serverTLS, when set, is how the shared client reaches an HTTPS
	// server (kube-apiserver, or edgeapi with --main-tls).
	serverTLS *serverTLS

	report *Report
	// listNS is the namespace the list workload filled, once it ran.
	listNS string
	// crListResource and crListNS are the storage resource and namespace
	// of the custom resources the cr-list workload filled, once it ran.
	crListResource, crListNS string
	// bulkNS is the namespace of --bulk-objects objects, once created.
	bulkNS *bulkNamespace
	// tls is the daemon's HTTPS side, once a TLS workload loaded it.
	tls *tlsTarget
	// wire is how the timed requests of the running workload go (see
	// clientgo.go; nil: the plain client), and cgWire the client-go one,
	// once made.
	wire, cgWire *wire
	// rbacUser is the name of the TLS workloads' RBAC-bound user when it
	// is not benchUser (the ServiceAccount of serverTarget).
	rbacUser string
}

// Result is one measured line of the report: either a timed workload (ops,
// latency) or a single value (RSS, start-up time).
type Result struct {
	Workload string `json:"workload"`
	Clients  int    `json:"clients,omitempty"`

	Ops       int64            `json:"ops,omitempty"`
	Errors    int64            `json:"errors,omitempty"`
	ErrorCode map[string]int64 `json:"error_codes,omitempty"`
	ErrSample string           `json:"error_sample,omitempty"`
	Conflicts int64            `json:"conflicts,omitempty"`
	Seconds   float64          `json:"seconds,omitempty"`
	OpsPerSec float64          `json:"ops_per_sec,omitempty"`
	Latency   *Latency         `json:"latency,omitempty"`

	// Value and Unit hold a single measurement.
	Value float64 `json:"value,omitempty"`
	Unit  string  `json:"unit,omitempty"`
	// DaemonMiB and StoreMiB split an RSS Value that counts a store
	// process beside the server (etcd): the server's own part and the
	// store's. Both 0 when the server has no store process.
	DaemonMiB float64 `json:"daemon_mib,omitempty"`
	StoreMiB  float64 `json:"store_mib,omitempty"`

	// ClientCPU and ServerCPU are cores used on average over the workload
	// (1.0 = one core busy); ServerCPU is 0 when the daemon's pid is
	// unknown. ClientCPUPerOpUS is the generator's CPU per operation.
	ClientCPU float64 `json:"client_cpu_cores,omitempty"`
	ServerCPU float64 `json:"server_cpu_cores,omitempty"`
	// StoreCPU is the part of ServerCPU its store process (etcd) used;
	// 0 without one.
	StoreCPU         float64 `json:"store_cpu_cores,omitempty"`
	ClientCPUPerOpUS float64 `json:"client_cpu_us_per_op,omitempty"`

	// ServerStats are the daemon's own statistics over the workload:
	// counters' increase and gauges' value after (see statsDiff).
	ServerStats      map[string]float64 `json:"server_stats_delta,omitempty"`
	ServerGauges     map[string]float64 `json:"server_stats_after,omitempty"`
	AvgBatch         float64            `json:"avg_batch,omitempty"`
	Notes            []string           `json:"notes,omitempty"`
	Target           string             `json:"target,omitempty"`
	KubeAPIServerRef string             `json:"kube_apiserver_ref,omitempty"`
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// measure records CPU use and server statistics around a workload.
type measure struct {
	b         *bench
	start     time.Time
	selfCPU   time.Duration
	serverCPU time.Duration
	storeCPU  time.Duration
	stats     *serverStats
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (b *bench) beginMeasure(ctx context.Context) *measure {
	m := &measure{b: b, stats: b.c.probeStats(ctx)}
	m.selfCPU = selfCPU()
	if b.pid > 0 {
		m.serverCPU, _ = b.serverCPUTime()
		m.storeCPU, _ = b.storeCPUTime()
	}
	m.start = time.Now()
	return m
}

// end fills r's CPU and server statistics fields for the time since
// beginMeasure.
func (m *measure) end(ctx context.Context, r *Result) {
	wall := time.Since(m.start)
	cpu := selfCPU() - m.selfCPU
	r.ClientCPU = float64(cpu) / float64(wall)
	if r.Ops > 0 {
		r.ClientCPUPerOpUS = float64(cpu) / float64(r.Ops) / 1e3
	}
	if m.b.pid > 0 {
		if s, err := m.b.serverCPUTime(); err == nil {
			r.ServerCPU = float64(s-m.serverCPU) / float64(wall)
		}
		if s, err := m.b.storeCPUTime(); err == nil && m.b.storePid > 0 {
			r.StoreCPU = float64(s-m.storeCPU) / float64(wall)
		}
	}
	after := m.b.c.probeStats(ctx)
	r.ServerStats, r.ServerGauges = statsDiff(m.stats, after)
	r.AvgBatch = avgBatch(r.ServerStats)
	m.b.report.ServerStats = after
}

// worker is one client's state in a closed loop: its own histogram,
// counters, random source and reusable buffers.
type worker struct {
	id        int
	hist      *histogram
	ops       int64
	errs      int64
	conflicts int64
	bytes     int64
	codes     map[int]int64
	errSample string
	rng       *rand.Rand
	buf       []byte
	body      *reqBody
	sink      bytes.Buffer
	seq       int64
	name      string // the worker's own object, for read-modify-write
}

// fail counts an error by status code and keeps the first message.
func (w *worker) fail(err error) {
	w.errs++
	w.codes[statusOf(err)]++
	if w.errSample == "" {
		w.errSample = err.Error()
	}
}

// nextBody returns the worker's request body, ready to be filled through
// w.buf: it waits for the previous request to release it.
func (w *worker) nextBody() *reqBody {
	if !w.body.acquire() {
		// The transport still holds the old body; leave it the bytes.
		w.body = newReqBody()
		w.buf = nil
	}
	return w.body
}

// loopSpec describes a closed-loop timed workload: clients workers each run
// op back to back until duration has passed or maxOps operations have been
// started in total, whichever comes first.
type loopSpec struct {
	name     string
	clients  int
	duration time.Duration
	maxOps   int64
	// setup runs once per worker before the clock starts.
	setup func(ctx context.Context, w *worker) error
	// op runs one operation, whose latency is recorded. An error counts
	// the operation as failed (not in the latency histogram).
	op func(ctx context.Context, w *worker) error
}

// runLoop runs spec and returns its result.
func (b *bench) runLoop(ctx context.Context, spec loopSpec) (Result, error) {
	workers := make([]*worker, spec.clients)
	for i := range workers {
		w := &worker{
			id:    i,
			hist:  newHistogram(),
			codes: map[int]int64{},
			rng:   rand.New(rand.NewPCG(uint64(i)+1, uint64(time.Now().UnixNano()))),
			body:  newReqBody(),
			buf:   make([]byte, 0, 4096),
		}
		w.sink.Grow(8192)
		if spec.setup != nil {
			if err := spec.setup(ctx, w); err != nil {
				return Result{}, fmt.Errorf("%s: set up client %d: %w", spec.name, i, err)
			}
		}
		workers[i] = w
	}

	m := b.beginMeasure(ctx)
	ctx, cancel := context.WithTimeout(ctx, spec.duration+DefaultRequestTimeout)
	defer cancel()
	var started atomic.Int64
	start := time.Now()
	deadline := start.Add(spec.duration)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) || started.Add(1) > spec.maxOps {
					return
				}
				if err := spec.op(ctx, w); err != nil {
					w.fail(err)
					continue
				}
				w.hist.record(time.Since(t0))
				w.ops++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	r := Result{Workload: spec.name, Clients: spec.clients, Seconds: elapsed.Seconds()}
	h := newHistogram()
	for _, w := range workers {
		h.merge(w.hist)
		r.Ops += w.ops
		r.Errors += w.errs
		r.Conflicts += w.conflicts
		for code, n := range w.codes {
			if r.ErrorCode == nil {
				r.ErrorCode = map[string]int64{}
			}
			key := "transport"
			if code != 0 {
				key = fmt.Sprint(code)
			}
			r.ErrorCode[key] += n
		}
		if r.ErrSample == "" {
			r.ErrSample = w.errSample
		}
	}
	r.OpsPerSec = float64(r.Ops) / elapsed.Seconds()
	lat := h.summary()
	r.Latency = &lat
	m.end(ctx, &r)
	return r, nil
}

// fanOut runs fn(i) for i in [0, n) on up to conc goroutines and returns the
// first error; it stops handing out work after an error.
func fanOut(ctx context.Context, n, conc int, fn func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		// Our own cancel only follows an error; this is the caller's.
		return ctx.Err()
	}
	return firstErr
}

// seedConfigMaps creates n ConfigMaps named prefix0..prefix(n-1) in ns on
// conc clients, tolerating ones that already exist. It returns the rate.
func (b *bench) seedConfigMaps(ctx context.Context, ns, prefix string, n, conc int) (float64, error) {
	if err := b.c.ensureNamespace(ctx, ns); err != nil {
		return 0, err
	}
	tmpl := newConfigMapBody(ns, b.cfg.payloadBytes)
	url := b.base + "/api/v1/namespaces/" + ns + "/configmaps"
	type slot struct {
		buf  []byte
		body *reqBody
	}
	pool := sync.Pool{New: func() any { return &slot{body: newReqBody()} }}
	start := time.Now()
	err := fanOut(ctx, n, conc, func(ctx context.Context, i int) error {
		s := pool.Get().(*slot)
		defer pool.Put(s)
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			if attempt > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			if !s.body.acquire() {
				s.body, s.buf = newReqBody(), nil
			}
			s.buf = tmpl.appendCreate(s.buf[:0], prefix, int64(i), 0)
			s.body.set(s.buf)
			rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
			_, _, err = b.c.do(rctx, "POST", url, s.body, nil)
			cancel()
			if err == nil || statusOf(err) == 409 {
				return nil
			}
		}
		return fmt.Errorf("create %s/%s%d: %w", ns, prefix, i, err)
	})
	if err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// rss returns the daemon's RSS in MiB, with its store process's (etcd)
// when it has one, or false when its pid is unknown.
func (b *bench) rss() (float64, bool) {
	d, s, ok := b.rssParts()
	return d + s, ok
}

// rssParts returns the daemon's RSS and its store process's (0 without
// one) in MiB, or false when either cannot be read.
func (b *bench) rssParts() (daemon, store float64, ok bool) {
	if b.pid <= 0 {
		return 0, 0, false
	}
	v, err := rssBytes(b.pid)
	if err != nil {
		return 0, 0, false
	}
	if b.storePid > 0 {
		s, err := rssBytes(b.storePid)
		if err != nil {
			return 0, 0, false
		}
		store = float64(s) / (1 << 20)
	}
	return float64(v) / (1 << 20), store, true
}

// rssResult is the RSS line name, the store's part split out when the
// daemon has a store process.
func (b *bench) rssResult(name string) (Result, bool) {
	d, s, ok := b.rssParts()
	if !ok {
		return Result{}, false
	}
	r := Result{Workload: name, Value: d + s, Unit: "MiB"}
	if b.storePid > 0 {
		r.DaemonMiB, r.StoreMiB = d, s
		r.note("daemon %.1f MiB + store process (etcd) %.1f MiB", d, s)
	}
	return r, true
}

// storeCPUTime returns the CPU time the daemon's store process (etcd)
// has used, 0 without one.
func (b *bench) storeCPUTime() (time.Duration, error) {
	if b.storePid <= 0 {
		return 0, nil
	}
	return cpuTime(b.storePid)
}

// serverCPUTime returns the CPU time the daemon has used, with its store
// process's (etcd) when it has one.
func (b *bench) serverCPUTime() (time.Duration, error) {
	t, err := cpuTime(b.pid)
	if err != nil || b.storePid <= 0 {
		return t, err
	}
	s, err := cpuTime(b.storePid)
	return t + s, err
}

func (b *bench) logf(format string, args ...any) {
	if b.cfg.quiet {
		return
	}
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(stderr, "bench %s %s\n", time.Now().Format("15:04:05.000"), strings.TrimRight(msg, "\n"))
}
