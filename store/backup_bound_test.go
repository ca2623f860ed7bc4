package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDB_Backup_walBound checks that a backup inside the daemon gives up
// once the WAL passes its bound, leaving no file behind, and that the
// store keeps working; with the bound back at its default, the backup
// succeeds.
func TestDB_Backup_walBound(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Config{})
	pad := strings.Repeat("x", 4<<10)
	for i := range 300 {
		mustCreate(t, db, key("ns", "o"+itoa(i)), pad)
	}
	if fileSizes(db.cfg.Path).WAL == 0 {
		t.Fatal("no WAL after 300 creates")
	}
	// A bound the WAL is already past: the first look gives up. (The
	// bound is max(the WAL's size at the start, the limit), so shrink the
	// start by truncating the WAL first.)
	if err := db.truncateWAL(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		mustCreate(t, db, key("ns2", "o"+itoa(i)), pad)
	}
	oldMin, oldPoll := minBackupWALLimit, backupPoll
	t.Cleanup(func() { minBackupWALLimit, backupPoll = oldMin, oldPoll })
	minBackupWALLimit, backupPoll = 0, time.Millisecond

	dir := t.TempDir()
	to := filepath.Join(dir, "b.db")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // keeps the WAL growing while the backup runs
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.Create(ctx, key("grow", "o"+itoa(i%17000)), "u", obj("grow", "o"+itoa(i%17000), pad)); err != nil && !errors.Is(err, ErrExists) {
				t.Errorf("Create() during backup: %v", err)
				return
			}
		}
	}()
	var err error
	for range 20 { // a backup that finishes before the first look is not aborted: try again
		if _, err = db.Backup(ctx, to); err != nil {
			break
		}
		os.Remove(to)
	}
	close(stop)
	<-done
	if !errors.Is(err, ErrBackupAborted) || !strings.Contains(err.Error(), "the WAL grew to") {
		t.Fatalf("Backup() with a WAL past its bound: error %v, want ErrBackupAborted naming the WAL", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("aborted backup left %v", entries)
	}
	mustCreate(t, db, key("ns", "after"), "1")

	minBackupWALLimit = oldMin
	if _, err := db.Backup(ctx, to); err != nil {
		t.Fatalf("Backup() within the bound: %v", err)
	}
	if r, err := Check(ctx, Config{Path: to}); err != nil || !r.OK() {
		t.Errorf("Check(backup) = %+v, %v", r, err)
	}
}
