package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// This file is what the store tells its Observer (the daemon's metrics,
// which the store does not import) and the object counts it keeps per
// resource.

// Op is a kind of store request, for Observer.ObserveRequest.
type Op uint8

// The requests observed. Their names (Op.String) are kube-apiserver's
// etcd operations where one corresponds.
const (
	// OpGet is a Get that the object cache did not answer: a read from
	// SQLite (kube-apiserver's "get").
	OpGet Op = iota
	// OpList is a List ("list").
	OpList
	// OpCreate, OpUpdate and OpDelete are writes, from the call to the
	// commit's answer ("create", "update", "delete").
	OpCreate
	OpUpdate
	OpDelete
	// OpChanges is a read of the change log (Changes, ChangeKeys) by a
	// watch catching up, or a controller: it spans every resource.
	OpChanges
	// NumOps is the number of Ops.
	NumOps
)

var opNames = [NumOps]string{"get", "list", "create", "update", "delete", "changes"}

// String is the operation label: kube-apiserver's name where one exists.
func (o Op) String() string {
	if o < NumOps {
		return opNames[o]
	}
	return "unknown"
}

// CompactionTrigger is why a compaction ran, for
// Observer.ObserveCompaction.
type CompactionTrigger uint8

const (
	// CompactInterval is RunCompactor's periodic run.
	CompactInterval CompactionTrigger = iota
	// CompactSize is a run because the change log outgrew
	// Config.MaxChangeLogRows.
	CompactSize
	// CompactQuota is a run because the database reached
	// Config.QuotaBytes.
	CompactQuota
	// NumCompactionTriggers is the number of triggers.
	NumCompactionTriggers
)

var triggerNames = [NumCompactionTriggers]string{"interval", "size", "quota"}

// String is the trigger label.
func (t CompactionTrigger) String() string {
	if t < NumCompactionTriggers {
		return triggerNames[t]
	}
	return "unknown"
}

// Observer receives the store's timings, for metrics. Every method runs
// on a request's or the writer's path: it must return at once, and
// should not allocate.
type Observer interface {
	// ObserveRequest: one request op on resource (a Key.Resource; ""
	// for OpChanges) took d; failed reports a failure of the store (an
	// error other than its answers such as ErrNotFound or ErrConflict).
	ObserveRequest(op Op, resource string, d time.Duration, failed bool)
	// ObserveCommit: one group-commit transaction of writes writes took
	// total, from BEGIN to the end of COMMIT, of which commit in the
	// COMMIT statement (writing the WAL frames and, with
	// synchronous=FULL, the fsync).
	ObserveCommit(writes int, total, commit time.Duration)
	// ObserveCompaction: one compaction, which trigger ran, took d.
	ObserveCompaction(trigger CompactionTrigger, d time.Duration)
}

// observeSince tells the Observer, if any, that op on resource started
// at start and ended with err.
func (db *DB) observeSince(op Op, resource string, start time.Time, err error) {
	if o := db.cfg.Observer; o != nil {
		o.ObserveRequest(op, resource, time.Since(start), failed(err))
	}
}

// failed reports whether err is a failure of the store rather than one
// of its answers: not found, exists, conflict, compacted, a revision not
// yet there, or a value it cannot take. Quota and no-space refusals,
// cancelled contexts and driver errors are failures (etcd's client
// reports each as an error too).
func failed(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrExists), errors.Is(err, ErrConflict),
		errors.Is(err, ErrCompacted), errors.Is(err, ErrFutureRev), errors.Is(err, ErrTooLarge),
		errors.Is(err, ErrInvalidObject):
		return false
	}
	return true
}

// observeCompaction tells the Observer, if any, that a compaction which
// trigger ran took d.
func (db *DB) observeCompaction(trigger CompactionTrigger, d time.Duration) {
	if o := db.cfg.Observer; o != nil {
		o.ObserveCompaction(trigger, d)
	}
}

