package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	sqlite3 "modernc.org/sqlite/lib"
)

// Defaults for Config fields left zero.
const (
	DefaultMaxBatch      = 256
	DefaultMaxBatchBytes = 8 << 20
	// DefaultMaxValueBytes is etcd's 1.5 MiB request limit doubled, plus
	// slack for the bytes stamping adds.
	DefaultMaxValueBytes = 4 << 20
	DefaultReadConns     = 4
	// DefaultMaxChangeLogRows is the change-log size, in rows, past which
	// the compactor runs without waiting for its interval (see
	// Config.MaxChangeLogRows). It is ten times the watch cache's
	// default DefaultWatchCacheEvents, so that a compaction it triggers
	// keeps five times what the watch cache holds.
	DefaultMaxChangeLogRows = 100_000
)

// Config configures Open.
type Config struct {
	// Path is the SQLite file; its directory must exist. The WAL sits
	// beside it as Path+"-wal".
	Path string
	// Logger receives open, compaction and commit-failure messages; nil
	// means zap.NewNop().
	Logger *zap.Logger
	// MaxBatch bounds the writes in one group-commit transaction
	// (default DefaultMaxBatch).
	MaxBatch int
	// MaxBatchBytes bounds the value bytes in one group-commit transaction
	// (default DefaultMaxBatchBytes). A single larger value still commits,
	// alone.
	MaxBatchBytes int
	// MaxValueBytes is the largest value Create and Update accept; larger
	// ones fail with ErrTooLarge (default DefaultMaxValueBytes).
	MaxValueBytes int
	// ReadConns is the size of the read connection pool (default
	// DefaultReadConns).
	ReadConns int
	// ObjectCacheBytes bounds the cache of recently written and read
	// objects that serves Get (default DefaultObjectCacheBytes; negative
	// turns it off).
	ObjectCacheBytes int
	// SQLiteCacheBytes is each SQLite connection's page cache (default
	// DefaultSQLiteCacheBytes); SQLiteMmapBytes is how much of the
	// database file each read connection maps (default
	// DefaultSQLiteMmapBytes; negative maps none). Both are outside the
	// Go heap, and both count toward the daemon's RSS.
	SQLiteCacheBytes int
	SQLiteMmapBytes  int
	// ReserveBytes is the size of the space reserve kept beside the
	// database (Path+"-reserve"): removed when the file system fills up,
	// so that deletes and compaction can still commit (see space.go).
	// Zero or negative keeps no reserve.
	ReserveBytes int64
	// MaxChangeLogRows bounds the change log: when a commit takes it past
	// this many rows, RunCompactor compacts at once instead of waiting for
	// its interval, keeping the newest MaxChangeLogRows/2 revisions (so a
	// watch or list within that many revisions of the present still
	// resumes). Default DefaultMaxChangeLogRows; negative turns the bound
	// off.
	MaxChangeLogRows int64
	// QuotaBytes is the backend quota, etcd's --quota-backend-bytes: once
	// the database's pages in use reach it, creates and updates fail with
	// ErrQuotaExceeded until deletes and compaction bring it back under
	// (see quota.go). Zero or negative sets no quota.
	QuotaBytes int64
	// UnsafeNoSync runs SQLite with synchronous=OFF: nothing is fsynced
	// but the checkpointer's own sync of the database file. For testing
	// only (the power-cut suite shows the harness sees the loss):
	// acknowledged writes are lost on power loss.
	UnsafeNoSync bool
	// Transformers, when set, returns the Transformer of a resource's
	// values (nil for values stored as they are): encryption at rest. See
	// transform.go.
	Transformers func(resource string) Transformer
	// Observer, when set, receives the store's request, commit and
	// compaction timings (see observe.go).
	Observer Observer

	// offline is set by CompactOffline: no daemon serves the store, so
	// compaction steps do not leave the writer to writes between them.
	offline bool

	// beforeBatch, when set (by tests), runs on the writer goroutine after
	// it has received a batch's first write and before it takes the rest.
	beforeBatch func()
	// afterWrite, when set (by tests), runs after each write's statements
	// inside the batch transaction; an error it returns is treated as an
	// unexpected failure of that write.
	afterWrite func(Key) error
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxValueBytes <= 0 {
		c.MaxValueBytes = DefaultMaxValueBytes
	}
	if c.ReadConns <= 0 {
		c.ReadConns = DefaultReadConns
	}
	if c.MaxChangeLogRows == 0 {
		c.MaxChangeLogRows = DefaultMaxChangeLogRows
	}
	if c.ObjectCacheBytes == 0 {
		c.ObjectCacheBytes = DefaultObjectCacheBytes
	}
	if c.SQLiteCacheBytes <= 0 {
		c.SQLiteCacheBytes = DefaultSQLiteCacheBytes
	}
	switch {
	case c.SQLiteMmapBytes == 0:
		c.SQLiteMmapBytes = DefaultSQLiteMmapBytes
	case c.SQLiteMmapBytes < 0:
		c.SQLiteMmapBytes = 0
	}
}

