package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// dumpAll returns every object Dump reports, and its revision.
func dumpAll(t *testing.T, d Dumper) (map[Key]Object, int64) {
	t.Helper()
	got := map[Key]Object{}
	rev, err := d.Dump(context.Background(), func(o Object) error {
		if _, dup := got[o.Key]; dup {
			t.Errorf("Dump reported %v twice", o.Key)
		}
		got[o.Key] = o
		return nil
	})
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	return got, rev
}

// unstamped is value with its resourceVersion set to 0, for comparing
// values across stores.
func unstamped(t *testing.T, value []byte) string {
	t.Helper()
	v, err := StampRevision(value, 0)
	if err != nil {
		t.Fatalf("stamp %s: %v", value, err)
	}
	return string(v)
}

func TestDB_Dump(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, transformerConfig(filepath.Join(t.TempDir(), "state.db"), "k1"))
	for _, k := range []Key{key("a", "x"), key("a-b", "x"), key("b", "y"), key("b", "z")} {
		mustCreate(t, db, k, "1")
	}
	lease := Key{Resource: "leases.coordination.k8s.io", Namespace: "kube-system", Name: "l"}
	if _, err := db.Create(ctx, lease, "uid-l", obj("kube-system", "l", "1")); err != nil {
		t.Fatal(err)
	}
	ns := Key{Resource: "namespaces", Name: "a"}
	if _, err := db.Create(ctx, ns, "uid-ns", []byte(`{"metadata":{"name":"a","uid":"uid-ns"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, key("b", "y"), Preconditions{}, obj("b", "y", "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(ctx, key("b", "z"), Preconditions{}); err != nil {
		t.Fatal(err)
	}

	got, rev := dumpAll(t, db)
	if rev != db.Rev() {
		t.Errorf("Dump rev = %d, want the current revision %d", rev, db.Rev())
	}
	want := []Key{key("a", "x"), key("a-b", "x"), key("b", "y"), lease, ns}
	if len(got) != len(want) {
		t.Errorf("Dump reported %d objects, want %d: %v", len(got), len(want), got)
	}
	for _, k := range want {
		o, ok := got[k]
		if !ok {
			t.Errorf("Dump did not report %v", k)
			continue
		}
		g, err := db.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get(%v): %v", k, err)
		}
		// Values as Get returns them: decoded (configmaps are
		// transformed here) and stamped with their own revision.
		if string(o.Value) != string(g.Value) || o.UID != g.UID || o.ModRev != g.ModRev || o.CreateRev != g.CreateRev {
			t.Errorf("Dump %v = %+v %s, want Get's %+v %s", k, o, o.Value, g, g.Value)
		}
	}
}

func TestDB_Dump_stopsOnError(t *testing.T) {
	db := openTest(t, Config{})
	mustCreate(t, db, key("a", "x"), "1")
	mustCreate(t, db, key("a", "y"), "1")
	stop := errors.New("stop")
	calls := 0
	_, err := db.Dump(context.Background(), func(Object) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Dump = %v after %d calls, want fn's error after 1", err, calls)
	}
}

// TestDB_Dump_pages has more values than one page holds.
func TestDB_Dump_pages(t *testing.T) {
	db := openTest(t, Config{})
	big := make([]byte, 600<<10)
	for i := range big {
		big[i] = 'x'
	}
	const n = 20 // 12 MiB: three pages of dumpPageBytes
	for i := range n {
		k := key("ns", string(rune('a'+i)))
		if _, err := db.Create(context.Background(), k, "u", []byte(`{"metadata":{"name":"`+k.Name+`"},"data":{"v":"`+string(big)+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := dumpAll(t, db)
	if len(got) != n {
		t.Errorf("Dump reported %d objects, want %d", len(got), n)
	}
}

func TestImporter_Finish(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Config{})
	for i, k := range []Key{key("a", "x"), key("a-b", "x"), key("b", "y"), {Resource: "namespaces", Name: "a"}} {
		if _, err := src.Create(ctx, k, "uid-"+k.Name, obj(k.Namespace, k.Name, "1")); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := src.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, "2")); err != nil {
				t.Fatal(err)
			}
		}
	}
	srcObjects, srcRev := dumpAll(t, src)

	dir := t.TempDir()
	path := filepath.Join(dir, "edgeapi.db")
	cfg := transformerConfig(path, "k1")
	const afterRev = 1000 // as if the source had handed out that many
	im, err := NewImporter(ctx, cfg, afterRev)
	if err != nil {
		t.Fatalf("NewImporter: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database at %s before Finish: %v", path, err)
	}
	for _, o := range srcObjects {
		if err := im.Create(ctx, o); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	res, err := im.Finish(ctx)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if res.Objects != int64(len(srcObjects)) || res.AfterRev != afterRev || res.Rev != afterRev+1+int64(len(srcObjects)) {
		t.Errorf("Finish = %+v, want %d objects after %d, rev %d", res, len(srcObjects), afterRev, afterRev+1+len(srcObjects))
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 1 || names[0] != "edgeapi.db" {
		t.Errorf("files after Finish = %v, want just edgeapi.db", names)
	}

	db := openTest(t, cfg)
	if db.Rev() != res.Rev || db.CompactedRev() != res.Rev {
		t.Errorf("imported rev %d compacted %d, want both %d", db.Rev(), db.CompactedRev(), res.Rev)
	}
	got, rev := dumpAll(t, db)
	if rev != res.Rev || len(got) != len(srcObjects) {
		t.Errorf("imported dump: %d objects at %d, want %d at %d", len(got), rev, len(srcObjects), res.Rev)
	}
	for k, s := range srcObjects {
		o := got[k]
		if o.UID != s.UID || unstamped(t, o.Value) != unstamped(t, s.Value) {
			t.Errorf("imported %v = uid %q %s, want uid %q %s", k, o.UID, o.Value, s.UID, s.Value)
		}
		if o.ModRev <= afterRev+1 || o.CreateRev != o.ModRev {
			t.Errorf("imported %v at revisions %d/%d, want one revision above %d", k, o.CreateRev, o.ModRev, afterRev+1)
		}
		wantStamped(t, o)
	}
	// Every revision the source handed out, and the move's own, is
	// compacted: old watches and continue tokens get 410 Gone.
	for _, old := range []int64{srcRev, afterRev, afterRev + 1, res.Rev - 1} {
		if _, err := db.Changes(ctx, old, 0); !errors.Is(err, ErrCompacted) {
			t.Errorf("Changes(%d) = %v, want ErrCompacted", old, err)
		}
		if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: old}); !errors.Is(err, ErrCompacted) {
			t.Errorf("List at %d = %v, want ErrCompacted", old, err)
		}
	}
	// The target's transformer encoded what was imported (the three
	// ConfigMaps), and the change log of the load is gone.
	encoded := 0
	for _, v := range rawValues(t, db) {
		if bytes.HasPrefix(v, encryptedPrefix) {
			encoded++
		}
	}
	if raw := rawValues(t, db); encoded != 3 || len(raw) != len(srcObjects) {
		t.Errorf("stored values: %d encoded of %d, want 3 of %d", encoded, len(raw), len(srcObjects))
	}
}

func TestNewImporter_existing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edgeapi.db")
	db := openTestPath(t, path)
	mustCreate(t, db, key("a", "x"), "1")
	if _, err := NewImporter(context.Background(), Config{Path: path}, 5); err == nil {
		t.Errorf("NewImporter over an existing database: no error")
	}
}

func TestImporter_Abort(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "edgeapi.db")
	im, err := NewImporter(ctx, Config{Path: path}, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Create(ctx, Object{Key: key("a", "x"), UID: "u", Value: obj("a", "x", "1")}); err != nil {
		t.Fatal(err)
	}
	if err := im.Create(ctx, Object{Key: key("a", "x"), UID: "u", Value: obj("a", "x", "1")}); !errors.Is(err, ErrExists) {
		t.Errorf("second Create of one key = %v, want ErrExists", err)
	}
	im.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files after Abort: %v", entries)
	}
}
