package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// This file is backup and restore. A backup is a consistent copy of the
// database made by VACUUM INTO in one read transaction: in WAL mode a
// reader never blocks the writer, so a backup may run beside a daemon
// (from another process, or inside it) as well as on a stopped data dir.
// A restore puts a backup in place and moves its revision past any the
// old daemon may have handed out, marking all history before it compacted,
// so that clients' old resourceVersions get 410 Gone instead of a history
// that never happened.

// Backup writes a consistent copy of the database at path to the new
// file to, reading it in one read transaction on a connection of its own
// (it does not take the writer, so writes go on meanwhile; only WAL
// checkpoints cannot pass the snapshot until it ends). to must not exist.
// It returns the revision the copy holds.
func Backup(ctx context.Context, path, to string) (rev int64, err error) {
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	if _, err := os.Lstat(to); err == nil {
		return 0, fmt.Errorf("back up: %s already exists", to)
	}
	d, err := dsn(path, "busy_timeout("+strconv.Itoa(busyTimeout)+")")
	if err != nil {
		return 0, err
	}
	sdb, err := sql.Open("sqlite", d)
	if err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	defer sdb.Close()
	conn, err := sdb.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	defer conn.Close()
	return backupOn(ctx, conn, to)
}

// Backup is the package's Backup run inside a daemon, on a connection of
// its own (the read pool's are query-only, which VACUUM INTO refuses). It
// counts as a read transaction in flight, so the checkpointer does not
// park the writer for a WAL reset the backup's snapshot would hold back.
//
// While the backup's snapshot is open, no checkpoint can copy the frames
// written after it into the database, nor start the WAL again, so the WAL
// file grows by everything written meanwhile. Backup bounds that: it
// watches the WAL and the file system while it copies, and gives up with
// ErrBackupAborted (removing its partial copy, and ending the snapshot)
// once the WAL file has grown past backupWALLimit of the database's size,
// or the file system has less than the space reserve (Config.ReserveBytes,
// at least minFreeBytes) left. Retrying when writes are quieter helps.
func (db *DB) Backup(ctx context.Context, to string) (rev int64, err error) {
	db.backups.Add(1)
	defer db.backups.Add(-1)
	if err := db.readers.enter(ctx); err != nil {
		return 0, err
	}
	defer db.readers.leave()
	sizes := fileSizes(db.cfg.Path)
	limit := backupWALLimit(sizes.DB)
	minFree := max(db.cfg.ReserveBytes, minFreeBytes)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(backupPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if wal := fileSizes(db.cfg.Path).WAL; wal > max(sizes.WAL, limit) {
				cancel(fmt.Errorf("%w: the WAL grew to %d bytes while it ran, past its bound of %d (the database's size, at least %d); retry when writes are quieter",
					ErrBackupAborted, wal, max(sizes.WAL, limit), minBackupWALLimit))
				return
			}
			if free, err := freeBytes(filepath.Dir(db.cfg.Path)); err == nil && free >= 0 && free < minFree {
				cancel(fmt.Errorf("%w: %d bytes left on the file system holding the database, less than the %d the store keeps free",
					ErrBackupAborted, free, minFree))
				return
			}
		}
	}()
	rev, err = Backup(ctx, db.cfg.Path, to)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrBackupAborted) {
		db.log.Warn("backup aborted", zap.Error(cause))
		return 0, fmt.Errorf("back up: %w", cause)
	}
	return rev, err
}

// ErrBackupAborted is DB.Backup's error when it gave up to keep the WAL
// or the file system within bounds.
var ErrBackupAborted = errors.New("store: backup aborted")

// minBackupWALLimit is the least the WAL file may grow to during a
// backup inside the daemon; backupPoll is how often the backup looks.
// Vars so tests can change them.
var (
	minBackupWALLimit int64 = 64 << 20
	backupPoll              = 50 * time.Millisecond
)

// backupWALLimit is the WAL file size at which a backup inside the daemon
// gives up: the database's size (the backup's own copy takes as much), at
// least minBackupWALLimit. So a backup never needs more than about twice
// the database's size free beside it.
func backupWALLimit(dbBytes int64) int64 { return max(dbBytes, minBackupWALLimit) }

// backupOn copies the database conn reads to the file to, and returns
// the copy's revision. The copy is written with owner-only permissions
// and synced before it is reported done.
func backupOn(ctx context.Context, conn *sql.Conn, to string) (int64, error) {
	// The temp name keeps a half-written copy from being taken for a
	// backup; the rename makes it appear whole.
	tmp := to + ".partial"
	_ = os.Remove(tmp)
	stopWriteBack := writeBackWhileWritten(tmp)
	_, err := conn.ExecContext(ctx, "VACUUM INTO ?", tmp)
	stopWriteBack()
	if err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("back up: %w", err)
	}
	rev, err := syncBackup(tmp)
	if err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, to); err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("back up: %w", err)
	}
	if err := syncDir(filepath.Dir(to)); err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	return rev, nil
}

