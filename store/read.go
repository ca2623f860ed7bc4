package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"
)

// This file is the read API. Reads go through the read pool, never through
// the writer: in WAL mode a reader sees the last commit before its read
// transaction began and neither blocks nor is blocked by the writer.

const sqlGet = `SELECT uid, create_rev, mod_rev, value FROM objects
WHERE resource = ? AND namespace = ? AND name = ?`

// sqlReadRevs reads the current and the compacted revision; as the first
// statement of a read transaction it also fixes the snapshot.
const sqlReadRevs = `SELECT
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	COALESCE((SELECT value FROM meta WHERE key = ?), 0)`

// List queries: objects of one resource after a position, at or below a
// revision, in key order (the stored namespace+"/" sorts as etcd keys, see
// keyorder.go). LIMIT -1 is no limit. Namespace, name and uid
// come packed in one NUL-separated text column: the driver allocates per
// column, and this cuts a 10,000-object list's allocations by a third.
// Keys never hold a NUL (Create rejects them); a uid may, being last.
const (
	sqlListAll = `SELECT namespace || char(0) || name || char(0) || uid, create_rev, mod_rev, value FROM objects
WHERE resource = ? AND (namespace, name) > (?, ?) AND mod_rev <= ?
ORDER BY namespace, name LIMIT ?`
	sqlListNamespace = `SELECT namespace || char(0) || name || char(0) || uid, create_rev, mod_rev, value FROM objects
WHERE resource = ? AND namespace = ? AND name > ? AND mod_rev <= ?
ORDER BY name LIMIT ?`
	// At the current revision every row qualifies and the count reads the
	// primary key's index alone; at a past one it reads the rows.
	sqlCountAll = `SELECT COUNT(*) FROM objects
WHERE resource = ? AND (namespace, name) > (?, ?)`
	sqlCountNamespace = `SELECT COUNT(*) FROM objects
WHERE resource = ? AND namespace = ? AND name > ?`
	sqlCountAllPast = `SELECT COUNT(*) FROM objects
WHERE resource = ? AND (namespace, name) > (?, ?) AND mod_rev <= ?`
	sqlCountNamespacePast = `SELECT COUNT(*) FROM objects
WHERE resource = ? AND namespace = ? AND name > ? AND mod_rev <= ?`
)

// Get returns the object at key as of the latest commit, or ErrNotFound.
// Recently written and read objects come from memory (objectcache.go).
func (db *DB) Get(ctx context.Context, key Key) (Object, error) {
	if db.isClosed.Load() {
		return Object{}, ErrClosed
	}
	var gen uint64
	if db.cache != nil {
		var obj Object
		var ok bool
		if obj, ok, gen = db.cache.get(key); ok {
			return obj, nil
		}
	}
	start := time.Now()
	obj, err := db.getStored(ctx, key, gen)
	db.observeSince(OpGet, key.Resource, start, err)
	return obj, err
}

// getStored is Get from SQLite, for the cache generation gen.
func (db *DB) getStored(ctx context.Context, key Key, gen uint64) (Object, error) {
	if err := db.readers.enter(ctx); err != nil {
		return Object{}, err
	}
	obj := Object{Key: key}
	err := db.getStmt.QueryRowContext(ctx, key.Resource, sqlNamespace(key.Namespace), key.Name).
		Scan(&obj.UID, &obj.CreateRev, &obj.ModRev, &obj.Value)
	db.readers.leave()
	if errors.Is(err, sql.ErrNoRows) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, translate("get object", err)
	}
	if obj.Value, _, err = db.decode(key, obj.Value); err != nil {
		return Object{}, err
	}
	if db.cache != nil {
		db.cache.fill(obj, gen)
	}
	return obj, nil
}

// List returns the objects of opts.Resource (in opts.Namespace if set) in
// etcd key order (see keyorder.go), from one read transaction: ListResult.Rev is the
// revision the objects were read at.
//
// opts.Rev zero or the current revision reads the current state. An older
// revision at or above the compacted revision is rebuilt from the change
// log (see pastStates); below it List returns ErrCompacted, above the
// current revision ErrFutureRev.
//
// Limit bounds the objects returned (0: all); with a Filter it counts
// objects that pass. More reports that another object (passing the filter)
// follows the last one returned. Remaining counts the objects after the
// last one returned (0 when !More) and is -1 when a Filter is set, since
// counting those that pass would mean reading them all.
func (db *DB) List(ctx context.Context, opts ListOptions) (ListResult, error) {
	start := time.Now()
	var res ListResult
	err := db.readTx(ctx, "list", func(tx *sql.Tx, cur, compacted int64) (err error) {
		res, err = db.list(ctx, tx, opts, cur, compacted)
		return err
	})
	db.observeSince(OpList, opts.Resource, start, err)
	if err != nil {
		return ListResult{}, err
	}
	return res, nil
}

