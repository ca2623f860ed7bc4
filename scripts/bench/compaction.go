package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Defaults for the compaction workload.
const (
	// DefaultCompactionInterval is the --compaction-interval of the
	// restarted daemon: its first run compacts everything up to the
	// revision it started at.
	DefaultCompactionInterval = 5 * time.Second
	// DefaultCompactionTimeout bounds the wait for the compaction to end.
	DefaultCompactionTimeout = 10 * time.Minute
	// compactionTail is how long the writer goes on after the compaction
	// ended.
	compactionTail = 2 * time.Second
	// compactionPoll is how often the daemon's statistics and log are read
	// while the writer runs: the resolution of the compaction window.
	compactionPoll = 50 * time.Millisecond
	// compactionWriters is the writer goroutines sharing the write rate.
	compactionWriters = 16
)

// runCompaction measures how much compacting a large change log delays
// writes. On a fresh daemon that never compacts, it creates
// --compaction-rows small ConfigMaps (one change-log row each), restarts
// the daemon with --compaction-interval DefaultCompactionInterval so that
// its first compactor run deletes all those rows, and meanwhile creates
// ~1 KiB ConfigMaps at --compaction-write-rate/s. The result is the latency
// of the writes that overlapped the compaction, from the moment it was
// scheduled to the compactor's log line saying it ended (vacuum included).
func runCompaction(ctx context.Context, b *bench) ([]Result, error) {
	if b.d == nil {
		return nil, errors.New("compaction restarts its own daemon: not with --server")
	}
	rows := b.cfg.compactionRows
	label := shortCount(rows)
	ctx, cancel := context.WithTimeout(ctx, b.cfg.bigTimeout+DefaultCompactionTimeout)
	defer cancel()

	dataDir := filepath.Join(b.tmpDir, "compaction-data")
	defer func() {
		if !b.cfg.keepData {
			_ = os.RemoveAll(dataDir)
		}
	}()
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	d, _, err := startDaemon(ctx, b.cfg.bin, dataDir, addr, b.cfg.readyTimeout, "--compaction-interval", "1000h")
	if err != nil {
		return nil, err
	}
	defer func() {
		if d != nil {
			_ = d.stop()
		}
	}()
	cfg := b.cfg
	cfg.payloadBytes = b.cfg.compactionPayload
	target := &bench{cfg: cfg, c: newClient("http://"+addr, 64), base: "http://" + addr,
		runID: b.runID, d: d, pid: d.pid(), tmpDir: b.tmpDir, report: b.report}
	defer target.c.close()

	// The fill.
	b.logf("compaction: creating %d ConfigMaps of %d bytes (64 clients, at most %s)", rows, cfg.payloadBytes, b.cfg.bigTimeout)
	m := target.beginMeasure(ctx)
	start := time.Now()
	rate, err := target.seedConfigMaps(ctx, "bench-compact-fill", "f-", rows, 64)
	if err != nil {
		return nil, fmt.Errorf("fill: %w", err)
	}
	fill := Result{Workload: "compaction-" + label + "-fill", Clients: 64, Ops: int64(rows),
		Seconds: time.Since(start).Seconds(), OpsPerSec: rate}
	m.end(ctx, &fill)
	fill.note("untimed per request: %d-byte ConfigMaps, one change-log row each", cfg.payloadBytes)
	b.logResult(fill)
	out := []Result{fill}

	// The restart with a short compaction interval.
	if err := d.stop(); err != nil {
		return out, fmt.Errorf("stop after fill: %w", err)
	}
	d = nil
	d, _, err = startDaemon(ctx, b.cfg.bin, dataDir, addr, b.cfg.readyTimeout,
		"--compaction-interval", DefaultCompactionInterval.String())
	if err != nil {
		return out, fmt.Errorf("restart: %w", err)
	}
	restarted := time.Now()
	target.d, target.pid = d, d.pid()
	target.cfg.payloadBytes = b.cfg.payloadBytes
	before0, err := target.c.compactionStats(ctx)
	if err != nil {
		return out, err
	}
	rowsBefore := before0.ChangeLogRows
	wns := "bench-compact-write"
	if err := target.c.ensureNamespace(ctx, wns); err != nil {
		return out, err
	}

	// The writer runs until the compaction has ended (plus a tail), while
	// the poller watches the statistics and the log.
	stop := make(chan struct{})
	var w compactionWindow
	var pollErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		pollErr = w.watch(ctx, target.c, d.logPath, restarted.Add(DefaultCompactionInterval+DefaultCompactionTimeout))
		if pollErr == nil {
			settle(ctx, compactionTail)
		}
	}()
	m = target.beginMeasure(ctx)
	samples := target.paceUntil(ctx, wns, b.cfg.compactionWriteRate, stop)
	wg.Wait()
	if pollErr != nil {
		return out, fmt.Errorf("compaction: %w", pollErr)
	}
	after, _ := target.c.compactionStats(ctx)

	during, before := newHistogram(), newHistogram()
	var failed int64
	var sample string
	for _, s := range samples {
		switch {
		case s.err != "":
			failed++
			if sample == "" {
				sample = s.err
			}
		case s.start.Add(s.latency).Before(w.start):
			before.record(s.latency)
		case s.start.Before(w.end):
			during.record(s.latency)
		}
	}
	r := Result{Workload: "compaction-" + label, Clients: compactionWriters, Ops: int64(during.n),
		Errors: failed, ErrSample: sample, Seconds: w.end.Sub(w.start).Seconds(), Target: targetCompaction}
	r.OpsPerSec = float64(during.n) / r.Seconds
	lat := during.summary()
	r.Latency = &lat
	m.end(ctx, &r)
	r.note("latency of the creates overlapping the compaction of the change log up to rev %d (%d rows before, %d after); compactor's own figure: took %s",
		w.rev, rowsBefore, after.ChangeLogRows, w.took)
	r.note("WAL file at most %.1f MiB during it; %d background checkpoints, %d WAL resets, %d resets put off for want of a pause in reads",
		float64(w.maxWAL)/(1<<20), after.Checkpoints-before0.Checkpoints, after.WALResets-before0.WALResets,
		after.WALResetsDeferred-before0.WALResetsDeferred)
	bs := before.summary()
	r.note("%d creates before it: p99 %s max %s; open loop at %d/s", before.n, fmtMS(bs.P99MS), fmtMS(bs.MaxMS), b.cfg.compactionWriteRate)
	b.logResult(r)
	out = append(out, r)
	return out, nil
}