// backupWriteBackInterval is how often writeBackWhileWritten hands the
// copy's new pages to the kernel.
const backupWriteBackInterval = 20 * time.Millisecond

// writeBackWhileWritten writes the file at path back to disk, a window at
// a time, while SQLite writes it, until the returned stop is called. The
// copy is the size of the database: left to the final fsync, hundreds of
// megabytes of dirty pages made the commits' fsyncs of the WAL, on the
// same file system, wait behind them.
func writeBackWhileWritten(path string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var f *os.File
		defer func() {
			if f != nil {
				f.Close()
			}
		}()
		var off int64
		t := time.NewTicker(backupWriteBackInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if f == nil {
				var err error
				if f, err = os.Open(path); err != nil {
					f = nil
					continue
				}
			}
			off = WriteBackFrom(f, off)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// syncBackup restricts the copy at path to its owner, reads its revision
// and fsyncs it.
func syncBackup(path string) (int64, error) {
	if err := os.Chmod(path, 0o600); err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	rev, err := readRev(path)
	if err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	defer f.Close()
	writeBack(f) // what writeBackWhileWritten left, a window at a time
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("back up: sync: %w", err)
	}
	return rev, nil
}

// readRev returns the current revision stored in the database at path,
// max(meta's and the change log's), as Open recovers it; 0 for a file
// that does not exist.
func readRev(path string) (int64, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	d, err := dsn(path, "busy_timeout("+strconv.Itoa(busyTimeout)+")", "query_only(1)")
	if err != nil {
		return 0, err
	}
	sdb, err := sql.Open("sqlite", d)
	if err != nil {
		return 0, fmt.Errorf("read revision: %w", err)
	}
	defer sdb.Close()
	var rev int64
	err = sdb.QueryRowContext(context.Background(), `SELECT MAX(
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	COALESCE((SELECT MAX(rev) FROM changelog), 0))`, metaRev).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("read revision of %s: %w", path, err)
	}
	return rev, nil
}

// RestoreResult is what Restore did.
type RestoreResult struct {
	// BackupRev is the revision the backup held; ReplacedRev that of the
	// database it replaced (0 when there was none).
	BackupRev, ReplacedRev int64
	// Rev is the restored database's revision, also its compaction
	// revision: every resourceVersion handed out before is compacted.
	Rev int64
}

// Restore replaces the database at path (the daemon must be stopped)
// with a copy of the backup from. The restored database's revision is
// max(the backup's, the replaced database's) + bump, and it is marked
// compacted at that revision with an empty change log: no revision handed
// out before the restore (by the daemon that made the backup, or by the
// one whose database is replaced) is ever handed out again, and a watch
// or a continue token from before gets 410 Gone. bump stands for the
// revisions a daemon may have handed out after its database was lost;
// it must not be negative.
func Restore(ctx context.Context, from, path string, bump int64) (RestoreResult, error) {
	var res RestoreResult
	if bump < 0 {
		return res, fmt.Errorf("restore: negative revision bump %d", bump)
	}
	var err error
	if res.BackupRev, err = readRev(from); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	if res.ReplacedRev, err = readRev(path); err != nil {
		// A replaced database too broken to read leaves only bump.
		res.ReplacedRev = 0
	}
	res.Rev = max(res.BackupRev, res.ReplacedRev) + bump
	if res.Rev == 0 {
		res.Rev = 1
	}

	tmp := path + ".restore"
	_ = os.Remove(tmp)
	if err := copyFile(from, tmp); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	if err := markRestored(ctx, tmp, res.Rev); err != nil {
		_ = os.Remove(tmp)
		return res, fmt.Errorf("restore: %w", err)
	}
	// The old WAL and shared-memory files belong to the replaced file:
	// SQLite would apply that WAL to the restored one.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = os.Remove(tmp)
			return res, fmt.Errorf("restore: %w", err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return res, fmt.Errorf("restore: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	return res, nil
}

// markRestored sets the database at path to revision rev, compacted at
// rev, with an empty change log, in one transaction, and checkpoints it
// into the file.
func markRestored(ctx context.Context, path string, rev int64) error {
	d, err := dsn(path, "busy_timeout("+strconv.Itoa(busyTimeout)+")", "journal_mode(WAL)", "synchronous(FULL)")
	if err != nil {
		return err
	}
	sdb, err := sql.Open("sqlite", d)
	if err != nil {
		return err
	}
	defer sdb.Close()
	conn, err := sdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version == 0 || version > len(migrations) {
		return fmt.Errorf("read schema version: %d is not an edgeapi database this binary can open", version)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "DELETE FROM changelog"); err != nil {
		return fmt.Errorf("empty change log: %w", err)
	}
	for _, k := range []string{metaRev, metaScheduledCompactRev, metaFinishedCompactRev} {
		if _, err := tx.ExecContext(ctx, sqlSetMeta, k, rev); err != nil {
			return fmt.Errorf("write %s: %w", k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// copyFile copies from to the new file to, owner-only, and syncs it.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := out.ReadFrom(in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncDir fsyncs the directory dir, so that a rename into it is durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
