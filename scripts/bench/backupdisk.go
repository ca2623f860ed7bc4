package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// This file is what the backup workload reads besides latencies: the
// daemon's commit-fsync histogram (the COMMIT statement: the WAL frames
// and their fsync, which waits behind other writes to the file system and
// barely for a CPU) and the daemon's own CPU time and disk writes, so
// that a backup's cost on the writer can be told apart from the CPU
// contention of a shared machine.

// fsyncMetric is the daemon's histogram of COMMIT statements.
const fsyncMetric = "edgeapi_store_commit_fsync_duration_seconds"

// fsyncHist is a scrape of fsyncMetric: cumulative counts by upper bound.
type fsyncHist struct {
	le    []float64
	count []float64
}

// fsyncHistogram scrapes fsyncMetric from the daemon's /metrics.
func (c *client) fsyncHistogram(ctx context.Context) (fsyncHist, error) {
	code, body, err := c.doSimple(ctx, http.MethodGet, "/metrics", "")
	if err != nil || code != http.StatusOK {
		return fsyncHist{}, fmt.Errorf("metrics: HTTP %d %v", code, err)
	}
	var h fsyncHist
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	prefix := fsyncMetric + `_bucket{le="`
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		rest := line[len(prefix):]
		q := strings.IndexByte(rest, '"')
		sp := strings.LastIndexByte(rest, ' ')
		if q < 0 || sp < 0 {
			continue
		}
		le, err1 := strconv.ParseFloat(rest[:q], 64)
		n, err2 := strconv.ParseFloat(rest[sp+1:], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		h.le = append(h.le, le)
		h.count = append(h.count, n)
	}
	if len(h.le) == 0 {
		return h, fmt.Errorf("metrics: no %s", fsyncMetric)
	}
	return h, nil
}

// sub is the histogram of the commits between scrape o and h.
func (h fsyncHist) sub(o fsyncHist) fsyncHist {
	d := fsyncHist{le: h.le, count: make([]float64, len(h.count))}
	for i := range h.count {
		d.count[i] = h.count[i]
		if i < len(o.count) {
			d.count[i] -= o.count[i]
		}
	}
	return d
}

// String summarizes h: the commits, the share slower than 8 and 32 ms,
// and the bucket bounds of p99 and of the slowest.
func (h fsyncHist) String() string {
	if len(h.count) == 0 {
		return "no commit-fsync figures"
	}
	total := h.count[len(h.count)-1]
	if total == 0 {
		return "no commits"
	}
	above := func(limit float64) float64 {
		for i, le := range h.le {
			if le >= limit {
				return (total - h.count[i]) / total * 100
			}
		}
		return 0
	}
	bound := func(q float64) string {
		for i, le := range h.le {
			if h.count[i] >= q*total {
				if math.IsInf(le, 1) {
					return fmt.Sprintf(">%s", fmtMS(h.le[i-1]*1000))
				}
				return "≤" + fmtMS(le*1000)
			}
		}
		return "?"
	}
	return fmt.Sprintf("%.0f commits, %.1f%% over 8 ms, %.2f%% over 32 ms, p99 %s, slowest %s",
		total, above(0.008), above(0.032), bound(0.99), bound(1))
}

// procWriteBytes is the bytes process pid has caused to be written to
// storage (write_bytes in /proc/<pid>/io).
func procWriteBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}

// daemonUse is the daemon's CPU time and storage writes at a moment.
type daemonUse struct {
	cpu   time.Duration
	write int64
	at    time.Time
}

func readDaemonUse(pid int) daemonUse {
	cpu, _ := cpuTime(pid)
	return daemonUse{cpu: cpu, write: procWriteBytes(pid), at: time.Now()}
}

// per says how much the daemon used between o and u, per second.
func (u daemonUse) per(o daemonUse) string {
	s := u.at.Sub(o.at).Seconds()
	return fmt.Sprintf("daemon CPU %.2f cores, disk writes %.1f MiB/s", (u.cpu-o.cpu).Seconds()/s, float64(u.write-o.write)/(1<<20)/s)
}
