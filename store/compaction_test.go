package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func TestDB_Changes(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	for i := range 10 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "")
	}
	tests := []struct {
		name     string
		after    int64
		limit    int
		wantRevs []int64
		err      error
	}{
		{name: "all", after: 0, wantRevs: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{name: "after", after: 7, wantRevs: []int64{8, 9, 10}},
		{name: "limit", after: 2, limit: 3, wantRevs: []int64{3, 4, 5}},
		{name: "caught up", after: 10},
		{name: "future", after: 11, err: ErrFutureRev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, err := db.Changes(ctx, tt.after, tt.limit)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Changes() error = %v, want %v", err, tt.err)
			}
			var got []int64
			for _, ev := range events {
				got = append(got, ev.Rev())
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantRevs) {
				t.Errorf("Changes() revisions = %v, want %v", got, tt.wantRevs)
			}
		})
	}
}

func TestDB_Compact(t *testing.T) {
	defer func(n int) { compactChunk = n }(compactChunk)
	compactChunk = 7 // several chunks

	path := filepath.Join(t.TempDir(), "state.db")
	db := openTestPath(t, path)
	ctx := context.Background()
	for i := range 50 {
		k := key("ns", fmt.Sprint(i%10))
		if i < 10 {
			mustCreate(t, db, k, "0")
		} else if _, err := db.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	before, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: 30})
	if err != nil {
		t.Fatal(err)
	}

	if err := db.Compact(ctx, 51); !errors.Is(err, ErrFutureRev) {
		t.Errorf("Compact(future) error = %v, want ErrFutureRev", err)
	}
	if err := db.Compact(ctx, 30); err != nil {
		t.Fatalf("Compact() error = %v", err)
	}
	if got := db.CompactedRev(); got != 30 {
		t.Errorf("CompactedRev() = %d, want 30", got)
	}
	if got := db.Stats().ChangeLogRows; got != 20 {
		t.Errorf("Stats().ChangeLogRows = %d, want 20", got)
	}
	if _, err := db.Changes(ctx, 29, 0); !errors.Is(err, ErrCompacted) {
		t.Errorf("Changes(29) error = %v, want ErrCompacted", err)
	}
	events, err := db.Changes(ctx, 30, 0)
	if err != nil || len(events) != 20 || events[0].Rev() != 31 {
		t.Errorf("Changes(30) = %d events, err %v; want 20 from rev 31", len(events), err)
	}
	if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: 29}); !errors.Is(err, ErrCompacted) {
		t.Errorf("List(rev 29) error = %v, want ErrCompacted", err)
	}
	// The compacted revision itself can still be rebuilt: every change
	// after it is kept.
	after, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: 30})
	if err != nil {
		t.Fatalf("List(rev 30) error = %v", err)
	}
	if got, want := snapshot(after.Objects), snapshot(before.Objects); got != want {
		t.Errorf("List(rev 30) after compaction =\n%s\nwant\n%s", got, want)
	}
	if err := db.Compact(ctx, 10); err != nil {
		t.Errorf("Compact(below compacted) error = %v, want nil", err)
	}
	if got := db.CompactedRev(); got != 30 {
		t.Errorf("CompactedRev() = %d, want 30", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("resumes after crash", func(t *testing.T) {
		// A compaction scheduled but not finished, as a crash between the
		// two phases leaves it.
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(sqlSetMeta, metaScheduledCompactRev, 45); err != nil {
			t.Fatal(err)
		}
		raw.Close()

		db := openTestPath(t, path)
		defer db.Close()
		if got := db.CompactedRev(); got != 45 {
			t.Errorf("CompactedRev() after reopen = %d, want 45", got)
		}
		// The resumed compaction runs in the background; wait for it.
		db.bg.Wait()
		var rows, finished int64
		if err := db.readDB.QueryRow(`SELECT (SELECT COUNT(*) FROM changelog),
			(SELECT value FROM meta WHERE key = ?)`, metaFinishedCompactRev).Scan(&rows, &finished); err != nil {
			t.Fatal(err)
		}
		if rows != 5 || finished != 45 {
			t.Errorf("after resumed compaction: %d rows, finished at %d; want 5 rows, 45", rows, finished)
		}
		if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: 44}); !errors.Is(err, ErrCompacted) {
			t.Errorf("List(rev 44) error = %v, want ErrCompacted", err)
		}
	})
}

func TestStepSize_adapt(t *testing.T) {
	tests := []struct {
		name   string
		n, max int
		took   time.Duration
		wantN  int
	}{
		{name: "slow halves", n: 512, max: 512, took: 3 * compactionStepTarget, wantN: 256},
		{name: "slow stops at max/16", n: 32, max: 512, took: 3 * compactionStepTarget, wantN: 32},
		{name: "slow stops at 1", n: 1, max: 7, took: 3 * compactionStepTarget, wantN: 1},
		{name: "on target stays", n: 128, max: 512, took: compactionStepTarget, wantN: 128},
		{name: "fast doubles", n: 128, max: 512, took: compactionStepTarget / 4, wantN: 256},
		{name: "fast stops at max", n: 400, max: 500, took: compactionStepTarget / 4, wantN: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stepSize{n: tt.n, max: tt.max}
			s.adapt(tt.took)
			if got := s.n; got != tt.wantN {
				t.Errorf("adapt(%v) from %d: n = %d, want %d", tt.took, tt.n, got, tt.wantN)
			}
		})
	}
}
