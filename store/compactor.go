package store

import (
	"context"
	"database/sql"
	"strconv"
	"time"
)

// walIdleCheck is how often the compactor looks for an idle store whose
// WAL it can truncate. A var so tests can shorten it.
var walIdleCheck = 10 * time.Second

// RunCompactor compacts the change log every interval until ctx ends. Each
// run compacts what is older than one interval: everything up to the
// revision that was current at the previous run, as kube-apiserver's
// --etcd-compaction-interval does. Independently, when no write has
// happened for walIdleCheck, it checkpoints and truncates the WAL so the
// WAL file does not stay large. Failures are logged and retried at the
// next run; the compactor never stops for good.
//
// It also compacts, without waiting for the interval, whenever a commit
// takes the change log past Config.MaxChangeLogRows: then it compacts up
// to the newest MaxChangeLogRows/2 revisions (sizeCompactRev), so that a
// burst of writes, or a device that restarts before any interval has
// passed, cannot fill the disk with history.
func (db *DB) RunCompactor(ctx context.Context, interval time.Duration) {
	compactTick := time.NewTicker(interval)
	defer compactTick.Stop()
	idleTick := time.NewTicker(walIdleCheck)
	defer idleTick.Stop()
	prevRev := db.Rev()
	idleRev, truncatedAt := db.Rev(), int64(-1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-compactTick.C:
			cur := db.Rev()
			if prevRev > db.CompactedRev() {
				start := time.Now()
				if err := db.Compact(ctx, prevRev); err != nil && ctx.Err() == nil {
					db.log.Sugar().Warnw("compact change log failed; retrying at the next run", "rev", prevRev, "error", err)
				} else if err == nil {
					db.observeCompaction(CompactInterval, time.Since(start))
					st := db.Stats()
					db.log.Sugar().Infow("compacted change log", "rev", prevRev, "took", time.Since(start),
						"changelog_rows", st.ChangeLogRows, "db_bytes", st.DBBytes, "wal_bytes", st.WALBytes)
				}
			}
			prevRev = cur
		case <-db.compactWake:
			db.compactForSize(ctx)
		case <-idleTick.C:
			cur := db.Rev()
			if cur == idleRev && cur != truncatedAt {
				if err := db.truncateWAL(ctx); err != nil && ctx.Err() == nil {
					db.log.Sugar().Debugw("truncate wal", "error", err)
				} else if err == nil {
					truncatedAt = cur
				}
			}
			idleRev = cur
		}
	}
}

// truncateWAL checkpoints the WAL into the database and truncates it, on
// the writer between batches. The daemon's readers are short transactions
// (watchers are served from memory), but a reader in another process (an
// `edgeapi backup` beside the daemon) may hold its snapshot for seconds,
// and a TRUNCATE checkpoint waits for every reader: so it waits at most
// truncateBusyTimeout, not the writer's busy timeout, and a truncation
// that finds a reader in its way is left for the next one. (Measured: with
// the writer's 5 s timeout, a write queued behind it waited 5.0 s.)
func (db *DB) truncateWAL(ctx context.Context) error {
	return db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.Itoa(truncateBusyTimeout)); err != nil {
			return translate("checkpoint wal", err)
		}
		var busy, logPages, ckptPages int
		err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &ckptPages)
		if _, rerr := conn.ExecContext(context.Background(), "PRAGMA busy_timeout = "+strconv.Itoa(busyTimeout)); err == nil && rerr != nil {
			err = rerr
		}
		if err != nil {
			return translate("checkpoint wal", err)
		}
		return nil
	})
}

// sizeCompactRev is the revision a size-triggered compaction compacts up
// to: the current one less MaxChangeLogRows/2, since every revision is
// one change-log row. Over the quota (see quota.go) it keeps only the newest quotaKeepRevs.
func (db *DB) sizeCompactRev() int64 {
	if db.overQuota.Load() {
		keep := int64(quotaKeepRevs)
		if db.cfg.MaxChangeLogRows > 0 {
			keep = min(keep, db.cfg.MaxChangeLogRows/2)
		}
		return db.Rev() - keep
	}
	return db.Rev() - db.cfg.MaxChangeLogRows/2
}

// compactForSize compacts the change log down to about half its bound,
// if it is still past it.
func (db *DB) compactForSize(ctx context.Context) {
	rows := db.stats.changeLogRows.Load()
	rev := db.sizeCompactRev()
	oversized := db.cfg.MaxChangeLogRows > 0 && rows > db.cfg.MaxChangeLogRows
	if (!oversized && !db.overQuota.Load()) || rev <= db.CompactedRev() {
		return
	}
	start, before := time.Now(), db.CompactedRev()
	if err := db.Compact(ctx, rev); err != nil {
		if ctx.Err() == nil {
			db.log.Sugar().Warnw("compact the oversized change log failed; retrying at the next commit or run", "rev", rev, "rows", rows, "error", err)
		}
		return
	}
	if db.CompactedRev() == before {
		return // a reader's Hold kept it back
	}
	db.stats.sizeCompactions.Add(1)
	trigger := CompactSize
	if !oversized {
		trigger = CompactQuota
	}
	db.observeCompaction(trigger, time.Since(start))
	st := db.Stats()
	db.log.Sugar().Infow("compacted the change log for its size", "rev", rev, "rows_before", rows, "over_quota", db.overQuota.Load(),
		"max_rows", db.cfg.MaxChangeLogRows, "took", time.Since(start),
		"changelog_rows", st.ChangeLogRows, "db_bytes", st.DBBytes, "wal_bytes", st.WALBytes)
}

// truncateBusyTimeout is how long truncateWAL waits for readers, in
// milliseconds.
const truncateBusyTimeout = 10
