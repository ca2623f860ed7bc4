package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
)

// This file keeps a full file system from taking away the means to free
// space, as etcd's NOSPACE alarm does.
//
// Deletes need space too: in WAL mode every change appends frames to the
// WAL, and a delete adds a change-log row. So the store keeps a reserve: a
// file of Config.ReserveBytes beside the database (Path+"-reserve"). When a
// commit fails because the file system is full (SQLITE_FULL), the writer
// enters the no-space state:
//
//   - it removes the reserve, which gives the WAL room again;
//   - from then on, creates and updates fail their check with ErrNoSpace
//     (nothing written, no revision taken), and deletes go on, so clients
//     can free space; the batch that hit the full disk is retried that way;
//   - the space monitor, every spaceCheckInterval, compacts the change log
//     up to the current revision (a delete's change-log row holds the
//     deleted object, so without compaction deletes would only grow the
//     file), returns free pages to the file system and truncates the WAL;
//     then, when the file system has room for the reserve and as much again,
//     it recreates the reserve and leaves the state.
//
// Reads and watches are not affected. Nothing acknowledged is lost: a
// commit that failed was rolled back and answered with the error.

// reserveSuffix names the reserve file after the database file.
const reserveSuffix = "-reserve"

// spaceCheckInterval is how often the space monitor works while the store
// is in the no-space state. A var so tests can shorten it.
var spaceCheckInterval = time.Second

// minFreeBytes is the room the monitor asks for before it leaves the
// no-space state when the store keeps no reserve.
const minFreeBytes = 1 << 20

func (db *DB) reservePath() string { return db.cfg.Path + reserveSuffix }

// NoSpace reports whether the store is in the no-space state: creates and
// updates fail with ErrNoSpace until the space monitor has found room.
func (db *DB) NoSpace() bool { return db.noSpace.Load() }

// prepareReserve runs at Open, before SQLite opens the database: it removes
// the reserve, so that opening and recovering the database have its room,
// and returns a function, for after the database is open, that recreates it
// if the file system has room for it and as much again, or otherwise puts
// the store in the no-space state.
func (db *DB) prepareReserve() (after func(), err error) {
	if err := db.releaseReserve(); err != nil {
		return nil, err
	}
	return func() {
		if err := db.tryRecover(); err != nil {
			db.noSpace.Store(true)
			db.stats.noSpaceEntered.Add(1)
			db.log.Error("file system holding the database is full at start; refusing creates and updates until space is freed",
				zap.String("dir", filepath.Dir(db.cfg.Path)), zap.Error(err))
			db.wakeSpaceMonitor()
		}
	}, nil
}

// releaseReserve removes the reserve file, if there is one.
func (db *DB) releaseReserve() error {
	err := os.Remove(db.reservePath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove space reserve: %w", err)
	}
	return nil
}

// makeReserve creates the reserve file with ReserveBytes of allocated
// blocks. On failure it leaves no reserve behind.
func (db *DB) makeReserve() error {
	if db.cfg.ReserveBytes <= 0 {
		return nil
	}
	path := db.reservePath()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, dbFileMode)
	if err != nil {
		return fmt.Errorf("create space reserve: %w", err)
	}
	err = allocate(f, db.cfg.ReserveBytes)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("create space reserve: %w", err)
	}
	return nil
}

// enterNoSpace puts the store in the no-space state after cause, a commit
// that failed with ErrNoSpace. Only the writer goroutine calls it.
func (db *DB) enterNoSpace(cause error) {
	if db.noSpace.Swap(true) {
		return
	}
	db.stats.noSpaceEntered.Add(1)
	rerr := db.releaseReserve()
	db.log.Error("file system holding the database is full: refusing creates and updates; deletes and compaction go on, and writes resume by themselves when space is freed",
		zap.String("dir", filepath.Dir(db.cfg.Path)), zap.Int64("reserve_bytes", db.cfg.ReserveBytes),
		zap.NamedError("cause", cause), zap.NamedError("release_reserve", rerr))
	db.wakeSpaceMonitor()
}

func (db *DB) wakeSpaceMonitor() {
	select {
	case db.spaceWake <- struct{}{}:
	default:
	}
}

// runSpaceMonitor is the goroutine that frees space and leaves the
// no-space state, until ctx ends.
func (db *DB) runSpaceMonitor(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-db.spaceWake:
		}
		tick := time.NewTicker(spaceCheckInterval)
		for db.noSpace.Load() {
			db.freeSpace(ctx)
			if err := db.tryRecover(); err == nil {
				db.noSpace.Store(false)
				db.log.Info("space freed on the file system holding the database: accepting all writes again",
					zap.String("dir", filepath.Dir(db.cfg.Path)))
				break
			}
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
			}
		}
		tick.Stop()
	}
}

// freeSpace compacts the change log up to the current revision, returns
// free pages to the file system and truncates the WAL. Failures are
// logged at debug level: on a full disk some are expected, and the next
// round tries again.
func (db *DB) freeSpace(ctx context.Context) {
	if rev := db.Rev(); rev > db.CompactedRev() {
		if err := db.Compact(ctx, rev); err != nil {
			db.log.Debug("compact to free space", zap.Int64("rev", rev), zap.Error(err))
		} else {
			db.log.Warn("compacted the whole change log to free space; watches and lists from before it get 410 Gone",
				zap.Int64("rev", rev))
		}
	}
	if err := db.vacuum(ctx); err != nil {
		db.log.Debug("vacuum to free space", zap.Error(err))
	}
	if err := db.truncateWAL(ctx); err != nil {
		db.log.Debug("truncate wal to free space", zap.Error(err))
	}
}

// tryRecover recreates the reserve when the file system has room for it
// and as much again (minFreeBytes without a reserve).
func (db *DB) tryRecover() error {
	want := int64(minFreeBytes)
	if db.cfg.ReserveBytes > 0 {
		want = 2 * db.cfg.ReserveBytes
	}
	free, err := freeBytes(filepath.Dir(db.cfg.Path))
	if err != nil {
		return err
	}
	if free >= 0 && free < want {
		return fmt.Errorf("%d bytes free, want %d", free, want)
	}
	return db.makeReserve()
}

// writeZeros writes size zero bytes to f from its start.
func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 64<<10)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	return nil
}