// objectCounts is the number of objects per resource: counted once in
// the background after Open (counting a large table takes a while, and
// Open does not read the objects), and from then on kept by the writer.
//
// The writer adds each committed batch's creates and deletes to live
// while it holds mu, around COMMIT; the counter takes its read snapshot
// while it holds mu too, and copies live then. So the snapshot's counts
// plus what live gained since make the exact count.
type objectCounts struct {
	// mu guards live and base, and orders the writer's COMMIT with the
	// start of the counting snapshot.
	mu sync.Mutex
	// live is the net creates less deletes per resource since Open.
	live map[string]int64
	// base is the snapshot's count less live at the snapshot: the
	// count is base+live. Nil until counted.
	base map[string]int64
	// counted is set once base is.
	counted atomic.Bool
}

// applyLocked adds a committed batch's creates and deletes; the caller
// holds mu.
func (c *objectCounts) applyLocked(events []Event) {
	if c.live == nil {
		c.live = make(map[string]int64)
	}
	for i := range events {
		switch events[i].Type {
		case Added:
			c.live[events[i].Object.Key.Resource]++
		case Deleted:
			c.live[events[i].Object.Key.Resource]--
		}
	}
}

// countHook, when set (by tests), runs in countObjects with afterSnapshot
// false before it takes its snapshot, and true after, before it counts.
var countHook func(afterSnapshot bool)

const sqlCountObjects = `SELECT resource, COUNT(*) FROM objects GROUP BY resource`

// countObjects counts the objects per resource in one read snapshot and
// sets the base of the counts. It runs once, in the background, after
// Open.
func (db *DB) countObjects(ctx context.Context) error {
	c := &db.objects
	if err := db.readers.enter(ctx); err != nil {
		return err
	}
	defer db.readers.leave()
	tx, err := db.readDB.BeginTx(ctx, nil)
	if err != nil {
		return translate("count objects", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to lose
	if countHook != nil {
		countHook(false)
	}
	// The snapshot starts at the transaction's first read: take it
	// while no commit is between its COMMIT and its counts.
	c.mu.Lock()
	var rev int64
	err = tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM meta WHERE key = ?), 0)`, metaRev).Scan(&rev)
	liveAt := make(map[string]int64, len(c.live))
	for r, n := range c.live {
		liveAt[r] = n
	}
	c.mu.Unlock()
	if err != nil {
		return translate("count objects", err)
	}
	if countHook != nil {
		countHook(true)
	}
	rows, err := tx.QueryContext(ctx, sqlCountObjects)
	if err != nil {
		return translate("count objects", err)
	}
	defer rows.Close()
	base := make(map[string]int64)
	for rows.Next() {
		var res string
		var n int64
		if err := rows.Scan(&res, &n); err != nil {
			return translate("count objects", err)
		}
		base[res] = n
	}
	if err := rows.Err(); err != nil {
		return translate("count objects", err)
	}
	for r, n := range liveAt {
		base[r] -= n
	}
	c.mu.Lock()
	c.base = base
	c.counted.Store(true)
	c.mu.Unlock()
	return nil
}

// startCountingObjects counts the objects in the background, retrying
// after a failure until the store closes.
func (db *DB) startCountingObjects(ctx context.Context) {
	db.bg.Add(1)
	go func() {
		defer db.bg.Done()
		for {
			err := db.countObjects(ctx)
			if err == nil || ctx.Err() != nil {
				return
			}
			db.log.Sugar().Warnw("count objects; retrying", "error", err)
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// ObjectCounts calls fn with the number of stored objects of each
// resource that has or had objects since Open (a resource whose objects
// were all deleted reports 0), and returns true; or returns false
// without calling fn while the first count, which runs in the background
// after Open, is not done. fn runs on a copy: it may take its time.
func (db *DB) ObjectCounts(fn func(resource string, n int64)) bool {
	c := &db.objects
	if !c.counted.Load() {
		return false
	}
	type count struct {
		resource string
		n        int64
	}
	c.mu.Lock()
	counts := make([]count, 0, len(c.base)+len(c.live))
	for r, n := range c.base {
		counts = append(counts, count{r, n + c.live[r]})
	}
	for r, n := range c.live {
		if _, ok := c.base[r]; !ok {
			counts = append(counts, count{r, n})
		}
	}
	c.mu.Unlock()
	for _, rc := range counts {
		fn(rc.resource, rc.n)
	}
	return true
}
