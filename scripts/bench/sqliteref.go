package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" driver

	"github.com/edgeapi/edgeapi/store"
)

// The sqlite-ref workload is the reference the create workload is compared
// with (issue 13: creates at 64 clients at least 0.35× "a plain Go loop that
// does the same durable SQLite inserts, 64 rows per transaction"). One
// goroutine, like the daemon's writer, inserts into a fresh database with
// the daemon's schema and the daemon's writer pragmas, 64 creates per
// transaction, each transaction committed (and fsynced) on its own. No
// HTTP, no JSON decoding, no watch cache: only what SQLite and the disk
// cost. Its rows/s is the ceiling the daemon's create path approaches.

// sqliteRefRowsPerTxn is the rows of one reference transaction.
const sqliteRefRowsPerTxn = 64

// sqliteRefCheckpointPages is the WAL pages the writer writes before it
// wakes its checkpointer: 1 MiB at 4 KiB pages, like the daemon's
// checkpointPages.
const sqliteRefCheckpointPages = 256

// The statements of one create, as the store's writer runs them
// (store/groupcommit.go), and the revision written once per transaction.
const (
	sqliteRefInsertObject = `INSERT INTO objects (resource, namespace, name, uid, create_rev, mod_rev, value)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqliteRefInsertChange = `INSERT INTO changelog
(rev, type, resource, namespace, name, uid, create_rev, prev_mod_rev, value, prev_value)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`
	sqliteRefSetMeta = `INSERT INTO meta (key, value) VALUES ('rev', ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value`
)

// sqliteRefDSN is a connection string with the pragmas of the daemon's
// writer connection (store/sqlite.go writerDSN): WAL, synchronous=FULL
// (an fsync of the WAL per commit), incremental auto-vacuum, a 2000 KiB
// page cache, a 64 MiB journal size limit and no automatic checkpoints
// (a checkpointer on its own connection runs them, as in the daemon).
func sqliteRefDSN(path string, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	if writer {
		q.Add("_pragma", "auto_vacuum(INCREMENTAL)")
	}
	q.Add("_pragma", "cache_size(-2000)")
	if writer {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "journal_size_limit(67108864)")
	}
	q.Add("_pragma", "synchronous(FULL)")
	if writer {
		q.Add("_pragma", "wal_autocheckpoint(0)")
	}
	return (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
}

// sqliteRefValue appends the stored form of one created ConfigMap, shaped
// as the daemon stores it (no apiVersion and kind; resourceVersion, uid,
// creationTimestamp and one managedFields entry in metadata) around the
// create workload's data payload: 1,386 bytes for a 1 KiB payload, as for
// the daemon.
func sqliteRefValue(dst []byte, tmpl *configMapBody, name, uid string, rev int64) []byte {
	dst = append(dst, `{"metadata":{"resourceVersion":"`...)
	dst = strconv.AppendInt(dst, rev, 10)
	dst = append(dst, `","name":"`...)
	dst = append(dst, name...)
	dst = append(dst, `","namespace":"`+benchNamespace+`","uid":"`...)
	dst = append(dst, uid...)
	dst = append(dst, `","creationTimestamp":"2026-11-26T00:00:00Z","managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-11-26T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{}}}}]}`...)
	dst = append(dst, tmpl.payload...)
	return append(dst, "}}"...)
}

// sqliteRefUID returns a UUID-shaped uid unique to seq.
func sqliteRefUID(runID string, seq int64) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%06s%06x", uint32(seq), runID, seq&0xffffff)
}

func runSQLiteRef(ctx context.Context, b *bench) ([]Result, error) {
	dir := b.tmpDir
	if dir == "" {
		d, err := os.MkdirTemp("", "edgeapi-bench-sqlite-ref-")
		if err != nil {
			return nil, fmt.Errorf("make temp dir: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	} else {
		dir = filepath.Join(dir, "sqlite-ref")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("make dir: %w", err)
		}
		if !b.cfg.keepData {
			defer os.RemoveAll(dir)
		}
	}
	r, err := sqliteRefLoop(ctx, filepath.Join(dir, "ref.db"), b.cfg.duration, b.cfg.payloadBytes, b.runID)
	if err != nil {
		return nil, err
	}
	out := []Result{r}
	b.logResult(r)
	ratios := sqliteRefRatios(b.report, r)
	for _, ratio := range ratios {
		b.logResult(ratio)
	}
	if len(ratios) == 0 {
		b.logf("sqlite-ref: no create-64 result before it in this run; run create,sqlite-ref for the ratio")
	}
	return append(out, ratios...), nil
}

// sqliteRefCreates are the create runs compared with the reference: the
// plain create-64 and its client-go pass (--client clientgo).
var sqliteRefCreates = []string{"create-64", "create-64 " + clientGo}

// sqliteRefRatios returns, for each of sqliteRefCreates in rep, its rate
// over the reference's rows/s, as a percentage against issue 13's 0.35×.
// Each ratio is named "<create> vs sqlite-ref"; a create that did not
// run, or a reference without rows, gives none.
func sqliteRefRatios(rep *Report, ref Result) []Result {
	if ref.OpsPerSec <= 0 {
		return nil
	}
	var out []Result
	for _, name := range sqliteRefCreates {
		c := findResult(rep, name)
		if c == nil || c.OpsPerSec <= 0 {
			continue
		}
		x := c.OpsPerSec / ref.OpsPerSec
		r := Result{Workload: name + " vs sqlite-ref", Value: 100 * x, Unit: "%", Target: "≥35% (0.35×)"}
		r.note("%s vs sqlite-ref: %.2f× (%s %.0f/s over sqlite-ref %.0f rows/s, in this run)", name, x, name, c.OpsPerSec, ref.OpsPerSec)
		out = append(out, r)
	}
	return out
}

// findResult returns the last result of workload in rep, or nil.
func findResult(rep *Report, workload string) *Result {
	if rep == nil {
		return nil
	}
	for i := len(rep.Results) - 1; i >= 0; i-- {
		if rep.Results[i].Workload == workload {
			return &rep.Results[i]
		}
	}
	return nil
}

// sqliteRefLoop creates the database at path and inserts creates of
// payloadBytes ConfigMaps, sqliteRefRowsPerTxn per transaction, for
// duration. Ops are rows; the latency histogram is per transaction
// (BEGIN to the end of COMMIT, fsync included).
func sqliteRefLoop(ctx context.Context, path string, duration time.Duration, payloadBytes int, runID string) (Result, error) {
	// The store itself creates the database, so the loop writes the
	// store's own schema.
	sdb, err := store.Open(ctx, store.Config{Path: path})
	if err != nil {
		return Result{}, fmt.Errorf("create %s: %w", path, err)
	}
	if err := sdb.Close(); err != nil {
		return Result{}, fmt.Errorf("create %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", sqliteRefDSN(path, true))
	if err != nil {
		return Result{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	var mode string
	var syncMode int
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return Result{}, fmt.Errorf("read journal mode: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil {
		return Result{}, fmt.Errorf("read synchronous: %w", err)
	}
	if mode != "wal" || syncMode != 2 {
		return Result{}, fmt.Errorf("check pragmas: journal_mode=%s synchronous=%d, want wal and 2 (FULL)", mode, syncMode)
	}
	var stmts [5]*sql.Stmt
	for i, text := range []string{"BEGIN IMMEDIATE", "COMMIT", sqliteRefInsertObject, sqliteRefInsertChange, sqliteRefSetMeta} {
		if stmts[i], err = conn.PrepareContext(ctx, text); err != nil {
			return Result{}, fmt.Errorf("prepare %q: %w", text, err)
		}
		defer stmts[i].Close()
	}
	begin, commit, insObj, insChange, setMeta := stmts[0], stmts[1], stmts[2], stmts[3], stmts[4]

	// The checkpointer: PASSIVE checkpoints on a connection of its own,
	// woken after every sqliteRefCheckpointPages of WAL, as in the daemon.
	ckptDB, err := sql.Open("sqlite", sqliteRefDSN(path, false))
	if err != nil {
		return Result{}, fmt.Errorf("open checkpointer: %w", err)
	}
	defer ckptDB.Close()
	ckptDB.SetMaxOpenConns(1)
	wake := make(chan struct{}, 1)
	ckptDone := make(chan struct{})
	var checkpoints int
	go func() {
		defer close(ckptDone)
		for range wake {
			if _, err := ckptDB.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)"); err == nil {
				checkpoints++
			}
		}
	}()
	stopCheckpointer := sync.OnceFunc(func() { close(wake); <-ckptDone })
	defer stopCheckpointer()

	tmpl := newConfigMapBody(benchNamespace, payloadBytes)
	hist := newHistogram()
	var rows, txns, valueBytes int64
	var rev int64
	var value []byte
	var walPages int
	name := make([]byte, 0, 32)
	cpu0 := selfCPU()
	start := time.Now()
	deadline := start.Add(duration)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		t0 := time.Now()
		if _, err := begin.ExecContext(ctx); err != nil {
			return Result{}, fmt.Errorf("begin: %w", err)
		}
		for range sqliteRefRowsPerTxn {
			rev++
			name = strconv.AppendInt(append(name[:0], "ref-"...), rev, 10)
			uid := sqliteRefUID(runID, rev)
			value = sqliteRefValue(value[:0], tmpl, string(name), uid, rev)
			valueBytes += int64(len(value))
			// The namespace as the store keeps it (store/keyorder.go).
			if _, err := insObj.ExecContext(ctx, "configmaps", benchNamespace+"/", string(name), uid, rev, rev, value); err != nil {
				return Result{}, fmt.Errorf("insert object: %w", err)
			}
			if _, err := insChange.ExecContext(ctx, rev, 0, "configmaps", benchNamespace+"/", string(name), uid, rev, 0, value); err != nil {
				return Result{}, fmt.Errorf("insert change: %w", err)
			}
		}
		if _, err := setMeta.ExecContext(ctx, rev); err != nil {
			return Result{}, fmt.Errorf("set revision: %w", err)
		}
		if _, err := commit.ExecContext(ctx); err != nil {
			return Result{}, fmt.Errorf("commit: %w", err)
		}
		hist.record(time.Since(t0))
		rows += sqliteRefRowsPerTxn
		txns++
		n, err := sqliteRefPagesWritten(conn)
		if err != nil {
			return Result{}, err
		}
		if walPages += n; walPages >= sqliteRefCheckpointPages {
			walPages = 0
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
	elapsed := time.Since(start)
	cpu := selfCPU() - cpu0
	stopCheckpointer()
	var fileBytes int64
	if err := conn.QueryRowContext(ctx, "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()").Scan(&fileBytes); err != nil {
		return Result{}, fmt.Errorf("read file size: %w", err)
	}

	r := Result{Workload: "sqlite-ref", Clients: 1, Ops: rows, Seconds: elapsed.Seconds()}
	r.OpsPerSec = float64(rows) / elapsed.Seconds()
	lat := hist.summary()
	r.Latency = &lat
	r.ClientCPU = float64(cpu) / float64(elapsed)
	if rows > 0 {
		r.ClientCPUPerOpUS = float64(cpu) / float64(rows) / 1e3
		r.note("ops are rows (objects row + change-log row each), %d per transaction; latency is per transaction (BEGIN IMMEDIATE to COMMIT, WAL fsync included): %d transactions, %.0f/s", sqliteRefRowsPerTxn, txns, float64(txns)/elapsed.Seconds())
		r.note("one goroutine, store's schema and writer pragmas (WAL, synchronous=FULL), value %d B avg, %d PASSIVE checkpoints on a second connection; database %.1f MiB, %d B per row", valueBytes/rows, checkpoints, float64(fileBytes)/(1<<20), fileBytes/rows)
	}
	return r, nil
}

// sqliteRefPagesWritten returns the pages conn has written to the WAL since
// the previous call, as the daemon's writer counts them.
func sqliteRefPagesWritten(conn *sql.Conn) (int, error) {
	var n int
	err := conn.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			return fmt.Errorf("driver connection %T has no status counters", dc)
		}
		var err error
		n, _, err = st.Status(sqlite.DBStatusCacheWrite, true)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("count wal pages: %w", err)
	}
	return n, nil
}
