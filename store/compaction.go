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

// compactChunk is the most change-log rows one compaction transaction
// deletes, so that writes never wait long behind it (see stepSize). A var
// so tests can make compaction take several steps.
var compactChunk = 500

// vacuumPages is the most free pages one incremental_vacuum step returns
// to the file system (see stepSize): each step moves pages, so a small one
// keeps the writes queued behind it waiting only a few milliseconds.
const vacuumPages = 256

// compactionStepTarget is how long one compaction step should hold the
// writer. On a large database, or one short of CPU, a step of
// compactChunk rows or vacuumPages pages takes several times as long
// (a 256-page vacuum step took 14 ms at the median with 1M rows, and up
// to 130 ms), so the steps adapt (see stepSize).
const compactionStepTarget = 5 * time.Millisecond

// stepSize is the size of the next compaction step, in rows or pages. It
// starts at max/8 (the first vacuum step of a large compaction is the
// slowest: a 256-page one took 64 ms with 1M rows), halves (down to
// max/16) after a step that took more than twice compactionStepTarget and
// doubles (up to max) after one that took less than half of it.
type stepSize struct{ n, max int }

func newStepSize(limit int) stepSize { return stepSize{n: max(limit/8, 1), max: limit} }

// adapt sizes the next step after one that took took.
func (s *stepSize) adapt(took time.Duration) {
	switch {
	case took > 2*compactionStepTarget:
		s.n = max(s.n/2, s.max/16, 1)
	case took < compactionStepTarget/2:
		s.n = min(s.n*2, s.max)
	}
}

// compactionYield is the part of the writer's time compaction steps may
// take: after each step compaction waits (1-compactionYield)/compactionYield
// times as long as the step took, so that on a busy (or CPU-starved)
// daemon writes keep most of the writer, and a large compaction takes
// longer instead of delaying writes. It also paces compaction's I/O: a
// vacuum step writes about four WAL frames per page it moves, and at half
// the writer's time the vacuum of a 1M-row compaction wrote some 50 MiB/s
// to the WAL (and as much again to the database file through the
// checkpoints), which made the commits' fsyncs wait; at a quarter the
// longest write during that compaction fell from 53-69 ms to 45-48 ms,
// and the compaction took 74-79 s instead of 55-61 s.
const compactionYield = 0.25

// yieldAfter waits, after a compaction step that took d, for the writes'
// share of the writer (see compactionYield), or until ctx ends. An
// offline store (CompactOffline) has no writes to yield to.
func (db *DB) yieldAfter(ctx context.Context, d time.Duration) {
	if db.cfg.offline {
		return
	}
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
// The deletion goes in transactions of at most compactChunk rows on the
// writer, between write batches. If ctx ends (or the process dies)
// partway, the deletion resumes at the next Open; the compacted revision
// stays rev.
func (db *DB) Compact(ctx context.Context, rev int64) error {
	if rev > db.Rev() {
		return ErrFutureRev
	}
	scheduled := false
	err := db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
		return db.holds.Compact(rev, func(held int64) error {
			rev = held
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
	chunk := newStepSize(compactChunk)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var n int64
		var took time.Duration
		size := chunk.n
		err := db.compactionStep(ctx, func(ctx context.Context, conn *sql.Conn) error {
			start := time.Now()
			defer func() { took = time.Since(start) }()
			res, err := conn.ExecContext(ctx, sqlCompactChunk, rev, size)
			if err != nil {
				return translate("compact change log", err)
			}
			n, err = res.RowsAffected()
			db.stats.changeLogRows.Add(-n)
			db.checkQuota(ctx)
			return err
		})
		if err != nil {
			return err
		}
		total += n
		if n < int64(size) {
			break
		}
		chunk.adapt(took)
		db.yieldAfter(ctx, took)
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

// vacuum returns free pages to the file system, at most vacuumPages per
// writer job, so the file shrinks after compaction.
func (db *DB) vacuum(ctx context.Context) error {
	pages := newStepSize(vacuumPages)
	for {
		var free int64
		var took time.Duration
		size := pages.n
		err := db.compactionStep(ctx, func(ctx context.Context, conn *sql.Conn) error {
			start := time.Now()
			defer func() { took = time.Since(start) }()
			if err := conn.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
				return translate("read free pages", err)
			}
			if free == 0 {
				return nil
			}
			// PRAGMA takes no parameters; size is an int.
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", size)); err != nil {
				return translate("vacuum", err)
			}
			return nil
		})
		if err != nil || free <= int64(size) {
			return err
		}
		pages.adapt(took)
		db.yieldAfter(ctx, took)
	}
}

// compactionStep runs fn, one step of a compaction's deletion or vacuum,
// on the writer. While the checkpointer resets the WAL it waits, so that
// the writer, paused for the reset, has only the frames of the writes to
// copy (see resetWAL).
func (db *DB) compactionStep(ctx context.Context, fn func(ctx context.Context, conn *sql.Conn) error) error {
	db.compactionSteps.RLock()
	defer db.compactionSteps.RUnlock()
	return db.runOnWriter(ctx, fn)
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
