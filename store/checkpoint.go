package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// This file is the WAL checkpointer, in the style of litestream: the
// writer never checkpoints, a background goroutine on its own connection
// does.
//
// SQLite's automatic checkpoint (wal_autocheckpoint) runs inside the
// COMMIT that takes the WAL past its threshold, on the connection that
// committed: the write that happens to cross it waits while frames are
// copied into the database file and the file is fsynced. During a
// compaction, whose deletes and vacuum steps write thousands of pages,
// that made writes wait up to hundreds of milliseconds. So the writer
// connection runs with wal_autocheckpoint=0. After each commit or writer
// job it counts the pages it wrote to the WAL, and once checkpointPages
// have piled up it wakes the checkpointer, which runs a PASSIVE checkpoint
// on its own connection. A passive checkpoint neither waits for nor blocks
// the writer and the readers: it copies the frames no reader still needs.
// SQLite fsyncs the database file only after a checkpoint that copied
// every frame, so after one that did not the checkpointer fsyncs the file
// itself, to keep the next complete checkpoint from flushing everything
// at once.
//
// Passive checkpoints never reset the WAL: SQLite writes from the start of
// the WAL again only after a checkpoint has copied every frame while no
// reader was using the WAL, which a busy writer and a steady stream of
// readers (the garbage collector's paged lists after a restart, say) put
// off for as long as they last. Meanwhile the WAL grows, and once it has
// outgrown journalSizeLimit the first commit after the reset truncates
// the file, which takes tens of milliseconds per hundred megabytes. So
// once the WAL holds walRestartPages frames, the checkpointer resets it
// (resetWAL): it holds compaction steps back, and at a moment when no read
// transaction is in flight it holds new ones back too, checkpoints again,
// and then has the writer wait, between batches, while it runs a RESTART
// checkpoint, which copies the frames committed since and resets the WAL.
// The writes queued meanwhile wait for that step only: a copy of the pages
// the writes committed in the last few milliseconds, and an fsync. Reads
// wait for the whole reset, typically 5 to 20 ms, but never for another
// read. If reads overlap for readerGapTimeout without a gap (or a single
// read lasts that long), the WAL is not reset this time and grows on until
// the checkpointer tries again, after the next checkpointPages.
//
// Durability does not depend on any of this: a commit is durable once its
// WAL frames are fsynced (synchronous=FULL), and SQLite resets the WAL
// only after a checkpoint that copied every frame has fsynced the database
// file, which the checkpointer's connection does with synchronous=FULL.

// checkpointPages is how many pages the writer writes to the WAL before it
// wakes the checkpointer: 1 MiB at the default 4 KiB page, a quarter of
// SQLite's wal_autocheckpoint default, because the fsync of what each
// checkpoint copied delays the fsyncs of the commits that overlap it (with
// 1000 pages, by up to 50 ms during a compaction). A var so tests can
// change it.
var checkpointPages = 256

// walRestartPages is how many frames the WAL may hold before the
// checkpointer resets it: 32 MiB at 4 KiB pages, half journalSizeLimit,
// so that the WAL file stays below the limit and SQLite need not truncate
// it at a reset (a truncation of hundreds of megabytes, inside a commit,
// is itself slow). A var so tests can change it.
var walRestartPages = 8192

// walForcePages is how many frames the WAL may hold before a reset no
// longer waits for a natural pause in reads: past it, the checkpointer
// holds new reads back at once and gives the reads in flight
// readerDrainTimeout to end (see resetWAL). 128 MiB at 4 KiB pages, four
// times walRestartPages. A var so tests can change it.
var walForcePages = 4 * 8192

// writeBackPages is how many pages a checkpoint must have copied for the
// checkpointer to write them back a window at a time before it fsyncs
// them (see passiveCheckpoint).
const writeBackPages = 512

// readerGapTimeout bounds the wait of a WAL reset for a moment when no
// read transaction is in flight. Reads do not wait meanwhile. A var so
// tests can shorten it.
var readerGapTimeout = 250 * time.Millisecond

// Timeouts of a WAL reset.
const (
	// writerParkTimeout bounds the wait for the writer to finish its
	// batch or job and take the reset.
	writerParkTimeout = 100 * time.Millisecond
	// readerDrainTimeout bounds the wait of a forced reset (a WAL past
	// walForcePages) for the reads in flight to end; new reads wait
	// meanwhile, so it is also the longest they are held back for it
	// (plus the reset itself).
	readerDrainTimeout = 100 * time.Millisecond
	// checkpointBusyTimeout is how long a checkpoint on the checkpointer's
	// connection waits for a lock (only a RESTART checkpoint waits): a
	// safety net, since no reader or writer should be in its way.
	checkpointBusyTimeout = 10 // milliseconds
)

