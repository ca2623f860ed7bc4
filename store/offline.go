package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// This file is the offline maintenance of `edgeapi compact` and `edgeapi
// defrag`, run with the daemon stopped (the daemon's data dir lock keeps
// them apart): compacting the change log down to the newest revisions, and
// rebuilding the database file with VACUUM so that it holds no free or
// half-empty pages.

// FileSizes are the sizes of a database's files, in bytes.
type FileSizes struct {
	DB, WAL int64
}

// Total is the bytes the database takes on disk: the database and the WAL.
func (s FileSizes) Total() int64 { return s.DB + s.WAL }

// fileSizes returns the sizes of the database at path and of its WAL (0
// for a file that does not exist).
func fileSizes(path string) FileSizes {
	var s FileSizes
	if fi, err := os.Stat(path); err == nil {
		s.DB = fi.Size()
	}
	if fi, err := os.Stat(path + "-wal"); err == nil {
		s.WAL = fi.Size()
	}
	return s
}

// CompactReport is what CompactOffline did.
type CompactReport struct {
	// Rev is the database's revision; CompactedBefore and CompactedRev
	// its compaction revision before and after.
	Rev, CompactedBefore, CompactedRev int64
	// RowsBefore and RowsAfter count the change-log rows.
	RowsBefore, RowsAfter int64
	// Before and After are the file sizes. Compaction returns the pages
	// it frees to the file system (incremental vacuum); Defrag also packs
	// the pages that are left.
	Before, After FileSizes
}

// CompactOffline compacts the change log of the database cfg names, with
// no daemon serving it: it opens the store (recovering and migrating it as
// a daemon start would), compacts every revision but the newest keepRevs
// (keepRevs <= 0 compacts up to the current revision), returns the freed
// pages to the file system and closes the store, checkpointing its WAL.
// Afterwards, watches and lists from a compacted revision get 410 Gone,
// as after the daemon's own compaction. cfg.ReserveBytes is ignored: the
// space reserve is removed while it runs (giving compaction its room) and
// recreated by the next daemon start.
func CompactOffline(ctx context.Context, cfg Config, keepRevs int64) (CompactReport, error) {
	var r CompactReport
	if _, err := os.Stat(cfg.Path); err != nil {
		return r, fmt.Errorf("compact: %w", err)
	}
	r.Before = fileSizes(cfg.Path)
	cfg.offline = true
	cfg.ReserveBytes = 0
	cfg.QuotaBytes = 0
	cfg.MaxChangeLogRows = -1
	db, err := Open(ctx, cfg)
	if err != nil {
		return r, fmt.Errorf("compact: %w", err)
	}
	st := db.Stats()
	r.Rev, r.CompactedBefore, r.RowsBefore = st.Rev, st.CompactedRev, st.ChangeLogRows
	rev := st.Rev - max(keepRevs, 0)
	if rev > db.CompactedRev() {
		err = db.Compact(ctx, rev)
	} else {
		// Nothing new to compact: still return free pages, as a
		// compaction ends by doing.
		err = db.vacuum(ctx)
	}
	st = db.Stats()
	r.CompactedRev, r.RowsAfter = st.CompactedRev, st.ChangeLogRows
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r, fmt.Errorf("compact: %w", err)
	}
	r.After = fileSizes(cfg.Path)
	return r, nil
}

// DefragReport is what Defrag did.
type DefragReport struct {
	Before, After FileSizes
}

// Defrag rebuilds the database at path with VACUUM, with no daemon
// serving it: the new file holds only the pages in use, packed, and the
// WAL is checkpointed and truncated. VACUUM writes a copy of the database
// (to a temporary file and then to the WAL), so it needs about twice the
// database's size free on the file system; on failure the database is left
// as it was. It refuses a file that is not an edgeapi database this binary
// can open.
func Defrag(ctx context.Context, path string) (DefragReport, error) {
	var r DefragReport
	if _, err := os.Stat(path); err != nil {
		return r, fmt.Errorf("defrag: %w", err)
	}
	r.Before = fileSizes(path)
	d, err := dsn(path, "busy_timeout("+strconv.Itoa(busyTimeout)+")", "journal_mode(WAL)", "synchronous(FULL)")
	if err != nil {
		return r, err
	}
	sdb, err := sql.Open("sqlite", d)
	if err != nil {
		return r, fmt.Errorf("defrag: %w", err)
	}
	defer sdb.Close()
	conn, err := sdb.Conn(ctx)
	if err != nil {
		return r, fmt.Errorf("defrag: %w", err)
	}
	defer conn.Close()
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return r, fmt.Errorf("defrag: read schema version: %w", err)
	}
	if version == 0 || version > len(migrations) {
		return r, fmt.Errorf("defrag: schema version %d is not an edgeapi database this binary can open", version)
	}
	// The WAL first, so that VACUUM reads the database from one file and
	// the WAL it writes starts empty.
	if err := truncateCheckpoint(ctx, conn); err != nil {
		return r, fmt.Errorf("defrag: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "VACUUM"); err != nil {
		return r, fmt.Errorf("defrag: %w", translate("vacuum", err))
	}
	if err := truncateCheckpoint(ctx, conn); err != nil {
		return r, fmt.Errorf("defrag: %w", err)
	}
	r.After = fileSizes(path)
	return r, nil
}

// truncateCheckpoint copies the whole WAL into the database file and
// truncates the WAL, failing if a reader kept it from doing so.
func truncateCheckpoint(ctx context.Context, conn *sql.Conn) error {
	var busy, logPages, ckptPages int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &ckptPages); err != nil {
		return translate("checkpoint wal", err)
	}
	if busy != 0 {
		return errors.New("checkpoint wal: blocked by another connection")
	}
	return nil
}
