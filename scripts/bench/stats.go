package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// statsPaths are the debug endpoints probed for the daemon's store
// statistics, in order; the first answering 200 with JSON is used. The
// daemon is not required to serve any of them.
var statsPaths = []string{"/debug/edgeapi/stats", "/debug/vars"}

// serverStats is what the daemon reports about itself, if anything.
type serverStats struct {
	// ReadyzVerbose is the body of /readyz?verbose.
	ReadyzVerbose string `json:"readyz_verbose,omitempty"`
	// DebugPath and Debug are the first debug endpoint that answered JSON.
	DebugPath string          `json:"debug_path,omitempty"`
	Debug     json.RawMessage `json:"debug,omitempty"`
	// numbers holds every numeric leaf of Debug by dotted path, and every
	// "key=N" or "key: N" token in ReadyzVerbose as "readyz.key".
	numbers map[string]float64
}

func (c *client) probeStats(ctx context.Context) *serverStats {
	s := &serverStats{numbers: map[string]float64{}}
	if code, b, err := c.doSimple(ctx, http.MethodGet, "/readyz?verbose", ""); err == nil && code == http.StatusOK {
		s.ReadyzVerbose = string(b)
		for _, m := range kvNumber.FindAllStringSubmatch(s.ReadyzVerbose, -1) {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				s.numbers["readyz."+m[1]] = v
			}
		}
	}
	for _, p := range statsPaths {
		code, b, err := c.doSimple(ctx, http.MethodGet, p, "")
		if err != nil || code != http.StatusOK {
			continue
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			continue
		}
		s.DebugPath, s.Debug = p, b
		flatten("", v, s.numbers)
		break
	}
	return s
}

// kvNumber matches "key=12", "key: 12.5", `"key":12` in free text.
var kvNumber = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.\-/]*)"?\s*[=:]\s*(-?[0-9]+(?:\.[0-9]+)?)\b`)

func flatten(prefix string, v any, out map[string]float64) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		// Arrays of numbers (histograms) are kept by index; large arrays of
		// objects (memstats.BySize) are not interesting here.
		if len(v) > 64 {
			return
		}
		for i, e := range v {
			flatten(prefix+"["+strconv.Itoa(i)+"]", e, out)
		}
	case float64:
		out[prefix] = v
	case bool:
		if v {
			out[prefix] = 1
		} else {
			out[prefix] = 0
		}
	}
}

// statsKeyOfInterest selects the store statistics worth reporting next to
// a workload: the writer's batching, commits and fsyncs.
var statsKeyOfInterest = regexp.MustCompile(`(?i)batch|commit|fsync|sync|txn|transaction|group|write|flush|checkpoint|wal`)

// gaugeKey marks statistics that are levels (sizes, averages, maxima)
// rather than counters: they are reported as they are after a workload,
// counters as the difference over it.
var gaugeKey = regexp.MustCompile(`(?i)avg|mean|max|min|p50|p90|p99|last|size|bytes|current|pending|queue|ratio|rate`)

// statsDiff returns, for the keys of interest, counters' increase and
// gauges' value after.
func statsDiff(before, after *serverStats) (delta, gauges map[string]float64) {
	if before == nil || after == nil {
		return nil, nil
	}
	for k, v := range after.numbers {
		if !statsKeyOfInterest.MatchString(k) || strings.HasPrefix(k, "memstats.") {
			continue
		}
		if gaugeKey.MatchString(k) {
			if gauges == nil {
				gauges = map[string]float64{}
			}
			gauges[k] = v
			continue
		}
		d := v - before.numbers[k]
		if d == 0 {
			continue
		}
		if delta == nil {
			delta = map[string]float64{}
		}
		delta[k] = d
	}
	return delta, gauges
}

// avgBatch guesses the writer's average batch size from counter deltas:
// writes (or ops) divided by batches (or commits, transactions). It returns
// 0 when the daemon exposes no such pair.
func avgBatch(delta map[string]float64) float64 {
	var batches, writes float64
	for k, v := range delta {
		lk := strings.ToLower(k)
		last := lk[strings.LastIndexAny(lk, "._/")+1:]
		switch {
		case batches == 0 && (strings.HasSuffix(last, "batches") || strings.HasSuffix(last, "commits") ||
			strings.HasSuffix(last, "txns") || strings.HasSuffix(last, "transactions")):
			batches = v
		case writes == 0 && (strings.HasSuffix(last, "writes") || strings.HasSuffix(last, "ops") ||
			strings.HasSuffix(last, "requests") || strings.HasSuffix(last, "batched")):
			writes = v
		}
	}
	if batches <= 0 || writes <= 0 {
		return 0
	}
	return writes / batches
}

// formatStats renders m as "k=v" pairs sorted by key, at most max of them.
func formatStats(m map[string]float64, max int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i == max {
			fmt.Fprintf(&sb, " …(+%d)", len(keys)-max)
			break
		}
		if i > 0 {
			sb.WriteByte(' ')
		}
		v := m[k]
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			fmt.Fprintf(&sb, "%s=%d", k, int64(v))
		} else {
			fmt.Fprintf(&sb, "%s=%.3g", k, v)
		}
	}
	return sb.String()
}
