package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
)

// Report is the whole run, as written by --json.
type Report struct {
	Started   string `json:"started"`
	Server    string `json:"server"`
	Bin       string `json:"bin,omitempty"`
	Commit    string `json:"commit,omitempty"`
	Version   string `json:"daemon_version,omitempty"`
	GoVersion string `json:"go_version"`
	NumCPU    int    `json:"num_cpu"`
	// LoadAvg is /proc/loadavg at the start and the end of the run: other
	// work on the machine skews the numbers.
	LoadAvg []string       `json:"loadavg,omitempty"`
	Config  map[string]any `json:"config"`
	Results []Result       `json:"results"`
	// Failures lists workloads that did not complete, with their error.
	Failures []string `json:"failures,omitempty"`
	// RSSOver lists workloads whose peak RSS passed --memory-limit (plus
	// --rss-margin-mib; see rsspeak.go); reported, not a failure.
	RSSOver []string `json:"rss_over,omitempty"`
	// ServerStats is the daemon's last reported statistics.
	ServerStats *serverStats `json:"server_stats,omitempty"`
}

// loadAvg returns the 1, 5 and 15 minute load averages, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func fmtMS(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 100:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.0fms", v)
	}
}

func fmtRate(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func fmtCPU(r *Result) string {
	if r.ClientCPU == 0 && r.ServerCPU == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.2f", r.ClientCPU)
	if r.ServerCPU > 0 {
		s += fmt.Sprintf("/%.2f", r.ServerCPU)
	} else {
		s += "/?"
	}
	return s
}

// printReport writes the human-readable tables.
func printReport(out io.Writer, r *Report) {
	fmt.Fprintf(out, "\nedgeapi bench  %s  server %s", r.Started, r.Server)
	if r.Commit != "" {
		fmt.Fprintf(out, "  commit %s", r.Commit)
	}
	if r.Version != "" {
		fmt.Fprintf(out, "  (%s)", r.Version)
	}
	over := "loopback HTTP/1.1 keep-alive"
	if r.Config["client"] == clientGo {
		over += "; lines named clientgo: client-go's transport (HTTP/2 over TLS, a token user checked by RBAC) asking for Protobuf"
	}
	fmt.Fprintf(out, "\n%d CPUs, %s; latency is per operation, end to end over %s\n", r.NumCPU, r.GoVersion, over)
	if len(r.LoadAvg) > 0 {
		fmt.Fprintf(out, "loadavg at start/end: %s (other work on the machine skews results)\n", strings.Join(r.LoadAvg, " / "))
	}
	fmt.Fprintln(out)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tclients\tops\terrors\tops/s\tmin\tp50\tp90\tp99\tmax\tcpu gen/srv\t\ttarget\tkube-apiserver\t")
	var scalars []*Result
	for i := range r.Results {
		res := &r.Results[i]
		if res.Latency == nil {
			if res.Unit != "" {
				scalars = append(scalars, res)
			} else {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t\t\t\t\t\t%s\t\t%s\t%s\t\n", res.Workload, res.Clients, res.Ops, res.Errors,
					fmtRate(res.OpsPerSec), fmtCPU(res), res.Target, res.KubeAPIServerRef)
			}
			continue
		}
		l := res.Latency
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\t%s\t\n",
			res.Workload, res.Clients, res.Ops, res.Errors, fmtRate(res.OpsPerSec),
			fmtMS(l.MinMS), fmtMS(l.P50MS), fmtMS(l.P90MS), fmtMS(l.P99MS), fmtMS(l.MaxMS),
			fmtCPU(res), res.Target, res.KubeAPIServerRef)
	}
	tw.Flush()

	if len(scalars) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "measure\tvalue\ttarget\tnotes")
		for _, res := range scalars {
			v := fmt.Sprintf("%.1f %s", res.Value, res.Unit)
			if res.Unit == "s" {
				v = fmt.Sprintf("%.3f s", res.Value)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.Workload, v, res.Target, strings.Join(res.Notes, "; "))
		}
		tw.Flush()
	}

	fmt.Fprintln(out)
	for i := range r.Results {
		res := &r.Results[i]
		if res.Unit != "" && res.Latency == nil {
			continue
		}
		var lines []string
		lines = append(lines, res.Notes...)
		if res.Errors > 0 {
			lines = append(lines, fmt.Sprintf("errors by status %v, e.g. %s", res.ErrorCode, res.ErrSample))
		}
		if res.ClientCPUPerOpUS > 0 {
			lines = append(lines, fmt.Sprintf("generator CPU %.1f µs/op", res.ClientCPUPerOpUS))
		}
		if res.AvgBatch > 0 {
			lines = append(lines, fmt.Sprintf("writer batches ≈ %.1f writes/commit", res.AvgBatch))
		}
		if len(res.ServerStats) > 0 {
			lines = append(lines, "server Δ "+formatStats(res.ServerStats, 12))
		}
		if len(res.ServerGauges) > 0 {
			lines = append(lines, "server now "+formatStats(res.ServerGauges, 12))
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(out, "%s: %s\n", res.Workload, strings.Join(lines, "\n    "))
	}

	if s := r.ServerStats; s != nil {
		fmt.Fprintln(out)
		if s.DebugPath != "" {
			fmt.Fprintf(out, "server stats from %s (final):\n", s.DebugPath)
			keys := make([]string, 0, len(s.numbers))
			for k := range s.numbers {
				if !strings.HasPrefix(k, "memstats.") && !strings.HasPrefix(k, "readyz.") {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for i, k := range keys {
				if i == 60 {
					fmt.Fprintf(out, "  …(+%d more in --json)\n", len(keys)-60)
					break
				}
				fmt.Fprintf(out, "  %s = %v\n", k, s.numbers[k])
			}
		} else {
			fmt.Fprintf(out, "server stats: no JSON at %s\n", strings.Join(statsPaths, ", "))
		}
		if v := strings.TrimSpace(s.ReadyzVerbose); v != "" {
			lines := strings.Split(v, "\n")
			if len(lines) > 40 {
				lines = append(lines[:40], fmt.Sprintf("…(+%d lines)", len(lines)-40))
			}
			fmt.Fprintf(out, "/readyz?verbose:\n  %s\n", strings.Join(lines, "\n  "))
		} else {
			fmt.Fprintln(out, "/readyz?verbose: no body")
		}
	}
	if len(r.RSSOver) > 0 {
		fmt.Fprintf(out, "\nRSS OVER LIMIT: %s\n", strings.Join(r.RSSOver, "\nRSS OVER LIMIT: "))
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(out, "\nFAILED: %s\n", strings.Join(r.Failures, "\nFAILED: "))
	}
}

// logResult prints one finished line to stderr as a run progresses.
func (b *bench) logResult(r Result) {
	if r.Latency != nil {
		b.logf("%-16s %3d clients  %8d ops  %6d err  %9s/s  p50 %s p99 %s max %s  cpu %s",
			r.Workload, r.Clients, r.Ops, r.Errors, fmtRate(r.OpsPerSec),
			fmtMS(r.Latency.P50MS), fmtMS(r.Latency.P99MS), fmtMS(r.Latency.MaxMS), fmtCPU(&r))
		return
	}
	if r.Unit != "" {
		b.logf("%-16s %.3f %s", r.Workload, r.Value, r.Unit)
		return
	}
	b.logf("%-16s %d ops %.0f/s in %.1fs", r.Workload, r.Ops, r.OpsPerSec, r.Seconds)
}
