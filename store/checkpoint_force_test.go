package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDB_Checkpointer_overlappingReads keeps a read in flight at every
// moment (three readers, each holding the read gate for 30 ms, 10 ms
// apart), so that a WAL reset never finds a natural pause in reads, and
// checks that the WAL stays bounded all the same: past walForcePages the
// checkpointer holds new reads back and resets it.
func TestDB_Checkpointer_overlappingReads(t *testing.T) {
	withCheckpointThresholds(t, 64, 1024)
	oldForce, oldGap := walForcePages, readerGapTimeout
	// The WAL grows by what is written while a reset waits for a pause
	// in reads: a shorter wait keeps that small beside the threshold.
	walForcePages, readerGapTimeout = 2048, 20*time.Millisecond
	t.Cleanup(func() { walForcePages, readerGapTimeout = oldForce, oldGap })

	path := t.TempDir() + "/state.db"
	db := openTestPath(t, path)
	ctx := context.Background()
	pad := strings.Repeat("x", 3000) // a page or so per write

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Go(func() {
			time.Sleep(time.Duration(r) * 10 * time.Millisecond)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.readers.enter(ctx); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(30 * time.Millisecond)
				db.readers.leave()
			}
		})
	}
	var maxWAL int64
	for i := range 5000 {
		k := key("w", fmt.Sprint(i))
		if _, err := db.Create(ctx, k, "u", obj(k.Namespace, k.Name, pad)); err != nil {
			t.Fatalf("create %v: %v", k, err)
		}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			maxWAL = max(maxWAL, fi.Size())
		}
	}
	close(stop)
	wg.Wait()
	st := db.Stats()
	// Frames are a page and a 24-byte header. While a reset waits for a
	// pause in reads (readerGapTimeout, then readerDrainTimeout) the
	// writes go on; four times the force threshold leaves room for that.
	// Without forced resets the WAL holds every write: 195 MB measured.
	bound := int64(4*walForcePages) * (4096 + 24)
	if maxWAL > bound || st.WALResets == 0 || st.WALResetsForced == 0 {
		t.Errorf("WAL at most %d bytes (bound %d); %d resets, %d forced, %d deferred; want it bounded by forced resets",
			maxWAL, bound, st.WALResets, st.WALResetsForced, st.WALResetsDeferred)
	}
	t.Logf("WAL at most %d bytes; %d resets, %d forced, %d deferred", maxWAL, st.WALResets, st.WALResetsForced, st.WALResetsDeferred)
}

// TestReadGate_drain checks drain: it closes the gate at once, succeeds
// when the reads in flight end in time, and reopens the gate when they
// do not.
func TestReadGate_drain(t *testing.T) {
	ctx := context.Background()
	var g readGate
	if err := g.enter(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		g.leave()
	}()
	release, ok := g.drain(ctx, time.Second)
	if !ok {
		t.Fatal("drain() = false with a read that ends in 20 ms, want true")
	}
	entered := make(chan struct{})
	go func() {
		_ = g.enter(ctx)
		close(entered)
	}()
	select {
	case <-entered:
		t.Fatal("a read entered while the gate was drained")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	<-entered // the held-back read goes on after release
	// That read does not end: drain gives up and reopens the gate.
	if _, ok := g.drain(ctx, 10*time.Millisecond); ok {
		t.Fatal("drain() = true with a read in flight past the timeout, want false")
	}
	if err := g.enter(ctx); err != nil {
		t.Fatalf("enter after a drain that gave up: %v", err)
	}
	g.leave()
	g.leave()
}

// TestDB_Checkpointer_foreignSnapshot holds a read snapshot on a
// connection of its own, as another process would, which no reset can
// pass: forced resets, which hold the daemon's reads back, are then tried
// once per walForcePages frames, not at every checkpoint.
func TestDB_Checkpointer_foreignSnapshot(t *testing.T) {
	withCheckpointThresholds(t, 16, 64)
	oldForce, oldGap := walForcePages, readerGapTimeout
	walForcePages, readerGapTimeout = 256, 20*time.Millisecond
	t.Cleanup(func() { walForcePages, readerGapTimeout = oldForce, oldGap })

	path := t.TempDir() + "/state.db"
	db := openTestPath(t, path)
	ctx := context.Background()
	pad := strings.Repeat("x", 3000)
	mustCreate(t, db, key("seed", "0"), pad)

	d, err := dsn(path, "busy_timeout(5000)", "query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := sql.Open("sqlite", d)
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	tx, err := foreign.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM objects").Scan(&n); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		k := key("w", fmt.Sprint(i))
		if _, err := db.Create(ctx, k, "u", obj(k.Namespace, k.Name, pad)); err != nil {
			t.Fatalf("create %v: %v", k, err)
		}
	}
	// The checkpointer runs behind the writes: let it catch up.
	time.Sleep(200 * time.Millisecond)
	_ = tx.Rollback()
	st := db.Stats()
	frames := st.WALBytes / (4096 + 24)
	if want := frames/int64(walForcePages) + 1; st.WALResetsForced > want || st.WALResetsForced == 0 {
		t.Errorf("%d forced resets behind a foreign snapshot with %d WAL frames; want 1 to %d (one per %d frames)",
			st.WALResetsForced, frames, want, walForcePages)
	}
	if st.WALResets != 0 {
		t.Errorf("%d WAL resets behind a foreign snapshot, want 0", st.WALResets)
	}
	t.Logf("%d WAL frames, %d forced resets tried, %d checkpoints, %d put off", frames, st.WALResetsForced, st.Checkpoints, st.WALResetsDeferred)
}
