package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// This file is compaction: deleting change-log rows at or below a revision
// so the log does not grow forever. It runs in two phases recorded in meta,
// as etcd's mvcc does: the scheduled revision is written first (from then
// on reads below it fail with ErrCompacted), then rows are deleted in
// bounded transactions on the writer, between write batches, and last the
// finished revision is written. A crash in between leaves scheduled >
// finished, and Open resumes the deletion.

// compactChunk is how many change-log rows one compaction transaction
// deletes, so that writes never wait long behind it. A var so tests can
// make compaction take several steps.
var compactChunk = 500

// vacuumPages is how many free pages one incremental_vacuum step returns
// to the file system: each step moves pages, so a small one keeps the
// writes queued behind it waiting only a few milliseconds.
const vacuumPages = 256

// compactionYield is the part of the writer's time compaction steps may
// take: after each step compaction waits (1-compactionYield)/compactionYield
// times as long as the step took, so that on a busy (or CPU-starved)
// daemon writes keep most of the writer, and a large compaction takes
// longer instead of delaying writes.
const compactionYield = 0.5

// yieldAfter waits, after a compaction step that took d, for the writes'
// share of the writer (see compactionYield), or until ctx ends.
func yieldAfter(ctx context.Context, d time.Duration) {
	t := time.NewTimer(time.Duration(float64(d) * (1 - compactionYield) / compactionYield))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

const sqlCompactChunk = `DELETE FROM changelog WHERE rev IN (
	SELECT rev FROM changelog WHERE rev <= ? ORDER BY rev LIMIT ?)`

// sqlFinishCompaction never moves the finished revision backwards.
const sqlFinishCompaction = `INSERT INTO meta (key, value) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)`

// Compact deletes the change-log rows at or below rev. From the moment it
// has recorded rev, CompactedRev is rev: Changes after a revision below rev
// and List at a revision below rev fail with ErrCompacted. A rev at or
// below the compacted revision does nothing; one above the current
// revision is ErrFutureRev.
//
// The deletion goes in transactions of compactChunk rows on the writer,
// between write batches. If ctx ends (or the process dies) partway, the
// deletion resumes at the next Open; the compacted revision stays rev.
func (db *DB) Compact(ctx context.Context, rev int64) error {
	if rev > db.Rev() {
		return ErrFutureRev
	}
	scheduled := false
	err := db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
		if rev <= db.compactedRev.Load() {
			return nil
		}
		if _, err := db.stmts.setMeta.ExecContext(ctx, metaScheduledCompactRev, rev); err != nil {
			return translate("schedule compaction", err)
		}
		db.compactedRev.Store(rev)
		scheduled = true
		return nil
	})
	if err != nil || !scheduled {
		return err
	}
	return db.finishCompaction(ctx, rev)
}

// finishCompaction deletes the change-log rows at or below rev in chunks,
// records rev as finished and returns freed pages to the file system.
func (db *DB) finishCompaction(ctx context.Context, rev int64) error {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var n int64
		var took time.Duration
		err := db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
			start := time.Now()
			defer func() { took = time.Since(start) }()
			res, err := conn.ExecContext(ctx, sqlCompactChunk, rev, compactChunk)
			if err != nil {
				return translate("compact change log", err)
			}
			n, err = res.RowsAffected()
			db.stats.changeLogRows.Add(-n)
			return err
		})
		if err != nil {
			return err
		}
		total += n
		if n < int64(compactChunk) {
			break
		}
		yieldAfter(ctx, took)
	}
	err := db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, sqlFinishCompaction, metaFinishedCompactRev, rev); err != nil {
			return translate("finish compaction", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.log.Info("compacted change log", zap.Int64("rev", rev), zap.Int64("rows", total))
	return db.vacuum(ctx)
}

// vacuum returns free pages to the file system, vacuumPages per writer
// job, so the file shrinks after compaction.
func (db *DB) vacuum(ctx context.Context) error {
	for {
		var free int64
		var took time.Duration
		err := db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
			start := time.Now()
			defer func() { took = time.Since(start) }()
			if err := conn.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
				return translate("read free pages", err)
			}
			if free == 0 {
				return nil
			}
			// PRAGMA takes no parameters; vacuumPages is a constant.
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", vacuumPages)); err != nil {
				return translate("vacuum", err)
			}
			return nil
		})
		if err != nil || free <= vacuumPages {
			return err
		}
		yieldAfter(ctx, took)
	}
}

// resumeCompaction restarts, in the background, a compaction that was
// scheduled but not finished when the store last closed.
func (db *DB) resumeCompaction(ctx context.Context, finished int64) {
	rev := db.compactedRev.Load()
	if rev <= finished {
		return
	}
	db.log.Info("resuming compaction", zap.Int64("rev", rev), zap.Int64("finished_rev", finished))
	db.bg.Add(1)
	go func() {
		defer db.bg.Done()
		err := db.finishCompaction(ctx, rev)
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
			db.log.Error("resume compaction", zap.Int64("rev", rev), zap.Error(err))
		}
	}()
}
