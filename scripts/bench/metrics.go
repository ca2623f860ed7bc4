package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// targetMetricsRatio is the bound on what metrics may cost a GET.
const targetMetricsRatio = "≥97% (metrics cost ≤3%)"

// disableMetricsEnv is the daemon's bench knob that turns recording off
// (daemon/metrics.go).
const disableMetricsEnv = "EDGEAPI_DISABLE_METRICS"

// runMetricsCost measures what recording metrics costs a GET: it starts
// two daemons from --bin, one with recording off (EDGEAPI_DISABLE_METRICS)
// and one as shipped, seeds --get-objects ConfigMaps in each, and runs
// gets at --get-clients against them in turn, --metrics-rounds times in
// alternating order, so that both see the same machine load. It reports
// each run and the on/off ratios of the summed rates and of the daemon
// CPU per GET.
func runMetricsCost(ctx context.Context, b *bench) ([]Result, error) {
	if b.d == nil {
		return nil, errors.New("metrics starts its own daemons: not with --server")
	}
	type variant struct {
		name string
		env  []string
		t    *bench
	}
	vs := []*variant{{name: "metrics-off", env: []string{disableMetricsEnv + "=1"}}, {name: "metrics-on", env: []string{}}}
	for _, v := range vs {
		dataDir := filepath.Join(b.tmpDir, v.name+"-data")
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		d, _, err := startDaemonEnv(ctx, b.cfg.bin, dataDir, addr, b.cfg.readyTimeout, v.env, b.cfg.daemonArgs...)
		if err != nil {
			return nil, err
		}
		defer func() {
			_ = d.stop()
			if !b.cfg.keepData {
				_ = os.RemoveAll(dataDir)
			}
		}()
		v.t = &bench{cfg: b.cfg, c: newClient("http://"+addr, max(b.cfg.getClients, 32)), base: "http://" + addr,
			runID: b.runID, d: d, pid: d.pid(), tmpDir: b.tmpDir, report: b.report}
		defer v.t.c.close()
	}
	n := b.cfg.getObjects
	prefix := "mget-" + b.runID + "-"
	for _, v := range vs {
		b.logf("metrics: seeding %d ConfigMaps in %s", n, v.name)
		if _, err := v.t.seedConfigMaps(ctx, benchNamespace, prefix, n, 32); err != nil {
			return nil, fmt.Errorf("seed %s: %w", v.name, err)
		}
	}

	type sum struct{ ops, secs, srvCPU float64 }
	sums := map[string]*sum{}
	var out []Result
	clients := b.cfg.getClients
	for round := range b.cfg.metricsRounds {
		order := []*variant{vs[0], vs[1]}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, v := range order {
			t := v.t
			urls := make([]string, n)
			for i := range urls {
				urls[i] = configMapsURL(t.base, benchNamespace) + "/" + prefix + strconv.Itoa(i)
			}
			r, err := t.runLoop(ctx, loopSpec{
				name: fmt.Sprintf("get-%d %s #%d", clients, v.name, round+1), clients: clients,
				duration: b.cfg.duration, maxOps: b.cfg.maxOps,
				op: func(ctx context.Context, w *worker) error {
					_, n, err := t.c.do(ctx, "GET", urls[w.rng.IntN(len(urls))], nil, &w.sink)
					w.bytes += n
					return err
				},
			})
			if err != nil {
				return out, err
			}
			s := sums[v.name]
			if s == nil {
				s = &sum{}
				sums[v.name] = s
			}
			s.ops += float64(r.Ops)
			s.secs += r.Seconds
			s.srvCPU += r.ServerCPU * r.Seconds
			out = append(out, r)
			b.logResult(r)
		}
	}
	off, on := sums["metrics-off"], sums["metrics-on"]
	if off != nil && on != nil && off.ops > 0 && off.secs > 0 && on.ops > 0 && on.secs > 0 {
		r := Result{Workload: fmt.Sprintf("get-%d metrics on/off", clients), Unit: "%", Target: targetMetricsRatio,
			Value: 100 * (on.ops / on.secs) / (off.ops / off.secs)}
		r.note("%.0f/s against %.0f/s over %d rounds; daemon CPU per GET %.1f µs against %.1f µs (%.1f%%)",
			on.ops/on.secs, off.ops/off.secs, b.cfg.metricsRounds, 1e6*on.srvCPU/on.ops, 1e6*off.srvCPU/off.ops,
			100*(on.srvCPU/on.ops)/(off.srvCPU/off.ops))
		out = append(out, r)
		b.logResult(r)
	}
	return out, nil
}