// noteWALWrites adds the pages the writer connection wrote to the WAL
// since the last call to walPending and wakes the checkpointer once they
// reach checkpointPages. Only the writer goroutine calls it.
func (db *DB) noteWALWrites() {
	n, err := walPagesWritten(db.writeConn)
	if err != nil {
		db.log.Warn("count wal pages", zap.Error(err))
		return
	}
	db.walPending += n
	if db.walPending < checkpointPages {
		return
	}
	db.walPending = 0
	select {
	case db.ckptWake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// runCheckpointer checkpoints the WAL whenever the writer wakes it, until
// ctx ends. Failures are logged and retried at the next wake-up.
func (db *DB) runCheckpointer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-db.ckptWake:
		}
		if err := db.checkpoint(ctx); err != nil && ctx.Err() == nil {
			db.log.Warn("checkpoint wal; retrying at the next wake-up", zap.Error(err))
		}
	}
}

// checkpoint runs a passive checkpoint and, if the WAL holds
// walRestartPages frames or more, resets the WAL (see resetWAL).
func (db *DB) checkpoint(ctx context.Context) error {
	res, err := db.passiveCheckpoint(ctx)
	if err != nil || res.busy || res.logFrames < walRestartPages {
		return err
	}
	force := res.logFrames >= max(walForcePages, db.nextForceFrames) && db.backups.Load() == 0
	busy, err := db.resetWAL(ctx, force)
	switch {
	case force && busy:
		db.nextForceFrames = res.logFrames + walForcePages
	case !busy && err == nil:
		db.nextForceFrames = 0
	}
	return err
}

// passiveCheckpoint runs a PASSIVE checkpoint on the checkpointer's
// connection and, if it left frames behind, fsyncs the database file.
// When the checkpoint copied writeBackPages or more, which happens after
// a long read kept checkpoints from copying anything, it writes the pages
// back a window at a time first (see writeBack): a single fsync of 10 MiB
// held the commits' fsyncs back for up to 60 ms.
func (db *DB) passiveCheckpoint(ctx context.Context) (checkpointResult, error) {
	res, err := walCheckpoint(ctx, db.ckptConn, "PASSIVE")
	if err != nil {
		return res, err
	}
	db.stats.checkpoints.Add(1)
	if res.busy {
		return res, nil
	}
	copied := res.checkpointed - db.ckptBackfilled
	if copied < 0 { // the WAL was reset since
		copied = res.checkpointed
	}
	db.ckptBackfilled = res.checkpointed
	if res.checkpointed < res.logFrames {
		if copied >= writeBackPages {
			writeBack(db.dbFile)
		}
		if err := db.dbFile.Sync(); err != nil {
			return res, fmt.Errorf("sync database file: %w", err)
		}
	}
	return res, nil
}