// DB is the Store kept in one SQLite database. Open it with Open; all
// methods are safe for concurrent use.
type DB struct {
	cfg Config
	log *zap.Logger

	// writeDB holds exactly one connection, writeConn, used only by the
	// writer goroutine (and by Open and Close before and after it runs).
	writeDB   *sql.DB
	writeConn *sql.Conn
	stmts     writeStmts
	// readDB is the read pool: query_only connections that never block
	// the writer (WAL). Every read transaction on it passes readers.
	readDB  *sql.DB
	getStmt *sql.Stmt
	// remaining spares the later pages of a paged list their count
	// (remaining.go).
	remaining remainingCache
	readers   readGate
	// ckptDB holds exactly one connection, ckptConn, used by the
	// checkpointer goroutine, or by the writer goroutine on its behalf
	// while it waits (see checkpoint.go).
	ckptDB   *sql.DB
	ckptConn *sql.Conn
	// ckptWake wakes the checkpointer (capacity 1: a send that finds it
	// full is already pending). walPending is the pages the writer has
	// written to the WAL since it last woke the checkpointer; only the
	// writer goroutine uses it.
	ckptWake   chan struct{}
	walPending int
	// ckptBackfilled is the number of WAL frames in the database file
	// after the checkpointer's last checkpoint; only the checkpointer
	// uses it.
	ckptBackfilled int
	// nextForceFrames is the WAL size, in frames, below which no reset is
	// forced: after a forced reset that a reader outside the daemon kept
	// from finishing, another walForcePages frames, so that such a
	// reader does not make every checkpoint hold the daemon's reads back
	// in vain. Only the checkpointer uses it.
	nextForceFrames int
	// compactionSteps is held for reading by each compaction step and for
	// writing by the checkpointer while it resets the WAL. Lock order:
	// compactionSteps before readers.
	compactionSteps sync.RWMutex
	// dbFile is the database file, which the checkpointer fsyncs after a
	// checkpoint that did not copy every frame (SQLite fsyncs it only
	// after one that did). It stays open until every connection has
	// closed: closing any descriptor of a file drops the POSIX locks the
	// process holds on it, SQLite's included.
	dbFile *os.File
	// cache serves Get; nil when Config.ObjectCacheBytes is negative.
	cache *objectCache
	// noSpace is the no-space state (see space.go): set by the writer when
	// a commit finds the file system full, cleared by the space monitor,
	// which spaceWake (capacity 1) wakes.
	noSpace   atomic.Bool
	spaceWake chan struct{}
	// compactWake (capacity 1) wakes RunCompactor when a commit takes the
	// change log past Config.MaxChangeLogRows.
	compactWake chan struct{}
	// backups counts the backups in flight inside the daemon (DB.Backup),
	// read transactions that last seconds: the checkpointer does not
	// force a WAL reset past them.
	backups atomic.Int32
	// overQuota is the over-quota state (see quota.go) and usedBytes the
	// database's pages in use, in bytes, at the writer's last measure;
	// only the writer stores them.
	overQuota atomic.Bool
	usedBytes atomic.Int64

	// rev is the last committed revision; only the writer stores it, after
	// COMMIT. compactedRev is the scheduled compaction revision.
	rev          atomic.Int64
	compactedRev atomic.Int64
	// holds are the revisions readers keep from compaction (Hold).
	holds Holds
	// finishedCompactRev is the finished compaction revision read at Open.
	finishedCompactRev int64

	// closeMu guards closed and the sends on queue and jobs: senders hold
	// it for reading, Close for writing while it closes queue. Lock order:
	// closeMu before subMu.
	closeMu sync.RWMutex
	closed  bool
	// isClosed mirrors closed for reads, which take no lock.
	isClosed atomic.Bool
	queue    chan *writeReq
	jobs     chan writerJob

	// subMu guards subs, the subscriber list, which is replaced (never
	// modified in place) so that the writer can read it without the lock.
	subMu  sync.Mutex
	subs   atomic.Pointer[[]subscriber]
	nextID uint64

	stats stats
	// objects are the object counts per resource (see ObjectCounts).
	objects    objectCounts
	bgCancel   context.CancelFunc
	wg         sync.WaitGroup // the writer goroutine
	bg         sync.WaitGroup // background compaction and object counting
	spaceDone  sync.WaitGroup // the space monitor
	ckptDone   sync.WaitGroup // the checkpointer
	closeOnce  sync.Once
	closeErr   error
	writerDone chan struct{}
}

