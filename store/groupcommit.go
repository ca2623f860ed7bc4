package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// This file is the writer: one goroutine that owns the writer connection,
// group-commits queued writes, and is the one place where commits turn
// into events.
//
// A batch is everything waiting in the queue when the writer gets to it,
// bounded by MaxBatch writes and MaxBatchBytes of values. The writer opens
// one IMMEDIATE transaction, applies each write in queue order with its own
// checks (check, then write: a write that fails a check changes nothing and
// takes no revision), writes the change-log rows and the meta revision,
// and commits once: one fsync for the whole batch. Then it publishes the
// batch's events to the subscribers, in revision order, and answers each
// caller.
//
// A write that fails for an unexpected reason (a driver error partway
// through its statements) may have left part of itself in the transaction,
// so the writer rolls the transaction back, fails that write alone with the
// error and applies the rest again, up to maxCommitAttempts times; after
// that, or when BEGIN or COMMIT fails, every write in the batch fails with
// the error and the revision stays where it was. A batch that fails because
// the file system is full puts the store in the no-space state and is
// tried again, its deletes on the freed reserve (see space.go).

// maxCommitAttempts bounds how often one batch is retried without a write
// that failed unexpectedly.
const maxCommitAttempts = 3

type writeOp uint8

const (
	opCreate writeOp = iota + 1
	opUpdate
	opDelete
)

// States of a writeReq, moved by compare-and-swap: the caller may cancel a
// request only while it is queued; once the writer has taken it the commit
// decides its answer.
const (
	reqQueued int32 = iota
	reqTaken
	reqCancelled
)

// writeReq is one queued write. The caller fills the request fields, the
// writer the result fields, then signals done.
type writeReq struct {
	op    writeOp
	key   Key
	uid   string
	pre   Preconditions
	value []byte
	loc   rvLocation // where value's resourceVersion goes, found by the caller

	state atomic.Int32
	done  chan struct{} // capacity 1, reused with the request

	// Results, written by the writer before done.
	obj Object
	err error
	// excluded marks a write that failed unexpectedly in an earlier attempt
	// at its batch: later attempts skip it and keep its err.
	excluded bool
}

var reqPool = sync.Pool{New: func() any { return &writeReq{done: make(chan struct{}, 1)} }}

func getReq() *writeReq {
	r := reqPool.Get().(*writeReq)
	r.state.Store(reqQueued)
	return r
}

// putReq returns r to the pool. Only the caller does, after done: a
// request the caller cancelled is dropped by the writer instead.
func putReq(r *writeReq) {
	*r = writeReq{done: r.done}
	reqPool.Put(r)
}

// submit queues r and waits for its answer. If ctx ends while r is still
// queued, r is withdrawn and ctx's error returned; once the writer has
// taken it, submit waits for the commit, whose answer is the truth.
func (db *DB) submit(ctx context.Context, r *writeReq) (Object, error) {
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		putReq(r)
		return Object{}, ErrClosed
	}
	select {
	case db.queue <- r:
	case <-ctx.Done():
		db.closeMu.RUnlock()
		putReq(r)
		return Object{}, ctx.Err()
	}
	db.closeMu.RUnlock()

	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqCancelled) {
			// The writer will drop it; it is not ours to reuse.
			return Object{}, ctx.Err()
		}
		<-r.done
	}
	obj, err := r.obj, r.err
	putReq(r)
	return obj, err
}

// writerJob is work other than writes that must run on the writer
// connection, between batches: compaction steps and the checkpoints that
// let the WAL reset.
type writerJob struct {
	fn   func(ctx context.Context, conn *sql.Conn) error
	done chan error
}

// runOnWriter runs fn on the writer goroutine between batches and returns
// its error. fn must be short: writes wait while it runs.
func (db *DB) runOnWriter(ctx context.Context, fn func(ctx context.Context, conn *sql.Conn) error) error {
	job := writerJob{fn: fn, done: make(chan error, 1)}
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return ErrClosed
	}
	select {
	case db.jobs <- job:
	case <-ctx.Done():
		db.closeMu.RUnlock()
		return ctx.Err()
	}
	db.closeMu.RUnlock()
	return <-job.done
}