// resetWAL resets the WAL. It holds compaction steps back (see
// compactionStep); waits for a moment when no read transaction is in
// flight and holds new ones back from then on; runs two passive
// checkpoints, which now copy every frame but those committed meanwhile;
// and then, on the writer goroutine between batches, runs a RESTART
// checkpoint, which copies the frames left and resets the WAL, so that the
// next commit writes at its start. If no such moment comes within
// readerGapTimeout, or the writer does not take the job within
// writerParkTimeout, it gives up without error: the next checkpoint tries
// again.
//
// Reads that always overlap (a steady stream of paged lists, say) would
// put the reset off for good and let the WAL grow without bound. So once
// the WAL holds walForcePages frames, force is set: the reset holds new
// reads back at once and waits readerDrainTimeout for those in flight to
// end (the daemon's read transactions are short: a page of a list, a
// change-log read). A backup inside the daemon is the exception, a read
// that lasts seconds: while one runs, force is not set (DB.Backup bounds
// the WAL's growth itself).
//
// It reports busy when SQLite's RESTART checkpoint found a reader in its
// way: one the read gate does not count, in another process.
func (db *DB) resetWAL(ctx context.Context, force bool) (busy bool, err error) {
	// A compaction step writes hundreds of frames, which the paused
	// writer would have to copy: let the one under way end, and hold the
	// next back until the reset is done.
	db.compactionSteps.Lock()
	defer db.compactionSteps.Unlock()
	hold := db.readers.hold
	if force {
		hold = func(ctx context.Context, _ time.Duration) (func(), bool) {
			return db.readers.drain(ctx, readerDrainTimeout)
		}
		db.stats.walResetsForced.Add(1)
	}
	release, ok := hold(ctx, readerGapTimeout)
	if !ok {
		db.stats.walResetsDeferred.Add(1)
		return false, nil
	}
	defer release()
	// With no reader in the way the first pass copies every frame, and
	// with no compaction step running, the file has then shrunk for the
	// last time before the reset. The second pass copies the frames
	// committed during the first; its fsync, the first after the shrink,
	// was the slow one when the paused writer's came next (during a
	// vacuum, up to 49 ms for 64 pages, on ext4 mounted with discard).
	for range 2 {
		if _, err := db.passiveCheckpoint(ctx); err != nil {
			return false, err
		}
	}
	parkCtx, cancel := context.WithTimeout(ctx, writerParkTimeout)
	defer cancel()
	// The writer goroutine runs this on the checkpointer's connection,
	// while the checkpointer waits for it: the writer connection is idle
	// between batches, so the checkpoint does not wait for it, and the
	// checkpointer's short busy timeout applies.
	err = db.runOnWriter(parkCtx, func(ctx context.Context, _ *sql.Conn) error {
		res, err := walCheckpoint(ctx, db.ckptConn, "RESTART")
		switch {
		case err != nil:
			return err
		case res.busy:
			busy = true
			db.stats.walResetsDeferred.Add(1)
		default:
			db.stats.walResets.Add(1)
		}
		return nil
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		db.stats.walResetsDeferred.Add(1)
		return false, nil
	}
	return busy, err
}

// readGate counts the read transactions in flight, so that the
// checkpointer can find a moment when none is, and hold new ones back from
// then until it has reset the WAL: SQLite resets it only while no reader
// uses it. Reads are never held back while another read is in flight.
type readGate struct {
	// mu guards the fields below. It is a leaf lock.
	mu sync.Mutex
	// active is the number of read transactions in flight.
	active int
	// closed is non-nil while the gate is closed: new readers wait until
	// it is closed (the channel) when the gate opens.
	closed chan struct{}
	// want is non-nil while the checkpointer waits for active to reach
	// zero: the reader that brings it there closes the gate and closes
	// want.
	want chan struct{}
}

// enter waits while the gate is closed, then counts one more read
// transaction in flight; leave must follow. It returns ctx's error if ctx
// ends first.
func (g *readGate) enter(ctx context.Context) error {
	g.mu.Lock()
	for g.closed != nil {
		closed := g.closed
		g.mu.Unlock()
		select {
		case <-closed:
		case <-ctx.Done():
			return ctx.Err()
		}
		g.mu.Lock()
	}
	g.active++
	g.mu.Unlock()
	return nil
}

// leave counts one read transaction less; if it was the last one and the
// checkpointer is waiting for that, it closes the gate.
func (g *readGate) leave() {
	g.mu.Lock()
	g.active--
	if g.active == 0 && g.want != nil {
		if g.closed == nil { // drain closed it already
			g.closed = make(chan struct{})
		}
		close(g.want)
		g.want = nil
	}
	g.mu.Unlock()
}

// hold closes the gate as soon as no read transaction is in flight, and
// returns ok and a release func that opens it again; until release, no
// read transaction runs. If no such moment comes within timeout (or
// before ctx ends), it returns false, and the gate stays open.
func (g *readGate) hold(ctx context.Context, timeout time.Duration) (release func(), ok bool) {
	release = func() {
		g.mu.Lock()
		closed := g.closed
		g.closed = nil
		g.mu.Unlock()
		close(closed)
	}
	g.mu.Lock()
	if g.active == 0 {
		g.closed = make(chan struct{})
		g.mu.Unlock()
		return release, true
	}
	if !g.awaitReads(ctx, timeout) {
		return nil, false
	}
	return release, true
}

// awaitReads, called with g.mu held (it returns with it released), waits
// until the read transactions in flight have ended (the last one closes
// the gate), timeout passes or ctx ends, and reports whether they ended.
func (g *readGate) awaitReads(ctx context.Context, timeout time.Duration) bool {
	want := make(chan struct{})
	g.want = want
	g.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-want:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.want != want {
		return true // the last read ended just now
	}
	g.want = nil // still waiting: give up
	return false
}

// drain closes the gate at once, so that new read transactions wait, and
// waits until those in flight have ended; it returns ok and a release func
// that opens the gate again, as hold does. If they have not ended within
// timeout (or before ctx ends), it opens the gate and returns false.
func (g *readGate) drain(ctx context.Context, timeout time.Duration) (release func(), ok bool) {
	g.mu.Lock()
	if g.closed != nil || g.want != nil { // only the checkpointer closes it
		g.mu.Unlock()
		return nil, false
	}
	closed := make(chan struct{})
	g.closed = closed
	release = func() {
		g.mu.Lock()
		g.closed = nil
		g.mu.Unlock()
		close(closed)
	}
	if g.active == 0 {
		g.mu.Unlock()
		return release, true
	}
	if !g.awaitReads(ctx, timeout) {
		release()
		return nil, false
	}
	return release, true
}

// checkpointResult is what PRAGMA wal_checkpoint reports.
type checkpointResult struct {
	// busy is true when the checkpoint could not run, or could not finish
	// within the busy timeout (FULL, RESTART and TRUNCATE wait for the
	// writer and the readers).
	busy bool
	// logFrames is the number of frames in the WAL; checkpointed how many
	// of them are now in the database file. Both are -1 when the
	// checkpoint could not run.
	logFrames, checkpointed int
}

// walCheckpoint runs PRAGMA wal_checkpoint(mode) on conn. mode is PASSIVE,
// FULL, RESTART or TRUNCATE.
func walCheckpoint(ctx context.Context, conn *sql.Conn, mode string) (checkpointResult, error) {
	var res checkpointResult
	var busy int
	// PRAGMA takes no parameters; mode is one of four constants.
	err := conn.QueryRowContext(ctx, fmt.Sprintf("PRAGMA wal_checkpoint(%s)", mode)).
		Scan(&busy, &res.logFrames, &res.checkpointed)
	if err != nil {
		return res, translate("checkpoint wal", err)
	}
	res.busy = busy != 0
	return res, nil
}
