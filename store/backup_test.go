package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestBackup_offline(t *testing.T) {
	ctx := context.Background()
	cfg := checkFixture(t, Config{})
	to := filepath.Join(t.TempDir(), "backup.db")
	rev, err := Backup(ctx, cfg.Path, to)
	if err != nil {
		t.Fatalf("Backup() error = %v", err)
	}
	want, err := readRev(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if rev != want {
		t.Errorf("Backup() rev = %d, want %d", rev, want)
	}
	r, err := Check(ctx, Config{Path: to})
	if err != nil || !r.OK() || r.Objects != 4 {
		t.Errorf("Check(backup) = %+v, %v; want 4 objects and no findings", r, err)
	}
	if _, err := Backup(ctx, cfg.Path, to); err == nil {
		t.Errorf("Backup() over an existing file: error = nil, want one")
	}
}

// TestDB_Backup backs up a database while writes run and checks that the
// copy is consistent and holds every write acknowledged before it began.
func TestDB_Backup(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Config{})
	for i := range 200 {
		mustCreate(t, db, key("before", "o"+itoa(i)), "1")
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if _, err := db.Create(ctx, key("during", "o"+itoa(i)), "u", obj("during", "o"+itoa(i), "1")); err != nil {
				t.Errorf("Create() during backup error = %v", err)
				return
			}
		}
	}()
	dir := t.TempDir()
	for i := range 3 {
		to := filepath.Join(dir, "backup"+itoa(i)+".db")
		rev, err := db.Backup(ctx, to)
		if err != nil {
			t.Fatalf("Backup() error = %v", err)
		}
		r, err := Check(ctx, Config{Path: to})
		if err != nil || !r.OK() {
			t.Fatalf("Check(backup) = %+v, %v; want no findings", r, err)
		}
		if r.Objects < 200 || r.Rev != rev {
			t.Errorf("backup holds %d objects at revision %d, want >= 200 at %d", r.Objects, r.Rev, rev)
		}
	}
	stop.Store(true)
	wg.Wait()
}

func itoa(i int) string {
	return string(rune('a'+i/26/26%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26))
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	cfg := checkFixture(t, Config{})
	to := filepath.Join(t.TempDir(), "backup.db")
	backupRev, err := Backup(ctx, cfg.Path, to)
	if err != nil {
		t.Fatalf("Backup() error = %v", err)
	}
	// The daemon goes on after the backup: these revisions were handed out.
	db, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		mustCreate(t, db, key("after", "o"+itoa(i)), "1")
	}
	lastRev := db.Rev()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	res, err := Restore(ctx, to, cfg.Path, 1000)
	if err != nil {
		t.Fatalf("Restore() error = %v", err)
	}
	if res.BackupRev != backupRev || res.ReplacedRev != lastRev || res.Rev != lastRev+1000 {
		t.Errorf("Restore() = %+v, want backup %d, replaced %d, rev %d", res, backupRev, lastRev, lastRev+1000)
	}
	r, err := Check(ctx, cfg)
	if err != nil || !r.OK() || r.Objects != 4 || r.ChangeLogRows != 0 {
		t.Errorf("Check(restored) = %+v, %v; want 4 objects, no change log, no findings", r, err)
	}

	db = openTest(t, cfg)
	var autoVacuum int
	if err := db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
		return conn.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&autoVacuum)
	}); err != nil || autoVacuum != 2 {
		t.Errorf("restored auto_vacuum = %d (%v), want 2 (incremental), so compaction returns space", autoVacuum, err)
	}
	if db.Rev() != res.Rev || db.CompactedRev() != res.Rev {
		t.Errorf("restored Rev() = %d, CompactedRev() = %d, want both %d", db.Rev(), db.CompactedRev(), res.Rev)
	}
	if _, err := db.Get(ctx, key("after", "o"+itoa(0))); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(written after the backup) error = %v, want ErrNotFound", err)
	}
	o, err := db.Get(ctx, key("ns", "e"))
	if err != nil {
		t.Fatalf("Get(backed up) error = %v", err)
	}
	wantStamped(t, o)
	created := mustCreate(t, db, key("new", "x"), "1")
	if created.ModRev <= lastRev {
		t.Errorf("first revision after restore = %d, want above %d", created.ModRev, lastRev)
	}
	for _, old := range []int64{backupRev, lastRev} {
		if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: old}); !errors.Is(err, ErrCompacted) {
			t.Errorf("List(at old revision %d) error = %v, want ErrCompacted", old, err)
		}
	}
}
