package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// testTransformer stores a value as "k8s:enc:test:v1:<key>:" followed by
// the value reversed. It writes with its first key and reads all.
type testTransformer struct{ keys []string }

func (tt testTransformer) ToStorage(path string, v []byte) ([]byte, error) {
	out := fmt.Appendf(nil, "k8s:enc:test:v1:%s:", tt.keys[0])
	r := slices.Clone(v)
	slices.Reverse(r)
	return append(out, r...), nil
}

func (tt testTransformer) FromStorage(path string, stored []byte) ([]byte, bool, error) {
	for i, k := range tt.keys {
		if rest, ok := bytes.CutPrefix(stored, fmt.Appendf(nil, "k8s:enc:test:v1:%s:", k)); ok {
			out := slices.Clone(rest)
			slices.Reverse(out)
			return out, i > 0, nil
		}
	}
	return nil, false, errors.New("no matching prefix found")
}

func transformerConfig(path string, keys ...string) Config {
	return Config{Path: path, ObjectCacheBytes: -1, Transformers: func(resource string) Transformer {
		if resource == "configmaps" {
			return testTransformer{keys: keys}
		}
		return nil
	}}
}

// rawValues returns every value and prev_value in the objects table and
// the change log, as stored.
func rawValues(t *testing.T, db *DB) [][]byte {
	t.Helper()
	var out [][]byte
	err := db.runOnWriter(context.Background(), func(ctx context.Context, conn *sql.Conn) error {
		for _, q := range []string{"SELECT value FROM objects", "SELECT value FROM changelog", "SELECT prev_value FROM changelog WHERE prev_value IS NOT NULL"} {
			rows, err := conn.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			for rows.Next() {
				var v []byte
				if err := rows.Scan(&v); err != nil {
					rows.Close()
					return err
				}
				out = append(out, v)
			}
			rows.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDB_Transformers(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, transformerConfig(filepath.Join(t.TempDir(), "state.db"), "k1"))
	first := mustCreate(t, db, key("ns", "a"), "created")
	cur, err := db.Get(ctx, key("ns", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, key("ns", "a"), Preconditions{ModRev: cur.ModRev}, obj("ns", "a", "updated")); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, key("ns", "b"), "deleted")
	if _, err := db.Delete(ctx, key("ns", "b"), Preconditions{}); err != nil {
		t.Fatal(err)
	}

	raws := rawValues(t, db)
	// One object; four change-log rows; two previous states (update, delete).
	if len(raws) != 7 {
		t.Errorf("stored values: got %d, want 7", len(raws))
	}
	for _, v := range raws {
		if !bytes.HasPrefix(v, []byte("k8s:enc:test:v1:k1:")) {
			t.Errorf("stored value not transformed: %q", v)
		}
	}

	got, err := db.Get(ctx, key("ns", "a"))
	if err != nil || !bytes.Contains(got.Value, []byte(`"updated"`)) {
		t.Errorf("Get: got %s, %v; want the updated value in the clear", got.Value, err)
	}
	wantStamped(t, got)
	list, err := db.List(ctx, ListOptions{Resource: "configmaps"})
	if err != nil || len(list.Objects) != 1 || !bytes.Contains(list.Objects[0].Value, []byte(`"updated"`)) {
		t.Errorf("List: got %+v, %v", list, err)
	}
	past, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: first.ModRev})
	if err != nil || len(past.Objects) != 1 || !bytes.Contains(past.Objects[0].Value, []byte(`"created"`)) {
		t.Errorf("List at the first revision: got %+v, %v", past, err)
	}
	evs, err := db.Changes(ctx, first.ModRev-1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var plain []string
	for _, ev := range evs {
		plain = append(plain, fmt.Sprintf("%d %s prev=%s", ev.Type, ev.Object.Value, ev.PrevValue))
	}
	if len(evs) != 4 || !bytes.Contains(evs[1].PrevValue, []byte(`"created"`)) || !bytes.Contains(evs[3].Object.Value, []byte(`"deleted"`)) {
		t.Errorf("Changes: got %q, want 4 events in the clear", plain)
	}
}

func TestDB_GuaranteedUpdate_RewritesStale(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	old, err := Open(ctx, transformerConfig(path, "old"))
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, old, key("ns", "a"), "v")
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db := openTest(t, transformerConfig(path, "new", "old"))
	same := func(cur Object) ([]byte, error) { return cur.Value, nil }
	before, err := db.Get(ctx, key("ns", "a"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := db.GuaranteedUpdate(ctx, key("ns", "a"), same)
	if err != nil {
		t.Fatal(err)
	}
	if after.ModRev == before.ModRev {
		t.Errorf("unchanged update of a stale value: ModRev stayed %d, want a write", after.ModRev)
	}
	raws := rawValues(t, db)
	if !bytes.HasPrefix(raws[0], []byte("k8s:enc:test:v1:new:")) {
		t.Errorf("object after rewrite stored as %q, want the new key", raws[0])
	}
	again, err := db.GuaranteedUpdate(ctx, key("ns", "a"), same)
	if err != nil {
		t.Fatal(err)
	}
	if again.ModRev != after.ModRev {
		t.Errorf("unchanged update of a current value: ModRev %d -> %d, want no write", after.ModRev, again.ModRev)
	}
}

func TestDB_Get_UntransformedReadOfEncrypted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	enc, err := Open(ctx, transformerConfig(path, "k1"))
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, enc, key("ns", "a"), "v")
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	db := openTest(t, Config{Path: path, ObjectCacheBytes: -1})
	_, err = db.Get(ctx, key("ns", "a"))
	var te *TransformError
	if !errors.As(err, &te) || err.Error() != "identity transformer tried to read encrypted data" || te.Path != "/registry/configmaps/ns/a" {
		t.Errorf("Get without transformer: got %v, want identity transformer tried to read encrypted data", err)
	}
	other := openTest(t, transformerConfig(path, "k2")) // reads only, beside db
	if _, err := other.List(ctx, ListOptions{Resource: "configmaps"}); err == nil ||
		err.Error() != `unable to transform key "/registry/configmaps/ns/a": no matching prefix found` {
		t.Errorf("List with another key: got %v", err)
	}
}

func TestDB_RewriteStale(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	old, err := Open(ctx, transformerConfig(path, "old"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2*rewritePage + 3 { // more than two pages
		mustCreate(t, old, key(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("o%d", i)), "v")
	}
	if _, err := old.Create(ctx, Key{Resource: "secrets", Namespace: "ns", Name: "plain"}, "uid-plain", obj("ns", "plain", "v")); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db := openTest(t, transformerConfig(path, "new", "old"))
	rewritten, checked, err := db.RewriteStale(ctx)
	if err != nil || rewritten != 2*rewritePage+3 || checked != 2*rewritePage+3 {
		t.Errorf("RewriteStale: got %d of %d, %v; want %d of %d", rewritten, checked, err, 2*rewritePage+3, 2*rewritePage+3)
	}
	for _, o := range mustList(t, db, "configmaps") {
		if db.storedStale(ctx, o.Key) {
			t.Errorf("%v still stored under the old key", o.Key)
		}
	}
	if rewritten, _, err := db.RewriteStale(ctx); err != nil || rewritten != 0 {
		t.Errorf("RewriteStale again: rewrote %d, %v; want 0", rewritten, err)
	}
}

func mustList(t *testing.T, db *DB, resource string) []Object {
	t.Helper()
	res, err := db.List(context.Background(), ListOptions{Resource: resource})
	if err != nil {
		t.Fatal(err)
	}
	return res.Objects
}
