package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// etcdKeyLess is the order under test, spelled out: the bytes of the keys
// kube-apiserver stores in etcd, "<namespace>/<name>" below the resource
// prefix.
func etcdKeyLess(a, b Key) bool {
	ka, kb := a.Name, b.Name
	if a.Namespace != "" {
		ka = a.Namespace + "/" + a.Name
	}
	if b.Namespace != "" {
		kb = b.Namespace + "/" + b.Name
	}
	return ka < kb
}

func TestKeyLess(t *testing.T) {
	tests := []struct {
		a, b Key
		want bool
	}{
		{key("a-b", "x"), key("a", "x"), true},
		{key("a", "x"), key("a-b", "x"), false},
		{key("a.b", "x"), key("a", "x"), true},
		{key("a", "x"), key("a0", "x"), true},
		{key("a0", "x"), key("ab", "x"), true},
		{key("a", "zzz"), key("a-b", "a"), false},
		{key("a", "x"), key("a", "y"), true},
		{key("a", "x"), key("a", "x"), false},
		{key("", "x"), key("a", "a"), true},
	}
	for _, tt := range tests {
		if got := keyLess(tt.a, tt.b); got != tt.want {
			t.Errorf("keyLess(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	// Random namespaces and names from the bytes around '/': keyLess is
	// etcd's order for any two keys of a namespaced resource.
	alphabet := "-.0az"
	word := func(r *rand.Rand) string {
		b := make([]byte, 1+r.IntN(4))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b := key(word(r), word(r)), key(word(r), word(r))
		if got, want := keyLess(a, b), etcdKeyLess(a, b); got != want {
			t.Fatalf("keyLess(%v, %v) = %v, want %v", a, b, got, want)
		}
	}
}

// orderNamespaces are created in this order; kube-apiserver on etcd lists
// them a-b, a, a0, ab.
var orderNamespaces = []string{"a", "a-b", "ab", "a0"}

// createOrderFixture creates ConfigMaps x and y in each of
// orderNamespaces and returns their keys in etcd key order.
func createOrderFixture(t *testing.T, db *DB) []string {
	t.Helper()
	var want []string
	for _, ns := range orderNamespaces {
		for _, name := range []string{"x", "y"} {
			mustCreate(t, db, key(ns, name), "1")
		}
	}
	for _, ns := range []string{"a-b", "a", "a0", "ab"} {
		want = append(want, ns+"/x", ns+"/y")
	}
	return want
}

// listPages lists opts in pages of limit, checking each page's Remaining
// against the objects still to come, and returns every page's keys.
func listPages(t *testing.T, db *DB, opts ListOptions, limit int) []string {
	t.Helper()
	var pages [][]string
	opts.Limit = limit
	for {
		if len(pages) > 100 {
			t.Fatalf("List(%+v) in pages of %d: more than 100 pages", opts, limit)
		}
		res, err := db.List(context.Background(), opts)
		if err != nil {
			t.Fatalf("List(%+v) error = %v", opts, err)
		}
		pages = append(pages, names(res.Objects))
		if !res.More {
			if res.Remaining != 0 {
				t.Errorf("last page after %s/%s: Remaining = %d, want 0", opts.AfterNamespace, opts.AfterName, res.Remaining)
			}
			break
		}
		if len(res.Objects) == 0 {
			t.Fatalf("List(%+v) = no objects with More", opts)
		}
		last := res.Objects[len(res.Objects)-1].Key
		full, err := db.List(context.Background(), ListOptions{Resource: opts.Resource, Namespace: opts.Namespace,
			Rev: res.Rev, AfterNamespace: last.Namespace, AfterName: last.Name})
		if err != nil {
			t.Fatal(err)
		}
		if res.Remaining != int64(len(full.Objects)) {
			t.Errorf("page ending %v: Remaining = %d, want %d", last, res.Remaining, len(full.Objects))
		}
		opts.Rev, opts.AfterNamespace, opts.AfterName = res.Rev, last.Namespace, last.Name
	}
	return slices.Concat(pages...)
}

func TestDB_ListOrder(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	want := createOrderFixture(t, db)
	rev := db.Rev()

	check := func(t *testing.T, opts ListOptions, want []string) {
		t.Helper()
		opts.Resource = "configmaps"
		res, err := db.List(ctx, opts)
		if err != nil {
			t.Fatalf("List() error = %v", err)
		}
		if got := names(res.Objects); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("List(%+v) = %v, want %v", opts, got, want)
		}
		for _, limit := range []int{1, 3} {
			if got := listPages(t, db, opts, limit); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("List(%+v) in pages of %d = %v, want %v", opts, limit, got, want)
			}
		}
	}

	t.Run("current", func(t *testing.T) {
		check(t, ListOptions{}, want)
		check(t, ListOptions{AfterNamespace: "a-b", AfterName: "y"}, want[2:])
		check(t, ListOptions{AfterNamespace: "a", AfterName: "zz"}, want[4:])
	})
	t.Run("namespace after another", func(t *testing.T) {
		// a-b/… comes before a/…: a list of a after it starts at a's first.
		check(t, ListOptions{Namespace: "a", AfterNamespace: "a-b", AfterName: "y"}, []string{"a/x", "a/y"})
		// a/x comes after all of a-b.
		check(t, ListOptions{Namespace: "a-b", AfterNamespace: "a", AfterName: "x"}, nil)
		check(t, ListOptions{Namespace: "a0", AfterNamespace: "a", AfterName: "y"}, []string{"a0/x", "a0/y"})
	})

	// Changes after rev: a delete, an update, and creates in namespaces
	// that sort among the others (a-a and a.b before a/).
	if _, err := db.Delete(ctx, key("a", "x"), Preconditions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, key("a0", "y"), Preconditions{}, obj("a0", "y", "2")); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, key("a-a", "x"), "1")
	mustCreate(t, db, key("a.b", "x"), "1")

	t.Run("past revision", func(t *testing.T) {
		// Rebuilt from the change log, in the same order.
		check(t, ListOptions{Rev: rev}, want)
		check(t, ListOptions{Rev: rev, AfterNamespace: "a-b", AfterName: "x"}, want[1:])
		check(t, ListOptions{Rev: rev, Namespace: "a"}, []string{"a/x", "a/y"})
	})
	t.Run("after changes", func(t *testing.T) {
		check(t, ListOptions{}, []string{"a-a/x", "a-b/x", "a-b/y", "a.b/x", "a/y", "a0/x", "a0/y", "ab/x", "ab/y"})
	})
	t.Run("get", func(t *testing.T) {
		for _, k := range []Key{key("a-a", "x"), key("a", "y"), key("a0", "y")} {
			if o, err := db.Get(ctx, k); err != nil || o.Key != k {
				t.Errorf("Get(%v) = %v, %v", k, o.Key, err)
			}
		}
	})
}

