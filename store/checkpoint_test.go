package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// withCheckpointThresholds sets checkpointPages and walRestartPages for
// one test.
func withCheckpointThresholds(t *testing.T, pages, restart int) {
	t.Helper()
	oldPages, oldRestart := checkpointPages, walRestartPages
	checkpointPages, walRestartPages = pages, restart
	t.Cleanup(func() { checkpointPages, walRestartPages = oldPages, oldRestart })
}

// TestDB_Checkpointer writes many times the WAL's reset threshold while
// readers read and a compaction runs, and checks that the checkpointer
// keeps the WAL bounded, that every write and read succeeds, and that the
// data survives a reopen.
func TestDB_Checkpointer(t *testing.T) {
	const restartPages = 64
	withCheckpointThresholds(t, 16, restartPages)
	// Past twice the reset threshold a reset no longer waits for a
	// pause in the readers below, as past 128 MiB in the daemon: without
	// it, on a slow machine (armv7 under qemu) the readers never paused
	// long enough and the WAL passed the bound checked below.
	defer func(n int) { walForcePages = n }(walForcePages)
	walForcePages = 2 * restartPages
	defer func(n int) { compactChunk = n }(compactChunk)
	compactChunk = 20

	path := t.TempDir() + "/state.db"
	db := openTestPath(t, path)
	ctx := context.Background()
	pad := strings.Repeat("x", 3000) // a page or so per write

	// Seed a change log for the compaction to delete.
	for i := range 300 {
		mustCreate(t, db, key("seed", fmt.Sprint(i)), pad)
	}
	seeded := db.Rev()

	const writers, each = 4, 150
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	stopReads := make(chan struct{})
	var maxWAL int64
	var walMu sync.Mutex
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				k := key(fmt.Sprint("w", w), fmt.Sprint(i))
				if _, err := db.Create(ctx, k, "u", obj(k.Namespace, k.Name, pad)); err != nil {
					errs <- fmt.Errorf("create %v: %w", k, err)
					return
				}
				if fi, err := os.Stat(path + "-wal"); err == nil {
					walMu.Lock()
					maxWAL = max(maxWAL, fi.Size())
					walMu.Unlock()
				}
			}
		})
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stopReads:
				return
			default:
			}
			if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Namespace: "seed", Limit: 50}); err != nil {
				errs <- fmt.Errorf("list: %w", err)
				return
			}
		}
	})
	wg.Go(func() {
		if err := db.Compact(ctx, seeded); err != nil {
			errs <- fmt.Errorf("compact: %w", err)
		}
	})
	wg.Wait()
	close(stopReads)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	st := db.Stats()
	if st.Checkpoints == 0 {
		t.Errorf("Stats().Checkpoints = 0 after %d writes, want background checkpoints", writers*each)
	}
	if st.WALResets == 0 {
		t.Errorf("Stats().WALResets = 0 after %d writes, want WAL resets", writers*each)
	}
	// Without resets these writes grow the WAL to about 12 MB (2,970
	// frames). The bound is 16 times the reset threshold, a third of
	// that: writes never wait for the checkpointer, which lags them on a
	// slow machine (arm64 under qemu reached 519 frames, past an earlier
	// bound of 8 times).
	const frameBytes, headerBytes = 4096 + 24, 32
	if limit := int64(16*restartPages*frameBytes + headerBytes); maxWAL > limit {
		t.Errorf("WAL file reached %d bytes, want at most %d (%d frames, 16 times the reset threshold)",
			maxWAL, limit, 16*restartPages)
	}
	if got, want := st.ChangeLogRows, int64(writers*each); got != want {
		t.Errorf("change-log rows after compaction = %d, want %d", got, want)
	}

	wantRev := db.Rev()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestPath(t, path)
	defer db.Close()
	if got := db.Rev(); got != wantRev {
		t.Errorf("Rev() after reopen = %d, want %d", got, wantRev)
	}
	res, err := db.List(ctx, ListOptions{Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Objects), 300+writers*each; got != want {
		t.Errorf("objects after reopen = %d, want %d", got, want)
	}
}

func TestReadGate_hold(t *testing.T) {
	ctx := context.Background()

	// entered starts g.enter and returns the channel its result arrives on.
	entered := func(g *readGate) <-chan error {
		ch := make(chan error, 1)
		go func() { ch <- g.enter(ctx) }()
		return ch
	}
	// mustWait checks that nothing arrives on ch for a while.
	mustWait := func(t *testing.T, ch <-chan error, what string) {
		t.Helper()
		select {
		case err := <-ch:
			t.Fatalf("%s returned (%v), want it to wait", what, err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	t.Run("no reader in flight", func(t *testing.T) {
		var g readGate
		release, ok := g.hold(ctx, time.Hour)
		if !ok {
			t.Fatal("hold() = false with no reader in flight, want true")
		}
		ch := entered(&g)
		mustWait(t, ch, "enter() while held")
		release()
		if err := <-ch; err != nil {
			t.Fatalf("enter() after release error = %v", err)
		}
		g.leave()
	})

	t.Run("closes when the last reader leaves, never holding a reader behind another", func(t *testing.T) {
		var g readGate
		if err := g.enter(ctx); err != nil {
			t.Fatal(err)
		}
		type held struct {
			release func()
			ok      bool
		}
		holding := make(chan held, 1)
		go func() {
			release, ok := g.hold(ctx, time.Hour)
			holding <- held{release, ok}
		}()
		for { // until hold waits for the readers
			g.mu.Lock()
			waiting := g.want != nil
			g.mu.Unlock()
			if waiting {
				break
			}
			time.Sleep(time.Millisecond)
		}
		// A second reader gets in while the first is in flight.
		if err := <-entered(&g); err != nil {
			t.Fatalf("enter() while another read is in flight error = %v", err)
		}
		g.leave()
		select {
		case <-holding:
			t.Fatal("hold() returned with a reader in flight")
		case <-time.After(20 * time.Millisecond):
		}
		g.leave()
		h := <-holding
		if !h.ok {
			t.Fatal("hold() = false after the readers left, want true")
		}
		ch := entered(&g)
		mustWait(t, ch, "enter() while held")
		h.release()
		if err := <-ch; err != nil {
			t.Fatalf("enter() after release error = %v", err)
		}
		g.leave()
	})

	t.Run("gives up when readers never pause", func(t *testing.T) {
		var g readGate
		if err := g.enter(ctx); err != nil {
			t.Fatal(err)
		}
		if release, ok := g.hold(ctx, time.Millisecond); ok {
			release()
			t.Fatal("hold() = true with a reader in flight throughout, want false")
		}
		g.leave()
		// The gate stayed open.
		if err := <-entered(&g); err != nil {
			t.Fatalf("enter() after a failed hold error = %v", err)
		}
		g.leave()
	})

	t.Run("a waiting reader's context ends", func(t *testing.T) {
		var g readGate
		release, ok := g.hold(ctx, time.Hour)
		if !ok {
			t.Fatal("hold() = false, want true")
		}
		defer release()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := g.enter(cctx); err != context.Canceled {
			t.Errorf("enter() with a cancelled context error = %v, want context.Canceled", err)
		}
	})
}
