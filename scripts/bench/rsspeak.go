package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Peak RSS per workload. The daemon's --memory-limit is a budget for its
// RSS: the binary's pages, SQLite's caches, the Go soft limit and the
// caches inside it are sized from it (daemon/budget.go). Every workload run
// against the daemon this tool watches reports its peak RSS, its anonymous
// and file parts at the sampled peak, and whether it stayed within the
// limit (plus --rss-margin-mib, 0 by default). Workloads that start their
// own daemons (big, compaction) report their own RSS instead.

// Defaults of the peak-RSS check.
const (
	// DefaultMemoryLimitMiB is the daemon's default --memory-limit.
	DefaultMemoryLimitMiB = 128
	// DefaultRSSMarginMiB is the margin allowed over --memory-limit: none
	// since issue 13 (issue 12's budget allowed 32 MiB for the binary's
	// pages, which the budget now counts).
	DefaultRSSMarginMiB = 0
	// rssSampleInterval is how often the sampler reads VmRSS, for kernels
	// where VmHWM cannot be reset.
	rssSampleInterval = 20 * time.Millisecond
)

// rssPeak follows one process's RSS over a workload: it resets the
// kernel's high-water mark (VmHWM, via /proc/PID/clear_refs) at the start
// and also samples VmRSS, so the peak is right even where the reset is not
// allowed.
type rssPeak struct {
	pid   int
	reset bool // the VmHWM reset worked: VmHWM is the workload's own peak

	mu  sync.Mutex // guards max and atMax
	max int64
	// atMax is the sample with the highest VmRSS: its RssAnon and RssFile
	// show what the peak was made of.
	atMax procMem
	stop  chan struct{}
	done  chan struct{}
}

// startRSSPeak starts following pid; call end for the peak.
func startRSSPeak(pid int) *rssPeak {
	p := &rssPeak{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	// "5" resets the peak RSS (Linux ≥ 4.0, Documentation/filesystems/proc).
	p.reset = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	go p.sample()
	return p
}

func (p *rssPeak) sample() {
	defer close(p.done)
	t := time.NewTicker(rssSampleInterval)
	defer t.Stop()
	for {
		if m, err := readProcMem(p.pid); err == nil {
			p.mu.Lock()
			if m.RSS > p.max {
				p.max, p.atMax = m.RSS, m
			}
			p.mu.Unlock()
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// end stops sampling and returns the peak RSS in bytes since start (0 when
// the process could not be read).
func (p *rssPeak) end() int64 {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	peak := p.max
	p.mu.Unlock()
	if p.reset {
		if hwm, err := procStatusKB(p.pid, "VmHWM:"); err == nil {
			peak = max(peak, hwm)
		}
	}
	return peak
}

// procMem is a process's resident memory, in bytes, as /proc/PID/status
// gives it: VmRSS and its parts RssAnon (heap, stacks, SQLite's mmap'd
// allocations), RssFile (the binary's pages, SQLite's map of the database)
// and RssShmem.
type procMem struct {
	RSS, Anon, File, Shmem int64
}

// readProcMem reads pid's procMem.
func readProcMem(pid int) (procMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	return parseProcMem(b)
}

// parseProcMem parses the VmRSS, RssAnon, RssFile and RssShmem lines
// ("RssAnon:\t  95012 kB") of a /proc/PID/status file. VmRSS is required;
// the parts are 0 on kernels without them (before Linux 4.5).
func parseProcMem(status []byte) (procMem, error) {
	var m procMem
	seen := false
	fields := map[string]*int64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File, "RssShmem:": &m.Shmem}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		dst, ok := fields[f[0]]
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return procMem{}, fmt.Errorf("parse %s in status: %w", f[0], err)
		}
		*dst = kb << 10
		seen = seen || f[0] == "VmRSS:"
	}
	if !seen {
		return procMem{}, fmt.Errorf("no VmRSS in status")
	}
	return m, nil
}

// procStatusKB returns a "kB" field of /proc/<pid>/status in bytes.
func procStatusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			f := strings.Fields(rest)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// rssCeilingMiB is the peak RSS a workload may reach: the daemon's memory
// limit plus the margin (0 by default), or 0 when the limit is off.
func (c *config) rssCeilingMiB() float64 {
	if c.memoryLimitMiB <= 0 {
		return 0
	}
	return c.memoryLimitMiB + c.rssMarginMiB
}

// toMiB converts bytes to MiB.
func toMiB(v int64) float64 { return float64(v) / (1 << 20) }

// memoryLimitFromArgs returns the --memory-limit in daemonArgs in MiB, and
// whether there is one. It understands the daemon's quantities (Ki, Mi, Gi
// suffixes, or bytes).
func memoryLimitFromArgs(args []string) (float64, bool, error) {
	var v string
	for i, a := range args {
		if s, ok := strings.CutPrefix(a, "--memory-limit="); ok {
			v = s
		} else if a == "--memory-limit" && i+1 < len(args) {
			v = args[i+1]
		}
	}
	if v == "" {
		return 0, false, nil
	}
	mul := 1.0
	for _, u := range []struct {
		suffix string
		mul    float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}} {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mul = s, u.mul
			break
		}
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false, fmt.Errorf("parse --memory-limit in --daemon-args: %w", err)
	}
	return n * mul / (1 << 20), true, nil
}