// groupCommit is the writer goroutine. It returns when the queue is closed
// and drained.
func (db *DB) groupCommit() {
	batch := make([]*writeReq, 0, db.cfg.MaxBatch)
	var carry *writeReq // taken from the queue but over the last batch's byte budget
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case r, ok := <-db.queue:
				if !ok {
					return
				}
				if !r.state.CompareAndSwap(reqQueued, reqTaken) {
					continue // cancelled while queued
				}
				first = r
			case job := <-db.jobs:
				err := job.fn(context.Background(), db.writeConn)
				db.noteWALWrites()
				job.done <- err
				continue
			}
		}
		if hook := db.cfg.beforeBatch; hook != nil {
			hook()
		}

		batch = append(batch[:0], first)
		size := len(first.value)
	fill:
		for len(batch) < db.cfg.MaxBatch {
			select {
			case r, ok := <-db.queue:
				if !ok {
					break fill
				}
				if !r.state.CompareAndSwap(reqQueued, reqTaken) {
					continue
				}
				if size+len(r.value) > db.cfg.MaxBatchBytes {
					carry = r
					break fill
				}
				batch = append(batch, r)
				size += len(r.value)
			default:
				break fill
			}
		}
		db.commit(batch)
		clear(batch) // drop references to answered requests
		db.noteWALWrites()
	}
}

// commit applies batch in one transaction, publishes its events and
// answers every request in it.
func (db *DB) commit(batch []*writeReq) {
	var events []Event
	for attempt := 1; ; attempt++ {
		var bad *writeReq
		var err error
		events, bad, err = db.tryCommit(batch)
		if err == nil {
			break
		}
		if errors.Is(err, ErrNoSpace) && !db.noSpace.Load() && attempt < maxCommitAttempts {
			// The file system is full: free the reserve and try again, now
			// with the creates and updates failing their check, so that
			// the batch's deletes commit.
			db.enterNoSpace(err)
			continue
		}
		if bad != nil && attempt < maxCommitAttempts {
			db.log.Warn("write failed; retrying its batch without it",
				zap.String("resource", bad.key.Resource), zap.String("namespace", bad.key.Namespace),
				zap.String("name", bad.key.Name), zap.Error(err))
			bad.err, bad.excluded = err, true
			continue
		}
		db.log.Error("commit batch", zap.Int("writes", len(batch)), zap.Error(err))
		for _, r := range batch {
			if !r.excluded {
				r.obj, r.err = Object{}, err
			}
		}
		events = nil
		break
	}

	if len(events) > 0 {
		db.stats.batches.Add(1)
		db.stats.batchedWrites.Add(int64(len(events)))
		if rows := db.stats.changeLogRows.Add(int64(len(events))); db.cfg.MaxChangeLogRows > 0 && rows > db.cfg.MaxChangeLogRows {
			db.wakeCompactor()
		}
		db.checkQuota(context.Background())
		if n := int64(len(events)); n > db.stats.maxBatch.Load() {
			db.stats.maxBatch.Store(n) // only the writer stores it
		}
		// The one place commits become events.
		if subs := db.subs.Load(); subs != nil {
			for _, s := range *subs {
				s.fn(events)
			}
		}
	}
	for _, r := range batch {
		r.done <- struct{}{}
	}
}