// TestOpen_migratesKeyOrder opens a database written by the schema before
// version 5, whose namespace columns hold the plain namespace, and checks
// that objects, order, past lists and the change log read as before.
func TestOpen_migratesKeyOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db := openTestPath(t, path)
	want := createOrderFixture(t, db)
	node := Key{Resource: "nodes", Name: "n1"}
	if _, err := db.Create(ctx, node, "uid-n1", obj("", "n1", "1")); err != nil {
		t.Fatal(err)
	}
	rev := db.Rev()
	if _, err := db.Delete(ctx, key("a", "x"), Preconditions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, key("a-b", "y"), Preconditions{}, obj("a-b", "y", "2")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Back to the old format, as version 4 wrote it: the namespace alone.
	corrupt(t, path,
		"UPDATE objects SET namespace = substr(namespace, 1, length(namespace) - 1) WHERE namespace != ''",
		"UPDATE changelog SET namespace = substr(namespace, 1, length(namespace) - 1) WHERE namespace != ''",
		"PRAGMA user_version = 4")
	var old []string
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := raw.Query("SELECT namespace || '/' || name FROM objects WHERE resource = 'configmaps' ORDER BY namespace, name")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		old = append(old, s)
	}
	rows.Close()
	raw.Close()
	if wantOld := []string{"a/y", "a-b/x", "a-b/y", "a0/x", "a0/y", "ab/x", "ab/y"}; fmt.Sprint(old) != fmt.Sprint(wantOld) {
		t.Fatalf("old-format rows = %v, want %v", old, wantOld)
	}

	// Check reads the old format as it is (a restore checks a backup
	// before the daemon migrates it).
	if r, err := Check(ctx, Config{Path: path}); err != nil || !r.OK() {
		t.Errorf("Check() of the version 4 database = %v, %v; want no findings", r, err)
	}

	db = openTestPath(t, path)
	var version int
	if err := db.writeConn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != len(migrations) {
		t.Errorf("user_version = %d, want %d", version, len(migrations))
	}
	res, err := db.List(ctx, ListOptions{Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(res.Objects), []string{"a-b/x", "a-b/y", "a/y", "a0/x", "a0/y", "ab/x", "ab/y"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("List() after migration = %v, want %v", got, want)
	}
	if got := listPages(t, db, ListOptions{Resource: "configmaps", Rev: rev}, 1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("List(rev %d) in pages of 1 after migration = %v, want %v", rev, got, want)
	}
	for _, k := range []Key{key("a-b", "y"), key("ab", "x"), node} {
		if o, err := db.Get(ctx, k); err != nil || o.Key != k {
			t.Errorf("Get(%v) after migration = %v, %v", k, o.Key, err)
		}
	}
	// Writes after the migration land in the same rows.
	if _, err := db.Update(ctx, key("ab", "x"), Preconditions{}, obj("ab", "x", "3")); err != nil {
		t.Errorf("Update() after migration error = %v", err)
	}
	if _, err := db.Create(ctx, key("ab", "x"), "u", obj("ab", "x", "4")); err == nil {
		t.Errorf("Create() of an object written before the migration succeeded, want ErrExists")
	}
	// A watch from before the changes reads them with plain namespaces.
	events, err := db.Changes(ctx, rev, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range events {
		got = append(got, fmt.Sprintf("%s %s/%s", ev.Type, ev.Object.Key.Namespace, ev.Object.Key.Name))
	}
	if want := []string{"DELETED a/x", "MODIFIED a-b/y", "MODIFIED ab/x"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Changes(%d) after migration = %v, want %v", rev, got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Check() error = %v", err)
	}
	if !r.OK() {
		t.Errorf("Check() after migration findings = %q, want none", r.Findings)
	}
}
