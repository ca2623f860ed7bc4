package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// This file is backup and restore. A backup is a copy of the database's
// pages read in one read transaction (SQLite's sqlite_dbpage table, which
// reads each page through the pager, so from the transaction's snapshot:
// the database file and the WAL frames committed before it): in WAL mode
// a reader never blocks the writer, so a backup may run beside a daemon
// (from another process, or inside it) as well as on a stopped data dir.
// The copy is the database file as it would be after a checkpoint at the
// snapshot, free pages included, still in WAL mode. A restore puts a
// backup in place and moves its revision past any the old daemon may have
// handed out, marking all history before it compacted, so that clients'
// old resourceVersions get 410 Gone instead of a history that never
// happened.

// Backup writes a consistent copy of the database at path to the new
// file to, reading it in one read transaction on a connection of its own
// (it does not take the writer, so writes go on meanwhile; only WAL
// checkpoints cannot pass the snapshot until it ends). to must not exist.
// It returns the revision the copy holds.
func Backup(ctx context.Context, path, to string) (rev int64, err error) {
	return BackupWith(ctx, path, to, BackupOptions{})
}

// BackupOptions are how Backup writes its copy.
type BackupOptions struct {
	// MaxRate is the most bytes a second the copy is written at; 0 for
	// no bound but the disk's. A bound takes CPU time and disk bandwidth
	// from the daemon's commits more evenly, and holds the snapshot (and
	// the WAL's growth behind it) for longer.
	MaxRate int64
}

// BackupWith is Backup written as opts say.
func BackupWith(ctx context.Context, path, to string, opts BackupOptions) (rev int64, err error) {
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	out, err := CreateBackupFile(to, opts.MaxRate)
	if err != nil {
		return 0, err
	}
	rev, err = backupFrom(ctx, path, out.Start)
	return rev, out.Finish(err)
}

// Backup is BackupStream into the new file to (which must not exist),
// written as Backup writes it.
func (db *DB) Backup(ctx context.Context, to string) (rev int64, err error) {
	out, err := CreateBackupFile(to, 0)
	if err != nil {
		return 0, err
	}
	rev, err = db.BackupStream(ctx, out.Start)
	return rev, out.Finish(err)
}