type subscriber struct {
	id uint64
	fn func([]Event)
}

// stats are the counters behind Stats, updated by the writer.
type stats struct {
	batches           atomic.Int64
	batchedWrites     atomic.Int64
	maxBatch          atomic.Int64
	changeLogRows     atomic.Int64
	checkpoints       atomic.Int64
	walResets         atomic.Int64
	walResetsDeferred atomic.Int64
	walResetsForced   atomic.Int64
	noSpaceEntered    atomic.Int64
	sizeCompactions   atomic.Int64
	quotaExceeded     atomic.Int64
}

// Stats is a snapshot of the store's counters.
type Stats struct {
	Rev          int64
	CompactedRev int64
	// Batches counts group-commit transactions committed since Open;
	// BatchedWrites the successful writes they held. BatchedWrites/Batches
	// is the average batch size.
	Batches       int64
	BatchedWrites int64
	// MaxBatchSeen is the most writes one committed transaction held.
	MaxBatchSeen int64
	// DBBytes and WALBytes are the sizes of the database and WAL files.
	DBBytes  int64
	WALBytes int64
	// ChangeLogRows is the number of change-log rows, counted at Open and
	// kept up to date by writes and compaction.
	ChangeLogRows int64
	// Checkpoints counts the background WAL checkpoints since Open.
	// WALResets counts the times the checkpointer reset the WAL to its
	// start; WALResetsDeferred the times it put a reset off because a read
	// transaction did not end in time (see checkpoint.go).
	Checkpoints       int64
	WALResets         int64
	WALResetsDeferred int64
	// WALResetsForced counts the resets tried with reads held back at
	// once, because the WAL had grown past walForcePages frames while
	// overlapping reads put the normal ones off.
	WALResetsForced int64
	// NoSpace reports the no-space state: the file system holding the
	// database filled up, and creates and updates fail with ErrNoSpace
	// until space is freed. NoSpaceEntered counts the times the store
	// entered it since Open.
	NoSpace        bool
	NoSpaceEntered int64
	// SizeCompactions counts the compactions RunCompactor ran, since Open,
	// because the change log outgrew Config.MaxChangeLogRows or the
	// database reached Config.QuotaBytes.
	SizeCompactions int64
	// QuotaBytes is Config.QuotaBytes (0: no quota); UsedBytes the
	// database's pages in use, in bytes, when last measured (0 without a
	// quota). OverQuota reports the over-quota state: creates and updates
	// fail with ErrQuotaExceeded. QuotaExceeded counts the times the store
	// entered it since Open.
	QuotaBytes    int64
	UsedBytes     int64
	OverQuota     bool
	QuotaExceeded int64
}

var _ Store = (*DB)(nil)