// tryCommit makes one attempt at batch. On success it has committed,
// advanced db.rev and returns the events in revision order. Otherwise the
// transaction is rolled back; bad is the write whose unexpected error
// (returned) aborted the attempt, or nil when the transaction itself
// failed.
func (db *DB) tryCommit(batch []*writeReq) (events []Event, bad *writeReq, err error) {
	ctx := context.Background()
	begun := time.Now()
	if _, err := db.stmts.begin.ExecContext(ctx); err != nil {
		db.rollback(ctx)
		return nil, nil, translate("begin batch", err)
	}
	rev := db.rev.Load()
	events = make([]Event, 0, len(batch))
	for _, r := range batch {
		if r.excluded {
			continue
		}
		ev, werr, fatal := db.applyWrite(ctx, r, rev+1)
		if hook := db.cfg.afterWrite; hook != nil && werr == nil && fatal == nil {
			fatal = hook(r.key)
		}
		if fatal != nil {
			db.rollback(ctx)
			return nil, r, fatal
		}
		r.obj, r.err = ev.Object, werr
		if werr != nil {
			continue
		}
		rev++
		events = append(events, ev)
	}
	if len(events) == 0 {
		// Every write failed its checks: nothing to commit, no fsync.
		db.rollback(ctx)
		return nil, nil, nil
	}
	if _, err := db.stmts.setMeta.ExecContext(ctx, metaRev, rev); err != nil {
		db.rollback(ctx)
		return nil, nil, translate("write revision", err)
	}
	// The object counts change with the commit, under the lock that
	// orders them with the start of the counting snapshot (observe.go).
	db.objects.mu.Lock()
	commitStart := time.Now()
	_, err = db.stmts.commit.ExecContext(ctx)
	commitEnd := time.Now()
	if err == nil {
		db.objects.applyLocked(events)
	}
	db.objects.mu.Unlock()
	if err != nil {
		db.rollback(ctx)
		return nil, nil, translate("commit batch", err)
	}
	if o := db.cfg.Observer; o != nil {
		o.ObserveCommit(len(events), commitEnd.Sub(begun), commitEnd.Sub(commitStart))
	}
	// Before Rev moves, so that a Get of a revision Rev reports finds it.
	if db.cache != nil {
		db.cache.apply(events)
	}
	// Before commit reads the subscriber list: see Subscribe's contract.
	db.rev.Store(rev)
	return events, nil, nil
}

// rollback ends the writer's transaction, if one is open.
func (db *DB) rollback(ctx context.Context) {
	if _, err := db.stmts.rollback.ExecContext(ctx); err != nil && !isNoTransaction(err) {
		db.log.Error("roll back batch", zap.Error(err))
	}
}

// isNoTransaction reports the error ROLLBACK gives outside a transaction
// (after SQLite already rolled back by itself, for example on some I/O
// errors).
func isNoTransaction(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no transaction is active")
}