// BackupStream writes a consistent copy of the database, as Backup writes
// it to a file, to the writer start returns. It reads the copy in one read
// transaction on a connection of its own and calls start once the
// snapshot is taken, with the revision the copy holds and its exact size
// in bytes; then it writes the copy's pages, in order, to the writer, and
// returns the revision. An error after start was called means the writer
// got less than size bytes.
//
// The backup counts as a read transaction in flight, so the checkpointer
// does not park the writer for a WAL reset the backup's snapshot would
// hold back. While the snapshot is open, no checkpoint can copy the frames
// written after it into the database, nor start the WAL again, so the WAL
// file grows by everything written meanwhile; a slow writer makes that
// last longer. BackupStream bounds it: it watches the WAL and the file
// system while it copies, and gives up with ErrBackupAborted (ending the
// snapshot) once the WAL file has grown past backupWALLimit of the
// database's size, or the file system has less than the space reserve
// (Config.ReserveBytes, at least minFreeBytes) left. Retrying when writes
// are quieter helps.
func (db *DB) BackupStream(ctx context.Context, start func(rev, size int64) (io.Writer, error)) (rev int64, err error) {
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
	rev, err = backupFrom(ctx, db.cfg.Path, start)
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
// gives up: the database's size (a backup written to the same file system
// takes as much), at least minBackupWALLimit. So a backup never needs more
// than about twice the database's size free beside it.
func backupWALLimit(dbBytes int64) int64 { return max(dbBytes, minBackupWALLimit) }

// backupFrom opens the database at path on a connection of its own, takes
// a snapshot, calls start with its revision and size, and writes its
// pages to the writer start returns.
func backupFrom(ctx context.Context, path string, start func(rev, size int64) (io.Writer, error)) (int64, error) {
	d, err := dsn(path, "busy_timeout("+strconv.Itoa(busyTimeout)+")", "query_only(1)")
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
	s, err := beginSnapshot(ctx, conn)
	if err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	defer s.tx.Rollback() //nolint:errcheck // a read transaction
	w, err := start(s.rev, s.size())
	if err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	if err := s.copyTo(ctx, w); err != nil {
		return 0, fmt.Errorf("back up: %w", err)
	}
	return s.rev, nil
}

// backupSnapshot is one read transaction over a whole database, whose
// pages a backup copies.
type backupSnapshot struct {
	tx *sql.Tx
	// rev is the revision the snapshot holds; pages and pageSize are its
	// page count and page size.
	rev, pages, pageSize int64
}

// beginSnapshot begins a read transaction on conn and reads the
// snapshot's revision and size in it.
func beginSnapshot(ctx context.Context, conn *sql.Conn) (*backupSnapshot, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	s := &backupSnapshot{tx: tx}
	// The first read takes the snapshot; the rest read the same one.
	err = tx.QueryRowContext(ctx, sqlReadRev, metaRev).Scan(&s.rev)
	if err != nil {
		err = fmt.Errorf("read revision: %w", err)
	} else if err = tx.QueryRowContext(ctx, "PRAGMA page_count").Scan(&s.pages); err != nil {
		err = fmt.Errorf("read page count: %w", err)
	} else if err = tx.QueryRowContext(ctx, "PRAGMA page_size").Scan(&s.pageSize); err != nil {
		err = fmt.Errorf("read page size: %w", err)
	}
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return s, nil
}

// size is the copy's size in bytes.
func (s *backupSnapshot) size() int64 { return s.pages * s.pageSize }

// backupChunk is how much of the copy copyTo hands to its writer at a
// time.
const backupChunk = 256 << 10 // bytes

// copyTo writes the snapshot's pages, 1 to s.pages, to w. A page
// sqlite_dbpage does not return (the lock-byte page of a database past
// 1 GiB, which SQLite never uses) is written as zeros.
func (s *backupSnapshot) copyTo(ctx context.Context, w io.Writer) error {
	rows, err := s.tx.QueryContext(ctx, "SELECT pgno, data FROM sqlite_dbpage")
	if err != nil {
		return fmt.Errorf("read pages: %w", err)
	}
	defer rows.Close()
	buf := make([]byte, 0, backupChunk+int(s.pageSize))
	var written int64
	flush := func() error {
		n, err := w.Write(buf)
		written += int64(n)
		buf = buf[:0]
		return err
	}
	next := int64(1) // the page buf takes next
	zeros := func(to int64) {
		for ; next < to; next++ {
			buf = append(buf, make([]byte, s.pageSize)...)
		}
	}
	for rows.Next() {
		var pgno int64
		var data sql.RawBytes
		if err := rows.Scan(&pgno, &data); err != nil {
			return fmt.Errorf("read pages: %w", err)
		}
		if pgno > s.pages {
			break
		}
		zeros(pgno)
		switch int64(len(data)) {
		case s.pageSize:
			buf = append(buf, data...)
		case 0:
			buf = append(buf, make([]byte, s.pageSize)...)
		default:
			return fmt.Errorf("read page %d: %d bytes, want %d", pgno, len(data), s.pageSize)
		}
		next = pgno + 1
		if len(buf) >= backupChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read pages: %w", err)
	}
	zeros(s.pages + 1)
	if err := flush(); err != nil {
		return err
	}
	if written != s.size() {
		return fmt.Errorf("copied %d bytes of %d", written, s.size())
	}
	return nil
}

// BackupFile is a backup being written to a file, through a PacedWriter:
// to.partial, owner-only, until it is whole, so that a half-written copy
// is not taken for a backup; then synced and renamed to to. Backups made
// here and the copies `edgeapi backup` fetches from a daemon are written
// with it.
type BackupFile struct {
	to, tmp string
	maxRate int64
	f       *os.File
	w       *PacedWriter
}

// CreateBackupFile prepares the backup file to, written at most maxRate
// bytes a second (0: no bound); it refuses a file to that exists.
// Nothing is created before Start.
func CreateBackupFile(to string, maxRate int64) (*BackupFile, error) {
	if _, err := os.Lstat(to); err == nil {
		return nil, fmt.Errorf("back up: %s already exists", to)
	}
	return &BackupFile{to: to, tmp: to + ".partial", maxRate: maxRate}, nil
}

// Start creates to.partial and returns its writer; it has the signature of
// BackupStream's start.
func (b *BackupFile) Start(_, _ int64) (io.Writer, error) {
	_ = os.Remove(b.tmp)
	f, err := os.OpenFile(b.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	b.f, b.w = f, NewPacedWriter(f, b.maxRate)
	return b.w, nil
}

// Finish ends the copy that ended with err: on success it syncs the file,
// renames it to to and syncs the directory; otherwise, or if that fails,
// it removes the file. It returns the first error.
func (b *BackupFile) Finish(err error) error {
	if b.f == nil {
		return err
	}
	if err == nil {
		err = b.w.Sync()
	}
	if cerr := b.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("back up: %w", cerr)
	}
	if err == nil {
		if rerr := os.Rename(b.tmp, b.to); rerr != nil {
			err = fmt.Errorf("back up: %w", rerr)
		}
	}
	if err != nil {
		_ = os.Remove(b.tmp)
		return err
	}
	if err := syncDir(filepath.Dir(b.to)); err != nil {
		return fmt.Errorf("back up: %w", err)
	}
	return nil
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
	err = sdb.QueryRowContext(context.Background(), sqlReadRev, metaRev).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("read revision of %s: %w", path, err)
	}
	return rev, nil
}

// sqlReadRev reads a database's current revision: max(meta's and the
// change log's), as Open recovers it.
const sqlReadRev = `SELECT MAX(
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	COALESCE((SELECT MAX(rev) FROM changelog), 0))`

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
