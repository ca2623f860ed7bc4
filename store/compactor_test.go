package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestDB_RunCompactor_sizeBound writes past Config.MaxChangeLogRows with a
// compaction interval far longer than the test, and sees the compactor
// shrink the change log anyway, keeping the newest MaxChangeLogRows/2
// revisions readable.
func TestDB_RunCompactor_sizeBound(t *testing.T) {
	const maxRows = 40
	db := openTest(t, Config{MaxChangeLogRows: maxRows})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.RunCompactor(ctx, time.Hour)
	}()
	t.Cleanup(func() { cancel(); <-done })

	for i := range 3 * maxRows {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "")
	}
	// Waits only for the compactor goroutine to get its turn; the interval
	// (an hour) never passes during the test. A size compaction that ran
	// while the writes went on leaves more rows behind it, and the next
	// commit past the bound wakes the compactor again: wait for the one
	// after the last write too (on a slow machine, such as arm64 under
	// qemu, the first often runs mid-way).
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st := db.Stats(); st.SizeCompactions > 0 && st.ChangeLogRows <= maxRows {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := db.Stats()
	if st.SizeCompactions == 0 {
		t.Fatalf("SizeCompactions = 0 after writing %d changes with a bound of %d rows, want > 0", 3*maxRows, maxRows)
	}
	if st.ChangeLogRows > maxRows {
		t.Errorf("ChangeLogRows = %d after the size compaction, want <= %d", st.ChangeLogRows, maxRows)
	}
	if st.CompactedRev == 0 || st.CompactedRev > st.Rev-maxRows/2 {
		t.Errorf("CompactedRev = %d at rev %d, want in (0, %d]", st.CompactedRev, st.Rev, st.Rev-maxRows/2)
	}
	// What the bound promises to keep is still there.
	events, err := db.Changes(context.Background(), st.Rev-maxRows/2, 0)
	if err != nil {
		t.Fatalf("Changes(rev-%d) error = %v, want the newest %d changes", maxRows/2, err, maxRows/2)
	}
	if len(events) != maxRows/2 {
		t.Errorf("Changes(rev-%d) = %d events, want %d", maxRows/2, len(events), maxRows/2)
	}
	if _, err := db.Changes(context.Background(), 0, 0); !errors.Is(err, ErrCompacted) {
		t.Errorf("Changes(0) error = %v, want ErrCompacted", err)
	}
}

// TestDB_RunCompactor_sizeBoundOff checks that a negative MaxChangeLogRows
// turns the bound off: the change log keeps every row.
func TestDB_RunCompactor_sizeBoundOff(t *testing.T) {
	db := openTest(t, Config{MaxChangeLogRows: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.RunCompactor(ctx, time.Hour)
	}()
	for i := range 100 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "")
	}
	db.compactForSize(context.Background()) // what a wake-up would run
	cancel()
	<-done
	if st := db.Stats(); st.CompactedRev != 0 || st.ChangeLogRows != 100 {
		t.Errorf("CompactedRev, ChangeLogRows = %d, %d, want 0, 100", st.CompactedRev, st.ChangeLogRows)
	}
}

// TestDB_RunCompactor_sizeBoundAtOpen checks that a change log already past
// the bound when the store opens (a device that restarted during a burst)
// is compacted without waiting for a write or the interval.
func TestDB_RunCompactor_sizeBoundAtOpen(t *testing.T) {
	const maxRows = 40
	path := filepath.Join(t.TempDir(), "state.db")
	first, err := Open(context.Background(), Config{Path: path, MaxChangeLogRows: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * maxRows {
		mustCreate(t, first, key("ns", fmt.Sprint(i)), "")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	db := openTest(t, Config{Path: path, MaxChangeLogRows: maxRows})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.RunCompactor(ctx, time.Hour)
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for db.Stats().SizeCompactions == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := db.Stats(); st.SizeCompactions != 1 || st.ChangeLogRows != maxRows/2 {
		t.Errorf("SizeCompactions, ChangeLogRows = %d, %d after opening a log of %d rows, want 1, %d",
			st.SizeCompactions, st.ChangeLogRows, 3*maxRows, maxRows/2)
	}
}