// list is List inside its read transaction, whose snapshot is at cur.
func (db *DB) list(ctx context.Context, tx *sql.Tx, opts ListOptions, cur, compacted int64) (ListResult, error) {
	var err error
	rev := opts.Rev
	switch {
	case rev == 0:
		rev = cur
	case rev > cur:
		return ListResult{}, ErrFutureRev
	case rev < compacted:
		return ListResult{}, ErrCompacted
	}

	// The position to list after. With a namespace, only a name within it
	// matters.
	afterNS, afterName := opts.AfterNamespace, opts.AfterName
	if opts.Namespace != "" {
		switch {
		case namespaceLess(opts.Namespace, afterNS):
			return ListResult{Rev: rev}, nil
		case namespaceLess(afterNS, opts.Namespace):
			afterName = ""
		}
		afterNS = opts.Namespace
	}

	var past []Object
	if rev < cur {
		past, err = pastStates(ctx, tx, opts.Resource, opts.Namespace, afterNS, afterName, rev, db.decodeInList)
		if err != nil {
			return ListResult{}, err
		}
	}

	limit := int64(-1)
	if opts.Limit > 0 && opts.Filter == nil {
		// One more than asked tells whether there is more.
		limit = int64(opts.Limit) + 1
	}
	var rows *sql.Rows
	if opts.Namespace != "" {
		rows, err = tx.QueryContext(ctx, sqlListNamespace, opts.Resource, sqlNamespace(opts.Namespace), afterName, rev, limit)
	} else {
		rows, err = tx.QueryContext(ctx, sqlListAll, opts.Resource, sqlNamespace(afterNS), afterName, rev, limit)
	}
	if err != nil {
		return ListResult{}, translate("list objects", err)
	}
	res, err := mergeList(rows, past, opts, db.decodeInList)
	if cerr := rows.Close(); err == nil && cerr != nil {
		err = cerr
	}
	var te *TransformError
	if errors.As(err, &te) {
		return ListResult{}, te // kube-apiserver's wording, unwrapped
	}
	if err != nil {
		return ListResult{}, translate("list objects", err)
	}
	res.Rev = rev

	switch {
	case !res.More:
		res.Remaining = 0
	case res.Cut, opts.Filter != nil:
		res.Remaining = -1
	default:
		last := res.Objects[len(res.Objects)-1].Key
		if n, ok := db.remaining.nextPage(opts.Resource, opts.Namespace, rev, afterNS, afterName, len(res.Objects), last); ok {
			res.Remaining = n
			break
		}
		var n int64
		switch {
		case opts.Namespace != "" && rev == cur:
			err = tx.QueryRowContext(ctx, sqlCountNamespace, opts.Resource, sqlNamespace(opts.Namespace), last.Name).Scan(&n)
		case opts.Namespace != "":
			err = tx.QueryRowContext(ctx, sqlCountNamespacePast, opts.Resource, sqlNamespace(opts.Namespace), last.Name, rev).Scan(&n)
		case rev == cur:
			err = tx.QueryRowContext(ctx, sqlCountAll, opts.Resource, sqlNamespace(last.Namespace), last.Name).Scan(&n)
		default:
			err = tx.QueryRowContext(ctx, sqlCountAllPast, opts.Resource, sqlNamespace(last.Namespace), last.Name, rev).Scan(&n)
		}
		if err != nil {
			return ListResult{}, translate("count objects", err)
		}
		for i := range past {
			if keyLess(last, past[i].Key) {
				n++
			}
		}
		res.Remaining = n
		db.remaining.put(opts.Resource, opts.Namespace, rev, last, n)
	}
	return res, nil
}