// Open opens (creating if needed) the database at cfg.Path, migrates its
// schema, recovers the revision and starts the writer. A compaction that a
// crash interrupted resumes in the background. Close the DB when done.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg.setDefaults()
	if cfg.Path == "" {
		return nil, errors.New("open store: empty path")
	}
	db := &DB{
		cfg:        cfg,
		log:        cfg.Logger,
		queue:      make(chan *writeReq, 2*cfg.MaxBatch),
		jobs:       make(chan writerJob),
		ckptWake:   make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		spaceWake:  make(chan struct{}, 1),

		compactWake: make(chan struct{}, 1),
	}
	if cfg.ObjectCacheBytes > 0 {
		db.cache = newObjectCache(cfg.ObjectCacheBytes)
	}
	afterOpen, err := db.prepareReserve()
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", cfg.Path, err)
	}
	if err := db.open(ctx); err != nil {
		_ = db.closeConns(false)
		return nil, fmt.Errorf("open store %s: %w", cfg.Path, err)
	}
	afterOpen()
	db.checkQuota(ctx)
	if rows := db.stats.changeLogRows.Load(); db.cfg.MaxChangeLogRows > 0 && rows > db.cfg.MaxChangeLogRows {
		db.wakeCompactor() // a log that grew before a restart
	}

	bgCtx, cancel := context.WithCancel(context.Background())
	db.bgCancel = cancel
	db.wg.Add(1)
	go func() {
		defer db.wg.Done()
		defer close(db.writerDone)
		db.groupCommit()
	}()
	db.ckptDone.Add(1)
	go func() {
		defer db.ckptDone.Done()
		db.runCheckpointer(bgCtx)
	}()

	db.spaceDone.Add(1)
	go func() {
		defer db.spaceDone.Done()
		db.runSpaceMonitor(bgCtx)
	}()

	db.resumeCompaction(bgCtx, db.finishedCompactRev)
	db.startCountingObjects(bgCtx)
	return db, nil
}

// open connects, checks pragmas, migrates and loads the revisions.
func (db *DB) open(ctx context.Context) error {
	if err := secureDBFiles(db.cfg.Path, db.log); err != nil {
		return err
	}
	wdsn, err := writerDSN(db.cfg.Path, db.cfg.UnsafeNoSync, db.cfg.SQLiteCacheBytes)
	if err != nil {
		return err
	}
	db.writeDB, err = sql.Open("sqlite", wdsn)
	if err != nil {
		return fmt.Errorf("open writer: %w", err)
	}
	db.writeDB.SetMaxOpenConns(1)
	db.writeDB.SetMaxIdleConns(1)
	db.writeDB.SetConnMaxLifetime(0)
	db.writeDB.SetConnMaxIdleTime(0)
	db.writeConn, err = db.writeDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect writer: %w", err)
	}
	if err := checkPragmas(ctx, db.writeConn, db.cfg.UnsafeNoSync); err != nil {
		return err
	}
	var autoVacuum int
	if err := db.writeConn.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&autoVacuum); err != nil {
		return fmt.Errorf("read auto_vacuum: %w", err)
	}
	if autoVacuum != 2 { // INCREMENTAL
		// Only a VACUUM can change it on a database that has tables.
		db.log.Warn("database is not in incremental auto_vacuum mode; compaction will not return space to the file system",
			zap.Int("auto_vacuum", autoVacuum))
	}
	from, to, err := migrate(ctx, db.writeConn)
	if err != nil {
		return err
	}
	if err := db.stmts.prepare(ctx, db.writeConn); err != nil {
		return err
	}
	if err := db.loadRevisions(ctx); err != nil {
		return err
	}

	rdsn, err := readerDSN(db.cfg.Path, db.cfg.SQLiteCacheBytes, db.cfg.SQLiteMmapBytes)
	if err != nil {
		return err
	}
	db.readDB, err = sql.Open("sqlite", rdsn)
	if err != nil {
		return fmt.Errorf("open readers: %w", err)
	}
	db.readDB.SetMaxOpenConns(db.cfg.ReadConns)
	db.readDB.SetMaxIdleConns(db.cfg.ReadConns)
	db.readDB.SetConnMaxLifetime(0)
	db.readDB.SetConnMaxIdleTime(0)
	db.getStmt, err = db.readDB.PrepareContext(ctx, sqlGet)
	if err != nil {
		return fmt.Errorf("prepare get: %w", err)
	}

	db.dbFile, err = os.Open(db.cfg.Path)
	if err != nil {
		return fmt.Errorf("open database file: %w", err)
	}
	cdsn, err := checkpointerDSN(db.cfg.Path, db.cfg.UnsafeNoSync, db.cfg.SQLiteCacheBytes)
	if err != nil {
		return err
	}
	db.ckptDB, err = sql.Open("sqlite", cdsn)
	if err != nil {
		return fmt.Errorf("open checkpointer: %w", err)
	}
	db.ckptDB.SetMaxOpenConns(1)
	db.ckptDB.SetMaxIdleConns(1)
	db.ckptDB.SetConnMaxLifetime(0)
	db.ckptDB.SetConnMaxIdleTime(0)
	db.ckptConn, err = db.ckptDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect checkpointer: %w", err)
	}
	if err := checkPragmas(ctx, db.ckptConn, db.cfg.UnsafeNoSync); err != nil {
		return fmt.Errorf("checkpointer: %w", err)
	}

	db.log.Info("store opened",
		zap.String("path", db.cfg.Path),
		zap.Int("schema_from", from), zap.Int("schema", to),
		zap.Int64("rev", db.rev.Load()),
		zap.Int64("compacted_rev", db.compactedRev.Load()),
		zap.Int64("changelog_rows", db.stats.changeLogRows.Load()))
	return nil
}

