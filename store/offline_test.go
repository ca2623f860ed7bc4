package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// grownDB fills a database at a new path with 200 objects of 8 KiB, each
// updated three times, deletes all but 20 and closes it. It returns the
// config and the revision before the deletes.
func grownDB(t *testing.T) (Config, int64) {
	t.Helper()
	ctx := context.Background()
	cfg := Config{Path: filepath.Join(t.TempDir(), "state.db")}
	db, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 8<<10)
	for i := range 200 {
		k := key("ns", "o"+itoa(i))
		mustCreate(t, db, k, pad)
		for range 3 {
			if _, err := db.Update(ctx, k, Preconditions{}, obj("ns", k.Name, pad+"y")); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := db.Rev()
	for i := 20; i < 200; i++ {
		if _, err := db.Delete(ctx, key("ns", "o"+itoa(i)), Preconditions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg, before
}

func TestCompactOffline(t *testing.T) {
	ctx := context.Background()
	cfg, before := grownDB(t)
	r, err := CompactOffline(ctx, cfg, 10)
	if err != nil {
		t.Fatalf("CompactOffline() error = %v", err)
	}
	if got, want := r.CompactedRev, r.Rev-10; got != want {
		t.Errorf("CompactedRev = %d, want %d (Rev %d less 10)", got, want, r.Rev)
	}
	if r.RowsBefore != r.Rev || r.RowsAfter != 10 {
		t.Errorf("change-log rows %d -> %d, want %d -> 10", r.RowsBefore, r.RowsAfter, r.Rev)
	}
	if r.After.Total() >= r.Before.Total()/2 {
		t.Errorf("files %d -> %d bytes, want less than half", r.Before.Total(), r.After.Total())
	}
	if r.After.WAL != 0 {
		t.Errorf("WAL after = %d bytes, want 0 (checkpointed at close)", r.After.WAL)
	}
	if c, err := Check(ctx, cfg); err != nil || !c.OK() {
		t.Errorf("Check() after compaction = %+v, %v", c, err)
	}
	db := openTest(t, cfg)
	if _, err := db.Changes(ctx, before, 10); !errors.Is(err, ErrCompacted) {
		t.Errorf("Changes(%d) after compaction error = %v, want ErrCompacted", before, err)
	}
	if ev, err := db.Changes(ctx, r.CompactedRev, 100); err != nil || len(ev) != 10 {
		t.Errorf("Changes(%d) = %d events, %v; want the 10 kept", r.CompactedRev, len(ev), err)
	}
	res, err := db.List(ctx, ListOptions{Resource: "configmaps"})
	if err != nil || len(res.Objects) != 20 {
		t.Errorf("List() = %d objects, %v; want 20", len(res.Objects), err)
	}
}

func TestCompactOffline_nothingToDo(t *testing.T) {
	ctx := context.Background()
	cfg, _ := grownDB(t)
	if _, err := CompactOffline(ctx, cfg, 0); err != nil {
		t.Fatal(err)
	}
	r, err := CompactOffline(ctx, cfg, 0)
	if err != nil {
		t.Fatalf("second CompactOffline() error = %v", err)
	}
	if r.CompactedRev != r.CompactedBefore || r.CompactedRev != r.Rev || r.RowsAfter != 0 {
		t.Errorf("second CompactOffline() = %+v, want the same compacted revision and no rows", r)
	}
	if _, err := CompactOffline(ctx, Config{Path: filepath.Join(t.TempDir(), "missing.db")}, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CompactOffline(missing file) error = %v, want ErrNotExist", err)
	}
}

func TestDefrag(t *testing.T) {
	ctx := context.Background()
	cfg, _ := grownDB(t)
	// Deletes free whole pages only when the compaction removes the
	// history too; defrag also packs what is left.
	if _, err := CompactOffline(ctx, cfg, 0); err != nil {
		t.Fatal(err)
	}
	r, err := Defrag(ctx, cfg.Path)
	if err != nil {
		t.Fatalf("Defrag() error = %v", err)
	}
	if r.After.Total() > r.Before.Total() || r.After.WAL != 0 {
		t.Errorf("Defrag() files %+v -> %+v, want no larger and no WAL", r.Before, r.After)
	}
	if c, err := Check(ctx, cfg); err != nil || !c.OK() {
		t.Errorf("Check() after defrag = %+v, %v", c, err)
	}
	db := openTest(t, cfg)
	res, err := db.List(ctx, ListOptions{Resource: "configmaps"})
	if err != nil || len(res.Objects) != 20 {
		t.Errorf("List() after defrag = %d objects, %v; want 20", len(res.Objects), err)
	}
	var autoVacuum int
	if err := db.readDB.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&autoVacuum); err != nil || autoVacuum != 2 {
		t.Errorf("auto_vacuum after defrag = %d (%v), want 2 (incremental)", autoVacuum, err)
	}
}

func TestDefrag_notEdgeapi(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Defrag(context.Background(), path); err == nil || !strings.Contains(err.Error(), "not an edgeapi database") {
		t.Errorf("Defrag(empty file) error = %v, want one saying it is not an edgeapi database", err)
	}
}
