package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// openTest opens a store in a fresh temporary directory and closes it when
// the test ends.
func openTest(t testing.TB, cfg Config) *DB {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "state.db")
	}
	db, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close() error = %v", err)
		}
	})
	return db
}

// obj returns a minimal object value as the HTTP layer passes it.
func obj(ns, name, data string) []byte {
	return fmt.Appendf(nil, `{"metadata":{"name":%q,"namespace":%q,"uid":"uid-%s"},"data":{"v":%q}}`, name, ns, name, data)
}

func key(ns, name string) Key { return Key{Resource: "configmaps", Namespace: ns, Name: name} }

func mustCreate(t testing.TB, db *DB, k Key, data string) Object {
	t.Helper()
	o, err := db.Create(context.Background(), k, "uid-"+k.Name, obj(k.Namespace, k.Name, data))
	if err != nil {
		t.Fatalf("Create(%v) error = %v", k, err)
	}
	return o
}

// wantStamped checks that o.Value carries o.ModRev as its resourceVersion.
func wantStamped(t testing.TB, o Object) {
	t.Helper()
	loc, err := locateRevision(o.Value)
	if err != nil || loc.insert {
		t.Fatalf("value %s has no resourceVersion (err %v)", o.Value, err)
	}
	if got, want := string(o.Value[loc.start:loc.end]), fmt.Sprintf("%q", fmt.Sprint(o.ModRev)); got != want {
		t.Errorf("resourceVersion = %s, want %s (value %s)", got, want, o.Value)
	}
}

func TestOpen_pragmas(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	tests := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"},
		{"auto_vacuum", "2"},
		{"busy_timeout", "5000"},
		{"wal_autocheckpoint", "0"}, // the checkpointer checkpoints
		{"user_version", fmt.Sprint(len(migrations))},
	}
	for _, tt := range tests {
		var got string
		if err := db.writeConn.QueryRowContext(ctx, "PRAGMA "+tt.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tt.pragma, err)
		}
		if got != tt.want {
			t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
		}
	}
	// The checkpointer's checkpoints fsync the database file.
	var sync string
	if err := db.ckptConn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if sync != "2" {
		t.Errorf("checkpointer's PRAGMA synchronous = %q, want \"2\" (FULL)", sync)
	}
	// The read pool cannot write.
	if _, err := db.readDB.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES ('x', 1)"); err == nil {
		t.Errorf("write through the read pool succeeded, want an error")
	}
}

func TestOpen_newerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openTestPath(t, path)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := Open(context.Background(), Config{Path: path}); err == nil {
		t.Errorf("Open() of a newer schema succeeded, want an error")
	}
}

func openTestPath(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	return db
}

func TestDB_Close(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openTestPath(t, path)
	ctx := context.Background()
	mustCreate(t, db, key("ns", "a"), "1")
	if err := db.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close() error = %v", err)
	}
	if _, err := db.Create(ctx, key("ns", "b"), "u", obj("ns", "b", "")); !errors.Is(err, ErrClosed) {
		t.Errorf("Create() after Close error = %v, want ErrClosed", err)
	}
	if _, err := db.Get(ctx, key("ns", "a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get() after Close error = %v, want ErrClosed", err)
	}
	if _, err := db.List(ctx, ListOptions{Resource: "configmaps"}); !errors.Is(err, ErrClosed) {
		t.Errorf("List() after Close error = %v, want ErrClosed", err)
	}
	fi, err := os.Stat(path + "-wal")
	if err == nil && fi.Size() != 0 {
		t.Errorf("WAL size after Close = %d, want 0 (checkpointed and truncated)", fi.Size())
	}
}

func TestDB_Reopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := context.Background()
	db := openTestPath(t, path)
	a := mustCreate(t, db, key("ns", "a"), "1")
	mustCreate(t, db, key("ns", "b"), "1")
	if _, err := db.Update(ctx, key("ns", "a"), Preconditions{}, obj("ns", "a", "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(ctx, key("ns", "b"), Preconditions{}); err != nil {
		t.Fatal(err)
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
	got, err := db.Get(ctx, key("ns", "a"))
	if err != nil {
		t.Fatalf("Get() after reopen error = %v", err)
	}
	if got.ModRev != 3 || got.CreateRev != a.CreateRev || got.UID != a.UID {
		t.Errorf("Get() after reopen = rev %d/%d uid %q, want 3/%d %q", got.CreateRev, got.ModRev, got.UID, a.CreateRev, a.UID)
	}
	if _, err := db.Get(ctx, key("ns", "b")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(deleted) after reopen error = %v, want ErrNotFound", err)
	}
	c := mustCreate(t, db, key("ns", "c"), "1")
	if got, want := c.ModRev, wantRev+1; got != want {
		t.Errorf("first revision after reopen = %d, want %d", got, want)
	}
	events, err := db.Changes(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(events), int(wantRev+1); got != want {
		t.Errorf("change log rows after reopen = %d, want %d", got, want)
	}
}

func TestDB_RevisionRecovery(t *testing.T) {
	// At open the revision is max(meta, change log): a meta row behind the
	// log (written by an older binary, say) must not let revisions repeat.
	path := filepath.Join(t.TempDir(), "state.db")
	db := openTestPath(t, path)
	mustCreate(t, db, key("ns", "a"), "1")
	mustCreate(t, db, key("ns", "b"), "1")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE meta SET value = 1 WHERE key = 'rev'"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db = openTestPath(t, path)
	defer db.Close()
	if got, want := db.Rev(), int64(2); got != want {
		t.Errorf("Rev() = %d, want %d", got, want)
	}
	if got, want := mustCreate(t, db, key("ns", "c"), "1").ModRev, int64(3); got != want {
		t.Errorf("next revision = %d, want %d", got, want)
	}
}

// TestOpen_SQLiteMemory: Config.SQLiteCacheBytes and SQLiteMmapBytes (the
// memory budget's share for SQLite) reach the connections, and zero is
// SQLite's own default page cache and a 32 MiB map.
func TestOpen_SQLiteMemory(t *testing.T) {
	tests := []struct {
		name                string
		cacheBytes, mmap    int
		wantCache, wantMmap int64
	}{
		{name: "defaults", wantCache: -2000, wantMmap: 32 << 20},
		{name: "budget", cacheBytes: 512 << 10, mmap: 8 << 20, wantCache: -512, wantMmap: 8 << 20},
		{name: "no map", cacheBytes: 256 << 10, mmap: -1, wantCache: -256, wantMmap: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t, Config{SQLiteCacheBytes: tt.cacheBytes, SQLiteMmapBytes: tt.mmap})
			ctx := context.Background()
			var cache, mmap int64
			if err := db.writeConn.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache); err != nil {
				t.Fatal(err)
			}
			if cache != tt.wantCache {
				t.Errorf("writer cache_size = %d, want %d", cache, tt.wantCache)
			}
			if err := db.readDB.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache); err != nil {
				t.Fatal(err)
			}
			if err := db.readDB.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&mmap); err != nil {
				t.Fatal(err)
			}
			if cache != tt.wantCache || mmap != tt.wantMmap {
				t.Errorf("reader cache_size, mmap_size = %d, %d, want %d, %d", cache, mmap, tt.wantCache, tt.wantMmap)
			}
		})
	}
}
