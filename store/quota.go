package store

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// This file is the backend quota (Config.QuotaBytes), etcd's
// --quota-backend-bytes: a bound on the database, apart from how much room
// the file system has.
//
// The size that counts is the database's pages in use: page_count less
// the free pages (freelist_count), times the page size, as SQLite sees it
// on the writer (committed pages still in the WAL included). Writes into
// free pages do not grow the file, so compaction, which frees change-log
// pages, makes room at once, before the vacuum hands them back to the
// file system. The writer measures it after every committed batch and
// every compaction step:
//
//   - at or past the quota the store enters the over-quota state: creates
//     and updates fail with ErrQuotaExceeded (nothing written, no revision
//     taken); deletes, reads, watches and compaction go on. A batch that
//     was already being committed when the quota was reached still
//     commits, so the database may end up to one batch (MaxBatchBytes,
//     plus change-log and index pages) past the quota, as etcd's may;
//   - entering the state wakes the compactor (see RunCompactor), which
//     compacts the change log up to the newest quotaKeepRevs revisions;
//     every later commit while over quota wakes it again, so that the
//     history of what clients delete is compacted too;
//   - the state clears by itself once the pages in use fall below
//     quotaClearPercent of the quota, when deletes and compaction have
//     freed enough. The margin keeps the state from flapping (and the log
//     from filling) while writes and compaction steps move the size back
//     and forth across the quota.

// quotaKeepRevs is how many of the newest revisions a compaction run
// because the database is over its quota keeps: what the watch cache
// holds by default, so that watches served from it are not cut.
const quotaKeepRevs = DefaultWatchCacheEvents

// quotaClearPercent is the share of the quota, in percent, the pages in
// use must fall below for the over-quota state to clear.
const quotaClearPercent = 95

// ErrQuotaExceeded: the database has reached Config.QuotaBytes. A create
// or update that gets it wrote nothing; deletes still commit, and the
// store accepts every write again once deletes and compaction bring the
// database under its quota.
var ErrQuotaExceeded = errors.New("store: database space exceeded: the database has reached its quota")

// sqlPagesInUse is prepared on the writer's connection (writeStmts).
const sqlPagesInUse = `SELECT page_count - freelist_count, page_size
FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()`

// OverQuota reports whether the database has reached Config.QuotaBytes:
// creates and updates fail with ErrQuotaExceeded until it is back under.
func (db *DB) OverQuota() bool { return db.overQuota.Load() }

// checkQuota measures the database's pages in use on the writer's
// connection and enters or leaves the over-quota state. Only the writer
// goroutine (or Open before it starts) calls it.
func (db *DB) checkQuota(ctx context.Context) {
	if db.cfg.QuotaBytes <= 0 {
		return
	}
	var pages, pageSize int64
	if err := db.stmts.pagesInUse.QueryRowContext(ctx).Scan(&pages, &pageSize); err != nil {
		db.log.Debug("measure database size for the quota", zap.Error(err))
		return
	}
	used := pages * pageSize
	db.usedBytes.Store(used)
	over := used >= db.cfg.QuotaBytes
	if !over && db.overQuota.Load() {
		over = used >= db.cfg.QuotaBytes/100*quotaClearPercent
	}
	if over {
		db.wakeCompactor()
	}
	if db.overQuota.Swap(over) == over {
		return
	}
	if over {
		db.stats.quotaExceeded.Add(1)
		db.log.Error("database space exceeded: the database has reached its quota; refusing creates and updates, deletes and compaction go on, and writes resume by themselves when deletes and compaction bring it under the quota",
			zap.Int64("used_bytes", used), zap.Int64("quota_bytes", db.cfg.QuotaBytes))
		return
	}
	db.log.Info("database back under its quota: accepting all writes again",
		zap.Int64("used_bytes", used), zap.Int64("quota_bytes", db.cfg.QuotaBytes))
}

// wakeCompactor wakes RunCompactor to compact for size or quota.
func (db *DB) wakeCompactor() {
	select {
	case db.compactWake <- struct{}{}:
	default:
	}
}