// loadRevisions recovers the current revision, max(meta rev, newest
// change-log row), writing it back to meta if they differ, and the
// compacted revision.
func (db *DB) loadRevisions(ctx context.Context) error {
	var stored, newest, scheduled, finished, rows int64
	err := db.writeConn.QueryRowContext(ctx, `SELECT
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	COALESCE((SELECT MAX(rev) FROM changelog), 0),
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	(SELECT COUNT(*) FROM changelog)`, metaRev, metaScheduledCompactRev, metaFinishedCompactRev).
		Scan(&stored, &newest, &scheduled, &finished, &rows)
	if err != nil {
		return fmt.Errorf("read revision: %w", err)
	}
	rev := max(stored, newest)
	if rev != stored || stored == 0 {
		if _, err := db.writeConn.ExecContext(ctx, sqlSetMeta, metaRev, rev); err != nil {
			return fmt.Errorf("write revision: %w", err)
		}
	}
	db.rev.Store(rev)
	db.compactedRev.Store(scheduled)
	db.finishedCompactRev = finished
	db.stats.changeLogRows.Store(rows)
	return nil
}

// Rev returns the last committed revision.
func (db *DB) Rev() int64 { return db.rev.Load() }

// CompactedRev returns the revision of the latest compaction: change-log
// entries at or below it are gone (or being deleted).
func (db *DB) CompactedRev() int64 { return db.compactedRev.Load() }

// Subscribe registers fn for every committed batch of events. See Store.
// All subscribers get the same events slice: they may keep it and the
// Objects in it, but must not modify either.
//
// Every batch committed after Subscribe returns reaches fn, exactly once,
// in revision order. A batch committing while Subscribe runs may or may not
// reach fn; one that does not is already counted in Rev() when Subscribe
// returns (the writer advances Rev before it reads the subscriber list).
// So a subscriber that reads Rev() right after Subscribe has missed nothing
// above it, and may see events at or below it.
//
// After cancel returns, fn is not called again, unless a publication was
// already under way.
func (db *DB) Subscribe(fn func(events []Event)) (cancel func()) {
	db.subMu.Lock()
	defer db.subMu.Unlock()
	db.nextID++
	id := db.nextID
	var next []subscriber
	if cur := db.subs.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, subscriber{id: id, fn: fn})
	db.subs.Store(&next)
	return func() {
		db.subMu.Lock()
		defer db.subMu.Unlock()
		cur := db.subs.Load()
		if cur == nil {
			return
		}
		next := make([]subscriber, 0, len(*cur))
		for _, s := range *cur {
			if s.id != id {
				next = append(next, s)
			}
		}
		db.subs.Store(&next)
	}
}