// runWithRSSPeak runs one workload, and when the daemon's pid is known
// adds its peak RSS over the workload as "rss-peak-NAME", against the
// ceiling.
func (b *bench) runWithRSSPeak(ctx context.Context, w workload) ([]Result, error) {
	if b.pid <= 0 {
		return w.run(ctx, b)
	}
	p := startRSSPeak(b.pid)
	var sp *rssPeak
	if b.storePid > 0 {
		sp = startRSSPeak(b.storePid)
	}
	res, err := w.run(ctx, b)
	peak := p.end()
	if peak <= 0 {
		if sp != nil {
			sp.end()
		}
		return res, err
	}
	mib := float64(peak) / (1 << 20)
	r := Result{Workload: "rss-peak-" + w.name, Value: mib, Unit: "MiB"}
	if sp != nil {
		// The sum of the two peaks: at least the peak of the sum. The
		// limit below is the daemon's own budget, so it checks the
		// daemon's own peak.
		store := float64(sp.end()) / (1 << 20)
		r.Value += store
		r.DaemonMiB, r.StoreMiB = mib, store
		r.note("daemon %.1f MiB + store process (etcd) %.1f MiB, each its own peak", mib, store)
	}
	if ceil := b.cfg.rssCeilingMiB(); ceil > 0 {
		r.Target = fmt.Sprintf("≤%.0f MiB", ceil)
		verdict := "within"
		if mib > ceil {
			verdict = "OVER"
			b.report.RSSOver = append(b.report.RSSOver, fmt.Sprintf("%s: the daemon's peak RSS %.1f MiB > limit %.0f + margin %.0f MiB", w.name, mib, b.cfg.memoryLimitMiB, b.cfg.rssMarginMiB))
		}
		r.note("%s limit %.0f MiB + margin %.0f MiB", verdict, b.cfg.memoryLimitMiB, b.cfg.rssMarginMiB)
	}
	if m := p.atMax; m.RSS > 0 {
		r.note("at the sampled peak %.1f MiB: anon %.1f MiB, file %.1f MiB, shmem %.1f MiB", toMiB(m.RSS), toMiB(m.Anon), toMiB(m.File), toMiB(m.Shmem))
	}
	if p.reset {
		r.note("VmHWM reset at start, and VmRSS sampled every %s", rssSampleInterval)
	} else {
		r.note("VmRSS sampled every %s (VmHWM reset not allowed)", rssSampleInterval)
	}
	b.logResult(r)
	return append(res, r), err
}

// benchBoundsLifted are the daemon's bounds the bench lifts unless
// --daemon-args sets them: the watch workloads open 1,000 and 10,000
// watches as one user, past the default watch bounds (1,024 and 512 at
// 128 MiB), and watch-resume replays --bulk-objects (100,000) events from
// the change log, which --compaction-max-rows (100,000, keeping the newest
// half) would compact away during its fill.
var benchBoundsLifted = []string{"--max-watches", "--max-watches-per-user", "--compaction-max-rows"}

// withoutWatchBounds returns args with each of benchBoundsLifted set to 0
// unless args set it.
func withoutWatchBounds(args []string) []string {
	out := args[:len(args):len(args)]
	for _, flag := range benchBoundsLifted {
		set := false
		for _, a := range args {
			if a == flag || strings.HasPrefix(a, flag+"=") {
				set = true
			}
		}
		if !set {
			out = append(out, flag, "0")
		}
	}
	return out
}