// applyWrite applies one write at revision rev inside the writer's
// transaction. werr is a failed check (ErrExists, ErrNotFound,
// ErrConflict): nothing was written. fatal is an unexpected error: the
// transaction must be rolled back.
func (db *DB) applyWrite(ctx context.Context, r *writeReq, rev int64) (ev Event, werr, fatal error) {
	k := &r.key
	ns := sqlNamespace(k.Namespace) // the stored form, see keyorder.go
	switch r.op {
	case opCreate:
		if db.noSpace.Load() {
			return ev, ErrNoSpace, nil
		}
		if db.overQuota.Load() {
			return ev, ErrQuotaExceeded, nil
		}
		value := stampAt(r.value, r.loc, rev)
		stored, err := db.encode(r.key, value)
		if err != nil {
			return ev, nil, err
		}
		res, err := db.stmts.insertObject.ExecContext(ctx, k.Resource, ns, k.Name, r.uid, rev, rev, stored)
		if err != nil {
			return ev, nil, translate("create object", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return ev, nil, translate("create object", err)
		} else if n == 0 {
			return ev, ErrExists, nil
		}
		if _, err := db.stmts.insertChange.ExecContext(ctx, rev, int64(Added), k.Resource, ns, k.Name,
			r.uid, rev, int64(0), stored, nil); err != nil {
			return ev, nil, translate("write change log", err)
		}
		return Event{Type: Added, Object: Object{Key: r.key, UID: r.uid, CreateRev: rev, ModRev: rev, Value: value}}, nil, nil

	case opUpdate, opDelete:
		var cur Object
		err := db.stmts.selectObject.QueryRowContext(ctx, k.Resource, ns, k.Name).
			Scan(&cur.UID, &cur.CreateRev, &cur.ModRev, &cur.Value)
		if errors.Is(err, sql.ErrNoRows) {
			return ev, ErrNotFound, nil
		}
		if err != nil {
			return ev, nil, translate("read object", err)
		}
		cur.Key = r.key
		// The change log keeps the stored form of the previous state; the
		// event carries it decoded.
		prevStored := cur.Value
		if cur.Value, _, err = db.decode(r.key, prevStored); err != nil {
			return ev, nil, fmt.Errorf("read object: %w", err)
		}
		if (r.pre.ModRev != 0 && r.pre.ModRev != cur.ModRev) || (r.pre.UID != "" && r.pre.UID != cur.UID) {
			return ev, ErrConflict, nil
		}

		if r.op == opUpdate {
			if db.noSpace.Load() {
				return ev, ErrNoSpace, nil
			}
			if db.overQuota.Load() {
				return ev, ErrQuotaExceeded, nil
			}
			value := stampAt(r.value, r.loc, rev)
			stored, err := db.encode(r.key, value)
			if err != nil {
				return ev, nil, err
			}
			if _, err := db.stmts.updateObject.ExecContext(ctx, rev, stored, k.Resource, ns, k.Name); err != nil {
				return ev, nil, translate("update object", err)
			}
			if _, err := db.stmts.insertChange.ExecContext(ctx, rev, int64(Modified), k.Resource, ns, k.Name,
				cur.UID, cur.CreateRev, cur.ModRev, stored, prevStored); err != nil {
				return ev, nil, translate("write change log", err)
			}
			obj := Object{Key: r.key, UID: cur.UID, CreateRev: cur.CreateRev, ModRev: rev, Value: value}
			return Event{Type: Modified, Object: obj, PrevValue: cur.Value}, nil, nil
		}

		// Delete: the last state, stamped with the delete revision.
		loc, err := locateRevision(cur.Value)
		if err != nil {
			return ev, nil, fmt.Errorf("delete object: stored value: %w", err)
		}
		value := stampAt(cur.Value, loc, rev)
		stored, err := db.encode(r.key, value)
		if err != nil {
			return ev, nil, err
		}
		if _, err := db.stmts.deleteObject.ExecContext(ctx, k.Resource, ns, k.Name); err != nil {
			return ev, nil, translate("delete object", err)
		}
		if _, err := db.stmts.insertChange.ExecContext(ctx, rev, int64(Deleted), k.Resource, ns, k.Name,
			cur.UID, cur.CreateRev, cur.ModRev, stored, prevStored); err != nil {
			return ev, nil, translate("write change log", err)
		}
		obj := Object{Key: r.key, UID: cur.UID, CreateRev: cur.CreateRev, ModRev: rev, Value: value}
		return Event{Type: Deleted, Object: obj, PrevValue: cur.Value}, nil, nil
	}
	return ev, nil, fmt.Errorf("apply write: unknown op %d", r.op)
}

// SQL of the writer's prepared statements.
const (
	sqlSelectObject = `SELECT uid, create_rev, mod_rev, value FROM objects
WHERE resource = ? AND namespace = ? AND name = ?`
	sqlInsertObject = `INSERT INTO objects (resource, namespace, name, uid, create_rev, mod_rev, value)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqlUpdateObject = `UPDATE objects SET mod_rev = ?, value = ?
WHERE resource = ? AND namespace = ? AND name = ?`
	sqlDeleteObject = `DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?`
	sqlInsertChange = `INSERT INTO changelog
(rev, type, resource, namespace, name, uid, create_rev, prev_mod_rev, value, prev_value)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlSetMeta = `INSERT INTO meta (key, value) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value`
)

// writeStmts are the writer connection's prepared statements.
type writeStmts struct {
	begin, commit, rollback *sql.Stmt
	selectObject            *sql.Stmt
	insertObject            *sql.Stmt
	updateObject            *sql.Stmt
	deleteObject            *sql.Stmt
	insertChange            *sql.Stmt
	setMeta                 *sql.Stmt
	pagesInUse              *sql.Stmt
}

func (s *writeStmts) all() []**sql.Stmt {
	return []**sql.Stmt{&s.begin, &s.commit, &s.rollback, &s.selectObject, &s.insertObject,
		&s.updateObject, &s.deleteObject, &s.insertChange, &s.setMeta, &s.pagesInUse}
}

func (s *writeStmts) prepare(ctx context.Context, conn *sql.Conn) error {
	text := []string{"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", sqlSelectObject, sqlInsertObject,
		sqlUpdateObject, sqlDeleteObject, sqlInsertChange, sqlSetMeta, sqlPagesInUse}
	for i, p := range s.all() {
		stmt, err := conn.PrepareContext(ctx, text[i])
		if err != nil {
			return fmt.Errorf("prepare %q: %w", text[i], err)
		}
		*p = stmt
	}
	return nil
}

func (s *writeStmts) close() error {
	var first error
	for _, p := range s.all() {
		if *p == nil {
			continue
		}
		if err := (*p).Close(); err != nil && first == nil {
			first = err
		}
		*p = nil
	}
	return first
}