// mergeList merges the current rows (at or below the list revision) with
// past, the states of objects changed since (sorted by key, disjoint from
// rows), applying opts' Filter, Limit and MaxBytes. decodeRow turns a row's
// stored value into the caller's form (see transform.go).
//
// A row's value is kept as the driver returned it, not copied: modernc's
// driver makes a new slice for each blob it returns (conn.columnBlob), so
// the bytes stay valid after the next row. database/sql allows a driver to
// reuse that buffer; should it ever do so (the next row's value starting
// where the previous one did, see ownedValue), values are copied into an
// arena instead. TestMergeList_ValuesOutliveRows holds the driver to this.
// Copying every value was a tenth of a 10,000-object list's CPU, with the
// garbage collection of its chunks.
func mergeList(rows *sql.Rows, past []Object, opts ListOptions, decodeRow func(Key, []byte) ([]byte, error)) (ListResult, error) {
	var (
		res   ListResult
		a     arena
		row   Object
		raw   sql.RawBytes
		own   ownedValue
		haveR bool
		size  int
		// packed is declared once: Scan's pointer to it would move a
		// per-row variable to the heap.
		packed string
	)
	row.Key.Resource = opts.Resource
	nextRow := func() error {
		haveR = rows.Next()
		if !haveR {
			return rows.Err()
		}
		if err := rows.Scan(&packed, &row.CreateRev, &row.ModRev, &raw); err != nil {
			return err
		}
		ns, rest, ok1 := strings.Cut(packed, "\x00")
		name, uid, ok2 := strings.Cut(rest, "\x00")
		if !ok1 || !ok2 {
			return fmt.Errorf("read key %q: not namespace, name and uid", packed)
		}
		row.Key.Namespace, row.Key.Name, row.UID = plainNamespace(ns), name, uid
		return nil
	}
	if err := nextRow(); err != nil {
		return res, err
	}
	switch {
	case cap(opts.Objects) > 0:
		res.Objects = opts.Objects[:0]
	case opts.Limit > 0:
		res.Objects = make([]Object, 0, min(opts.Limit, 1024))
	}
	for haveR || len(past) > 0 {
		var obj *Object
		fromRow := haveR && (len(past) == 0 || keyLess(row.Key, past[0].Key))
		if fromRow {
			v, err := decodeRow(row.Key, raw)
			if err != nil {
				return res, err
			}
			row.Value = v
			obj = &row
		} else {
			obj = &past[0]
		}
		if opts.Filter == nil || opts.Filter(obj) {
			if opts.Limit > 0 && len(res.Objects) == opts.Limit {
				res.More = true
				return res, nil
			}
			o := *obj
			if fromRow && unsafe.SliceData(o.Value) == unsafe.SliceData(raw) {
				// Still the driver's buffer: kept unless it reuses it.
				o.Value = own.keep(raw, &a)
			}
			res.Objects = append(res.Objects, o)
			size += len(o.Value)
			if opts.MaxBytes > 0 && size >= opts.MaxBytes && (opts.Limit == 0 || len(res.Objects) < opts.Limit) {
				res.More, res.Cut = true, true
				return res, nil
			}
		}
		if fromRow {
			if err := nextRow(); err != nil {
				return res, err
			}
		} else {
			past = past[1:]
		}
	}
	return res, nil
}

// ownedValue decides whether a driver's value can be kept past the next
// row: while the driver hands out a new buffer for each row, yes; once a
// value starts where the previously kept one did (a reused buffer), every
// value from then on is copied.
type ownedValue struct {
	last   *byte
	reused bool
}

// keep returns b itself or, if the driver reuses its buffers, a copy of b
// in a.
func (w *ownedValue) keep(b []byte, a *arena) []byte {
	if len(b) == 0 {
		return b
	}
	p := unsafe.SliceData(b)
	if w.reused || p == w.last {
		w.reused = true
		return a.copy(b)
	}
	w.last = p
	// Capped so that an append by the caller cannot run into memory
	// past the value.
	return b[:len(b):len(b)]
}

// arena hands out copies of list values from a few large chunks rather
// than one allocation per object. A chunk stays alive while any value in it
// does.
type arena struct {
	buf   []byte
	chunk int
}

const (
	minArenaChunk = 64 << 10
	maxArenaChunk = 4 << 20
)

func (a *arena) copy(b []byte) []byte {
	if len(b) > cap(a.buf)-len(a.buf) {
		a.chunk = min(max(2*a.chunk, minArenaChunk), maxArenaChunk)
		a.buf = make([]byte, 0, max(a.chunk, len(b)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	// Cap the slice so an append by the caller cannot overwrite the next
	// value.
	return a.buf[start:len(a.buf):len(a.buf)]
}

// readTx runs fn in one read transaction that first reads the current and
// compacted revisions from meta. That first read fixes the snapshot, so the
// revisions match everything else fn reads: never an in-memory counter,
// which may be ahead of (or, during a commit, behind) the snapshot.
func (db *DB) readTx(ctx context.Context, what string, fn func(tx *sql.Tx, cur, compacted int64) error) error {
	if db.isClosed.Load() {
		return ErrClosed
	}
	if err := db.readers.enter(ctx); err != nil {
		return err
	}
	defer db.readers.leave()
	tx, err := db.readDB.BeginTx(ctx, nil)
	if err != nil {
		return translate("begin "+what, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to lose
	var cur, compacted int64
	if err := tx.QueryRowContext(ctx, sqlReadRevs, metaRev, metaScheduledCompactRev).Scan(&cur, &compacted); err != nil {
		return translate("read revision", err)
	}
	if err := fn(tx, cur, compacted); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return translate("end "+what, err)
	}
	return nil
}