// compactionStats is the part of the daemon's store statistics the
// compaction workload reads.
type compactionStats struct {
	ChangeLogRows     int64
	CompactedRev      int64
	WALBytes          int64
	Checkpoints       int64
	WALResets         int64
	WALResetsDeferred int64
}

// compactionStats reads the change-log row count, the compacted revision
// and the WAL's size and checkpoint counters from the daemon's statistics.
func (c *client) compactionStats(ctx context.Context) (compactionStats, error) {
	code, body, err := c.doSimple(ctx, http.MethodGet, "/debug/edgeapi/stats", "")
	if err != nil || code != http.StatusOK {
		return compactionStats{}, fmt.Errorf("stats: HTTP %d %v", code, err)
	}
	var st struct {
		Store compactionStats `json:"store"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return compactionStats{}, fmt.Errorf("stats: %w", err)
	}
	return st.Store, nil
}

// compactionWindow is when the daemon's compaction ran, as seen from here.
type compactionWindow struct {
	// start is the last poll before the compacted revision moved; end the
	// poll that found the compactor's log line.
	start, end time.Time
	rev        int64
	took       string
	// maxWAL is the largest WAL file size polled between start and end.
	maxWAL int64
}

// watch polls until the compactor has logged the end of a compaction, or
// until deadline.
func (w *compactionWindow) watch(ctx context.Context, c *client, logPath string, deadline time.Time) error {
	lastQuiet := time.Now()
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		polled := time.Now()
		if st, err := c.compactionStats(ctx); err == nil {
			if st.CompactedRev == 0 {
				lastQuiet = polled
			} else if w.rev == 0 {
				w.rev, w.start = st.CompactedRev, lastQuiet
			}
			if w.rev != 0 {
				w.maxWAL = max(w.maxWAL, st.WALBytes)
			}
		}
		if took, ok := compactorTook(logPath); ok && w.rev != 0 {
			w.end, w.took = time.Now(), took
			return nil
		}
		time.Sleep(compactionPoll)
	}
	return errors.New("no compaction ended before the deadline")
}

// compactorTook finds the compactor's "compacted change log" line (the one
// with "took", logged after the deletion and the vacuum) in the daemon's
// JSON log.
func compactorTook(logPath string) (string, bool) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"compacted change log"`)) {
			continue
		}
		var l struct {
			Took string `json:"took"`
		}
		if json.Unmarshal(line, &l) == nil && l.Took != "" {
			return l.Took, true
		}
	}
	return "", false
}

// writeSample is one write of paceUntil.
type writeSample struct {
	start   time.Time
	latency time.Duration
	err     string
}

// paceUntil creates ~1 KiB ConfigMaps in ns at rate per second, open loop
// on compactionWriters goroutines (a late write is sent at once), until
// stop is closed or ctx ends. It returns every write's start and latency.
func (b *bench) paceUntil(ctx context.Context, ns string, rate int, stop <-chan struct{}) []writeSample {
	interval := time.Second / time.Duration(rate)
	tmpl := newConfigMapBody(ns, b.cfg.payloadBytes)
	url := configMapsURL(b.base, ns)
	per := make([][]writeSample, compactionWriters)
	start := time.Now()
	var wg sync.WaitGroup
	for k := range compactionWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := newReqBody()
			var buf []byte
			for i := int64(k); ctx.Err() == nil; i += compactionWriters {
				at := start.Add(time.Duration(i) * interval)
				if d := time.Until(at); d > 0 {
					select {
					case <-stop:
						return
					case <-time.After(d):
					}
				}
				select {
				case <-stop:
					return
				default:
				}
				if !body.acquire() {
					body, buf = newReqBody(), nil
				}
				t0 := time.Now()
				buf = tmpl.appendCreate(buf[:0], "w-", i, 0)
				body.set(buf)
				rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
				_, _, err := b.c.do(rctx, "POST", url, body, nil)
				cancel()
				s := writeSample{start: t0, latency: time.Since(t0)}
				if err != nil {
					s.err = err.Error()
				}
				per[k] = append(per[k], s)
			}
		}()
	}
	wg.Wait()
	var all []writeSample
	for _, p := range per {
		all = append(all, p...)
	}
	return all
}
