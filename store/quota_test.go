package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// quotaValue is an object with size bytes of data.
func quotaValue(name string, size int) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"name":%q},"data":{"pad":%q}}`, name, strings.Repeat("x", size)))
}

// fillQuota creates 8 KiB objects until one fails with ErrQuotaExceeded,
// and returns the keys created.
func fillQuota(t *testing.T, db *DB) []Key {
	t.Helper()
	var keys []Key
	for i := 0; ; i++ {
		k := key("ns", fmt.Sprint(i))
		_, err := db.Create(context.Background(), k, fmt.Sprint("uid-", i), quotaValue(k.Name, 8<<10))
		if errors.Is(err, ErrQuotaExceeded) {
			return keys
		}
		if err != nil {
			t.Fatalf("Create(%d) error = %v, want nil or ErrQuotaExceeded", i, err)
		}
		keys = append(keys, k)
		if i > 10_000 {
			t.Fatalf("created %d objects of 8 KiB under a quota of %d bytes without ErrQuotaExceeded", i, db.cfg.QuotaBytes)
		}
	}
}

// TestDB_QuotaBytes fills a store to its quota and checks what still
// works: reads, deletes and compaction; creates and updates fail with
// ErrQuotaExceeded, and succeed again once deletes and compaction have
// freed room.
func TestDB_QuotaBytes(t *testing.T) {
	const quota = 512 << 10
	db := openTest(t, Config{QuotaBytes: quota})
	ctx := context.Background()
	keys := fillQuota(t, db)
	if len(keys) == 0 {
		t.Fatal("the first create failed with ErrQuotaExceeded, want some to fit in 512 KiB")
	}
	st := db.Stats()
	if !st.OverQuota || st.QuotaExceeded != 1 || st.UsedBytes < quota || st.QuotaBytes != quota {
		t.Fatalf("Stats() OverQuota, QuotaExceeded, UsedBytes, QuotaBytes = %v, %d, %d, %d, want true, 1, >= %d, %d",
			st.OverQuota, st.QuotaExceeded, st.UsedBytes, st.QuotaBytes, quota, quota)
	}
	rev := db.Rev()
	if _, err := db.Update(ctx, keys[0], Preconditions{}, quotaValue(keys[0].Name, 10)); !errors.Is(err, ErrQuotaExceeded) {
		t.Errorf("Update() over quota error = %v, want ErrQuotaExceeded", err)
	}
	if got := db.Rev(); got != rev {
		t.Errorf("Rev() after the refused update = %d, want %d (no revision taken)", got, rev)
	}
	if _, err := db.Get(ctx, keys[0]); err != nil {
		t.Errorf("Get() over quota error = %v, want nil", err)
	}
	for _, k := range keys {
		if _, err := db.Delete(ctx, k, Preconditions{}); err != nil {
			t.Fatalf("Delete(%s) over quota error = %v, want nil", k.Name, err)
		}
	}
	// A delete keeps the object in the change log: only compaction frees it.
	if err := db.Compact(ctx, db.Rev()); err != nil {
		t.Fatalf("Compact() over quota error = %v", err)
	}
	if db.OverQuota() {
		t.Fatalf("OverQuota() after deleting everything and compacting = true, UsedBytes %d, want false", db.Stats().UsedBytes)
	}
	if _, err := db.Create(ctx, key("ns", "after"), "uid-after", quotaValue("after", 8<<10)); err != nil {
		t.Errorf("Create() after space was reclaimed error = %v, want nil", err)
	}
}

// TestDB_QuotaBytes_compactor checks that the over-quota state clears by
// itself: with the compactor running (its interval far longer than the
// test), deleting objects is enough, because every commit over quota has
// the compactor compact the history of what was deleted.
func TestDB_QuotaBytes_compactor(t *testing.T) {
	const maxRows = 20 // the quota compaction keeps 10 revisions
	db := openTest(t, Config{QuotaBytes: 512 << 10, MaxChangeLogRows: maxRows})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.RunCompactor(ctx, time.Hour)
	}()
	t.Cleanup(func() { cancel(); <-done })

	keys := fillQuota(t, db)
	if !db.OverQuota() {
		t.Fatal("OverQuota() = false after a create failed with ErrQuotaExceeded")
	}
	for _, k := range keys {
		if _, err := db.Delete(context.Background(), k, Preconditions{}); err != nil {
			t.Fatalf("Delete(%s) error = %v", k.Name, err)
		}
	}
	// Waits only for the compactor goroutine to get its turn.
	deadline := time.Now().Add(30 * time.Second)
	for db.OverQuota() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := db.Stats(); st.OverQuota {
		t.Fatalf("OverQuota() after deleting everything = true (used %d of %d bytes, compacted rev %d of %d), want it cleared by the compactor",
			st.UsedBytes, st.QuotaBytes, st.CompactedRev, st.Rev)
	}
	if _, err := db.Create(context.Background(), key("ns", "after"), "uid-after", quotaValue("after", 8<<10)); err != nil {
		t.Errorf("Create() after the quota cleared error = %v, want nil", err)
	}
}

// TestDB_QuotaBytes_none checks that without a quota nothing is measured
// or refused.
func TestDB_QuotaBytes_none(t *testing.T) {
	db := openTest(t, Config{})
	for i := range 100 {
		k := key("ns", fmt.Sprint(i))
		if _, err := db.Create(context.Background(), k, "", quotaValue(k.Name, 8<<10)); err != nil {
			t.Fatalf("Create(%d) error = %v", i, err)
		}
	}
	if st := db.Stats(); st.OverQuota || st.QuotaBytes != 0 || st.UsedBytes != 0 {
		t.Errorf("Stats() OverQuota, QuotaBytes, UsedBytes = %v, %d, %d, want false, 0, 0", st.OverQuota, st.QuotaBytes, st.UsedBytes)
	}
}

// BenchmarkDB_checkQuota measures what the quota adds to every committed
// batch: one measure of the pages in use on the writer's connection.
func BenchmarkDB_checkQuota(b *testing.B) {
	db := openTest(b, Config{QuotaBytes: 1 << 30})
	for i := range 100 {
		k := key("ns", fmt.Sprint(i))
		if _, err := db.Create(context.Background(), k, "", quotaValue(k.Name, 1<<10)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	err := db.runOnWriter(context.Background(), func(ctx context.Context, conn *sql.Conn) error {
		for b.Loop() {
			db.checkQuota(ctx)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// TestDB_checkQuota_margin checks that the over-quota state clears only
// below quotaClearPercent of the quota, not as soon as the size dips under
// it.
func TestDB_checkQuota_margin(t *testing.T) {
	db := openTest(t, Config{QuotaBytes: 1 << 30})
	mustCreate(t, db, key("ns", "a"), "")
	used := db.Stats().UsedBytes
	if used == 0 {
		t.Fatal("UsedBytes = 0 with a quota set")
	}
	steps := []struct {
		name  string
		quota int64
		want  bool
	}{
		{name: "at the quota", quota: used, want: true},
		{name: "at 98% of it", quota: used * 100 / 98, want: true},
		{name: "at 90% of it", quota: used * 100 / 90, want: false},
		{name: "at 98% again", quota: used * 100 / 98, want: false},
	}
	for _, step := range steps {
		err := db.runOnWriter(context.Background(), func(ctx context.Context, _ *sql.Conn) error {
			db.cfg.QuotaBytes = step.quota
			db.checkQuota(ctx)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := db.OverQuota(); got != step.want {
			t.Errorf("%s (used %d, quota %d): OverQuota() = %v, want %v", step.name, used, step.quota, got, step.want)
		}
	}
}
