package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// runBig measures RSS with cfg.bigObjects ConfigMaps stored and the time
// from process start to /readyz 200 with them on disk. When this tool runs
// the daemon, it uses a fresh daemon on a fresh data dir (the main one
// stays up, idle) so that exactly bigObjects objects are stored; with
// --server it can only fill the running server and read its RSS (--pid).
func runBig(ctx context.Context, b *bench) ([]Result, error) {
	n := b.cfg.bigObjects
	label := shortCount(n)
	ctx, cancel := context.WithTimeout(ctx, b.cfg.bigTimeout)
	defer cancel()

	target := b
	var d *daemon
	if b.d != nil {
		dataDir := filepath.Join(b.tmpDir, "big-data")
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		var startup time.Duration
		d, startup, err = startDaemon(ctx, b.cfg.bin, dataDir, addr, b.cfg.readyTimeout)
		if err != nil {
			return nil, err
		}
		defer func() {
			if d != nil {
				_ = d.stop()
			}
			if !b.cfg.keepData {
				_ = os.RemoveAll(dataDir)
			}
		}()
		b.logf("big: fresh daemon pid %d on %s, ready in %s", d.pid(), addr, startup.Round(time.Millisecond))
		target = &bench{
			cfg: b.cfg, c: newClient("http://"+addr, 64), base: "http://" + addr,
			runID: b.runID, d: d, pid: d.pid(), tmpDir: b.tmpDir, report: b.report,
		}
		defer target.c.close()
	}

	var out []Result
	ns := "bench-big"
	if b.d == nil {
		ns += "-" + b.runID
	}
	b.logf("big: creating %d ConfigMaps in %s (64 clients, at most %s)", n, ns, b.cfg.bigTimeout)
	m := target.beginMeasure(ctx)
	start := time.Now()
	rate, err := target.seedConfigMaps(ctx, ns, "big-", n, 64)
	if err != nil {
		return nil, fmt.Errorf("create %d: %w", n, err)
	}
	fill := Result{Workload: "create-" + label + "-fill", Clients: 64, Ops: int64(n),
		Seconds: time.Since(start).Seconds(), OpsPerSec: rate}
	m.end(ctx, &fill)
	fill.note("untimed per request: the fill for rss-%s", label)
	out = append(out, fill)
	b.logResult(fill)

	settle(ctx, b.cfg.bigIdle)
	if mib, ok := target.rss(); ok {
		r := Result{Workload: "rss-" + label, Value: mib, Unit: "MiB", Target: targetRSS100k}
		r.note("after %s idle", b.cfg.bigIdle)
		out = append(out, r)
		b.logResult(r)
	} else {
		b.logf("big: daemon pid unknown (use --pid with --server): no RSS")
	}

	if d == nil {
		b.logf("big: --server: restart time not measured")
		return out, nil
	}
	stopStart := time.Now()
	stopErr := d.stop()
	stopped := time.Since(stopStart)
	d = nil
	r := Result{Workload: "shutdown-" + label, Value: stopped.Seconds(), Unit: "s"}
	if stopErr != nil {
		r.note("%v", stopErr)
	}
	out = append(out, r)
	b.logResult(r)

	d, startup, err := startDaemon(ctx, b.cfg.bin, target.d.dataDir, target.d.addr, b.cfg.readyTimeout)
	if err != nil {
		return out, fmt.Errorf("restart: %w", err)
	}
	target.d, target.pid = d, d.pid()
	r = Result{Workload: "restart-" + label, Value: startup.Seconds(), Unit: "s", Target: targetStart100}
	r.note("process start to /readyz 200 with %d objects stored", n)
	// Check that the objects survived: the last one created must be there.
	code, _, err := target.c.doSimple(ctx, "GET", "/api/v1/namespaces/"+ns+"/configmaps/big-"+strconv.Itoa(n-1), "")
	if err != nil || code != 200 {
		r.note("WARNING: big-%d not readable after restart (HTTP %d, %v)", n-1, code, err)
	}
	out = append(out, r)
	b.logResult(r)

	settle(ctx, b.cfg.settle)
	if mib, ok := target.rss(); ok {
		r := Result{Workload: "rss-" + label + "-restarted", Value: mib, Unit: "MiB", Target: targetRSS100k}
		r.note("%s after restart", b.cfg.settle)
		out = append(out, r)
		b.logResult(r)
	}
	return out, nil
}
