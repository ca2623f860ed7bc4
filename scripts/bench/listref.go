package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
)

// The list-ref workload is the reference the list workload is compared
// with (issue 13: a LIST of 10,000 objects at most 1.2 times the raw
// SQLite scan of its rows, as JSON and as Protobuf). It opens the
// daemon's own database read-only, with the pragmas of the daemon's read
// connections at a budget of 256Mi or more (a 2000 KiB page cache, a
// 32 MiB mmap), and runs the query
// the daemon's LIST of the list workload's namespace runs: every column
// of the namespace's ConfigMaps in key order, each value read into Go
// memory, nothing decoded. No HTTP, no encoding: what SQLite costs for
// the rows. It needs the list workload before it in the same run, with a
// daemon the bench started. It then scans again without the map
// (list-ref-nomap), as the daemon's readers read below 256Mi, where the
// budget leaves mmap out for the RSS: the gap between the two is what
// that choice costs, and the ratios are printed to both.

// listRefQuery is the store's list of one namespace (store/read.go
// sqlListNamespace). The store keeps a namespace as namespace+"/" (etcd
// key order, store/keyorder.go), so that is what it binds.
const listRefQuery = `SELECT namespace || char(0) || name || char(0) || uid, create_rev, mod_rev, value FROM objects
WHERE resource = ? AND namespace = ? AND name > ? AND mod_rev <= ?
ORDER BY name LIMIT ?`

// listRefDSN is a read-only connection string with the daemon's reader
// pragmas (store/sqlite.go readerDSN): a 2000 KiB page cache and an mmap
// of mmap bytes (32 MiB at budgets of 256Mi and more, none below).
func listRefDSN(path string, mmap int) string {
	q := url.Values{}
	q.Add("mode", "ro")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "cache_size(-2000)")
	q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", mmap))
	q.Add("_pragma", "query_only(1)")
	return (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
}

// listRefTarget is one set of rows list-ref scans: a list workload's
// objects, and the results of that workload it is compared with.
type listRefTarget struct {
	resource, namespace string
	// suffix follows "list-ref-N" in the scan's name ("" for ConfigMaps).
	suffix string
	// lists are the names of the LIST results compared with the scan.
	lists []string
}

// listRefTargets are the rows list-ref scans: the list workload's
// ConfigMaps, and the cr-list workload's custom resources when it ran.
func (b *bench) listRefTargets() []listRefTarget {
	n := shortCount(b.cfg.listObjects)
	var ts []listRefTarget
	if b.listNS != "" {
		ts = append(ts, listRefTarget{"configmaps", b.listNS, "", []string{"list-" + n, "list-" + n + "-protobuf"}})
	}
	if b.crListNS != "" {
		ts = append(ts, listRefTarget{b.crListResource, b.crListNS, "-cr", []string{"cr-list-" + n}})
	}
	return ts
}

func runListRef(ctx context.Context, b *bench) ([]Result, error) {
	if b.d == nil {
		return nil, errors.New("list-ref reads the daemon's database: it needs a daemon started by the bench (not --server)")
	}
	targets := b.listRefTargets()
	if len(targets) == 0 {
		return nil, errors.New("list-ref scans the list (or cr-list) workload's objects: run list before it (--workloads list,list-ref)")
	}
	var out []Result
	for _, v := range []struct {
		mmap   int
		suffix string
	}{{32 << 20, ""}, {0, "-nomap"}} {
		db, err := sql.Open("sqlite", listRefDSN(filepath.Join(b.d.dataDir, "edgeapi.db"), v.mmap))
		if err != nil {
			return out, fmt.Errorf("open database: %w", err)
		}
		db.SetMaxOpenConns(1)
		for _, t := range targets {
			t.suffix += v.suffix
			res, err := b.listRef(ctx, db, t, v.mmap)
			out = append(out, res...)
			if err != nil {
				db.Close()
				return out, err
			}
		}
		db.Close()
	}
	return out, nil
}

// listRef times the scan of one target's rows, read with an mmap of mmap
// bytes, and reports the ratios of its lists to it.
func (b *bench) listRef(ctx context.Context, db *sql.DB, t listRefTarget, mmap int) ([]Result, error) {
	scan := func() (int, int64, error) {
		rows, err := db.QueryContext(ctx, listRefQuery, t.resource, t.namespace+"/", "", int64(1)<<62, -1)
		if err != nil {
			return 0, 0, err
		}
		defer rows.Close()
		var n int
		var bytes int64
		for rows.Next() {
			var key string
			var createRev, modRev int64
			var value []byte
			if err := rows.Scan(&key, &createRev, &modRev, &value); err != nil {
				return n, bytes, err
			}
			n++
			bytes += int64(len(value))
		}
		return n, bytes, rows.Err()
	}
	// One untimed scan checks the count and warms the cache.
	n, size, err := scan()
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", t.resource, err)
	}
	ref := "list-ref" + t.suffix
	r, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("%s-%s", ref, shortCount(n)),
		clients:  1,
		duration: b.cfg.duration * 10, // bounded by count
		maxOps:   int64(b.cfg.lists),
		op: func(ctx context.Context, w *worker) error {
			_, _, err := scan()
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	r.note("raw SQLite scan of %d %s rows (%.2f MiB of values) from the daemon's database, read-only, mmap_size %d MiB", n, t.resource, float64(size)/(1<<20), mmap>>20)
	if n != b.cfg.listObjects {
		r.note("WARNING: expected %d rows, got %d", b.cfg.listObjects, n)
	}
	b.logResult(r)
	out := []Result{r}
	for _, name := range t.lists {
		l := findResult(b.report, name)
		if l == nil || l.Latency == nil || r.Latency == nil || r.Latency.P50MS == 0 {
			continue
		}
		x := l.Latency.P50MS / r.Latency.P50MS
		ratio := Result{Workload: name + " vs " + ref, Value: x, Unit: "×", Target: "≤1.2×"}
		ratio.note("%s vs %s: %.2f× (p50 %.1f ms over %.1f ms, in this run)", name, ref, x, l.Latency.P50MS, r.Latency.P50MS)
		// CPU per operation is steadier than time on a busy machine: the
		// daemon's for the list, this process's for the scan.
		if l.ServerCPU > 0 && l.OpsPerSec > 0 && r.ClientCPU > 0 && r.OpsPerSec > 0 {
			lc, rc := 1000*l.ServerCPU/l.OpsPerSec, 1000*r.ClientCPU/r.OpsPerSec
			ratio.note("CPU per op: %s %.1f ms (server), %s %.1f ms: %.2f×", name, lc, ref, rc, lc/rc)
		}
		b.logResult(ratio)
		out = append(out, ratio)
	}
	return out, nil
}