// Stats returns the store's counters and file sizes.
func (db *DB) Stats() Stats {
	s := Stats{
		Rev:               db.rev.Load(),
		CompactedRev:      db.compactedRev.Load(),
		Batches:           db.stats.batches.Load(),
		BatchedWrites:     db.stats.batchedWrites.Load(),
		MaxBatchSeen:      db.stats.maxBatch.Load(),
		ChangeLogRows:     db.stats.changeLogRows.Load(),
		Checkpoints:       db.stats.checkpoints.Load(),
		WALResets:         db.stats.walResets.Load(),
		WALResetsDeferred: db.stats.walResetsDeferred.Load(),
		WALResetsForced:   db.stats.walResetsForced.Load(),
		NoSpace:           db.noSpace.Load(),
		NoSpaceEntered:    db.stats.noSpaceEntered.Load(),
		SizeCompactions:   db.stats.sizeCompactions.Load(),
		QuotaBytes:        max(db.cfg.QuotaBytes, 0),
		UsedBytes:         db.usedBytes.Load(),
		OverQuota:         db.overQuota.Load(),
		QuotaExceeded:     db.stats.quotaExceeded.Load(),
	}
	if fi, err := os.Stat(db.cfg.Path); err == nil {
		s.DBBytes = fi.Size()
	}
	if fi, err := os.Stat(db.cfg.Path + "-wal"); err == nil {
		s.WALBytes = fi.Size()
	}
	return s
}

// Close stops accepting writes (they fail with ErrClosed), lets the writer
// commit every write already queued, stops background compaction (it
// resumes at the next Open) and the checkpointer, checkpoints and
// truncates the WAL and closes the database. It returns the first error
// and is safe to call more than once.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.bgCancel()
		db.spaceDone.Wait()
		db.bg.Wait()
		db.ckptDone.Wait()
		db.closeMu.Lock()
		db.closed = true
		db.isClosed.Store(true)
		close(db.queue)
		db.closeMu.Unlock()
		db.wg.Wait()

		if err := db.closeConns(true); err != nil {
			db.closeErr = fmt.Errorf("close store: %w", err)
		}
		db.log.Info("store closed", zap.Int64("rev", db.rev.Load()), zap.Error(db.closeErr))
	})
	return db.closeErr
}

// closeConns closes what open opened, returning the first error. With
// checkpoint it closes the readers and the checkpointer first, since an
// open read snapshot would keep the checkpoint from truncating the WAL and
// a running checkpoint would make it wait, then checkpoints.
func (db *DB) closeConns(checkpoint bool) error {
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	if db.getStmt != nil {
		keep(db.getStmt.Close())
	}
	if db.readDB != nil {
		keep(db.readDB.Close())
	}
	if db.ckptConn != nil {
		keep(db.ckptConn.Close())
	}
	if db.ckptDB != nil {
		keep(db.ckptDB.Close())
	}
	if checkpoint && db.writeConn != nil {
		var busy, logPages, ckptPages int
		err := db.writeConn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)").
			Scan(&busy, &logPages, &ckptPages)
		switch {
		case err != nil && sqliteCode(err) == sqlite3.SQLITE_FULL:
			// Every commit is in the WAL, which the next Open reads;
			// the file system is just too full to copy it over now.
			db.log.Warn("file system full: leaving the WAL for the next start to checkpoint", zap.Error(err))
		case err != nil:
			keep(fmt.Errorf("checkpoint wal: %w", err))
		case busy != 0:
			keep(fmt.Errorf("checkpoint wal: blocked by a reader (%d of %d pages)", ckptPages, logPages))
		}
	}
	keep(db.stmts.close())
	if db.writeConn != nil {
		keep(db.writeConn.Close())
	}
	if db.writeDB != nil {
		keep(db.writeDB.Close())
	}
	if db.dbFile != nil {
		keep(db.dbFile.Close())
	}
	return first
}
