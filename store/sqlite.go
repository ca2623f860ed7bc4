package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"

	"modernc.org/sqlite" // also registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// This file holds what is specific to SQLite and its driver: connection
// strings, the pragmas every connection gets, and the translation of driver
// errors at the store's boundary.

// busyTimeout is how long a connection waits for a lock another connection
// (or process) holds before failing with SQLITE_BUSY.
const busyTimeout = 5000 // milliseconds

// journalSizeLimit caps the WAL file left on disk after a checkpoint resets
// it, so that one large batch does not keep a large file forever.
const journalSizeLimit = 64 << 20 // bytes

// writerDSN is the connection string of the one writer connection.
//
// The driver runs busy_timeout first, then the _pragma list in lexical
// order: auto_vacuum (which must precede the first table, and journal_mode,
// to take effect on a new file), cache_size, journal_mode, journal_size_limit,
// synchronous, wal_autocheckpoint. synchronous=FULL fsyncs the WAL on every
// commit: an acknowledged write survives power loss, which NORMAL does not
// promise. wal_autocheckpoint=0 keeps checkpoints out of the writer's
// commits: the checkpointer runs them (see checkpoint.go).
// _txlock=immediate makes BEGIN take the write lock at once, so a busy
// database fails at BEGIN rather than at the first write. noSync
// (Config.UnsafeNoSync, tests only) makes it synchronous=OFF. cacheBytes
// is its page cache (Config.SQLiteCacheBytes).
func writerDSN(path string, noSync bool, cacheBytes int) (string, error) {
	return dsn(path,
		"busy_timeout("+strconv.Itoa(busyTimeout)+")",
		"auto_vacuum(INCREMENTAL)",
		cacheSizePragma(cacheBytes),
		"journal_mode(WAL)",
		"journal_size_limit("+strconv.Itoa(journalSizeLimit)+")",
		synchronousPragma(noSync),
		"wal_autocheckpoint(0)",
	)
}

// checkpointerDSN is the connection string of the checkpointer's
// connection. Its synchronous=FULL makes a checkpoint fsync the database
// file before SQLite may reset the WAL, so no committed frame is
// overwritten before the database file holds it durably. Its busy timeout
// is short: the writes wait for its RESTART checkpoints, which should find
// no reader or writer in their way.
func checkpointerDSN(path string, noSync bool, cacheBytes int) (string, error) {
	return dsn(path,
		"busy_timeout("+strconv.Itoa(checkpointBusyTimeout)+")",
		cacheSizePragma(cacheBytes),
		synchronousPragma(noSync),
	)
}

// synchronousPragma is synchronous=FULL, or OFF for Config.UnsafeNoSync.
func synchronousPragma(noSync bool) string {
	if noSync {
		return "synchronous(OFF)"
	}
	return "synchronous(FULL)"
}

// readerDSN is the connection string of the read pool. query_only makes
// any write through these connections fail; mmap lets list scans read
// pages from the page cache without a read system call each; mmapBytes
// is Config.SQLiteMmapBytes, cacheBytes Config.SQLiteCacheBytes.
func readerDSN(path string, cacheBytes, mmapBytes int) (string, error) {
	return dsn(path,
		"busy_timeout("+strconv.Itoa(busyTimeout)+")",
		cacheSizePragma(cacheBytes),
		"mmap_size("+strconv.Itoa(mmapBytes)+")",
		"query_only(1)",
	)
}

// DefaultSQLiteMmapBytes is the most of the database file a read
// connection maps (Config.SQLiteMmapBytes). Mapped pages count toward the
// daemon's RSS once touched, so it is kept small: 32 MiB reads a
// 10k-object list as fast as 256 MiB did, while a full scan of 100k
// objects (the garbage collector's start-up resync) no longer adds the
// whole file to RSS.
const DefaultSQLiteMmapBytes = 32 << 20 // bytes

// DefaultSQLiteCacheBytes is each connection's page cache
// (Config.SQLiteCacheBytes): SQLite's own default, cache_size=-2000.
const DefaultSQLiteCacheBytes = 2000 << 10 // bytes

// cacheSizePragma sets a connection's page cache to about bytes. SQLite
// allocates it outside the Go heap (modernc's libc maps its own memory),
// so Go's soft memory limit does not see it.
func cacheSizePragma(bytes int) string {
	// A negative cache_size is in KiB rather than pages.
	return "cache_size(-" + strconv.Itoa(max(bytes>>10, 1)) + ")"
}

func dsn(path string, pragmas ...string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolve path %q: %w", path, err)
	}
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	// url.URL renders "file:///abs/path"; SQLite accepts that form and
	// decodes %-escapes in the path.
	return u.String(), nil
}

// checkPragmas asserts the settings durability depends on: the driver
// runs _pragma values without reporting what they returned, and
// journal_mode=WAL silently stays "delete" or "memory" where WAL is not
// possible. synchronous must be FULL, or OFF when noSync
// (Config.UnsafeNoSync) asked for it.
func checkPragmas(ctx context.Context, conn *sql.Conn, noSync bool) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return fmt.Errorf("set journal mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("set journal mode: got %q, want \"wal\"", mode)
	}
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	switch {
	case noSync && sync != 0: // OFF
		return fmt.Errorf("read synchronous: got %d, want 0 (OFF)", sync)
	case !noSync && sync != 2: // FULL
		return fmt.Errorf("read synchronous: got %d, want 2 (FULL)", sync)
	}
	return nil
}

// walPagesWritten returns the pages conn has written to the WAL since the
// previous call (SQLITE_DBSTATUS_CACHE_WRITE, read and reset).
func walPagesWritten(conn *sql.Conn) (int, error) {
	var n int
	err := conn.Raw(func(dc any) error {
		st, ok := dc.(sqlite.DBStatus)
		if !ok {
			return fmt.Errorf("driver connection %T has no status counters", dc)
		}
		var err error
		n, _, err = st.Status(sqlite.DBStatusCacheWrite, true)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read pages written: %w", err)
	}
	return n, nil
}

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// translate wraps a driver error with what the store was doing, mapping the
// result codes callers can act on: a constraint violation on insert is
// ErrExists; a full file system is ErrNoSpace; a use of the closed database is ErrClosed. SQLITE_BUSY keeps
// the driver's error but says so, since it means another process holds the
// database.
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrConnDone) || err.Error() == "sql: database is closed" {
		return ErrClosed
	}
	switch sqliteCode(err) {
	case sqlite3.SQLITE_BUSY:
		return fmt.Errorf("%s: database locked by another connection: %w", op, err)
	case sqlite3.SQLITE_CONSTRAINT:
		return fmt.Errorf("%s: %w (%v)", op, ErrExists, err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%s: %w (%v)", op, ErrNoSpace, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
