package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkFixture writes a closed database at a new path with creates,
// updates, a delete and a compaction, and returns its path and config.
func checkFixture(t *testing.T, cfg Config) Config {
	t.Helper()
	ctx := context.Background()
	cfg.Path = filepath.Join(t.TempDir(), "state.db")
	db, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		mustCreate(t, db, key("ns", n), "1")
	}
	if _, err := db.Update(ctx, key("ns", "a"), Preconditions{}, obj("ns", "a", "2")); err != nil {
		t.Fatalf("Update() error = %v", err)
	}
	if err := db.Compact(ctx, db.Rev()); err != nil {
		t.Fatalf("Compact() error = %v", err)
	}
	if _, err := db.Update(ctx, key("ns", "b"), Preconditions{}, obj("ns", "b", "2")); err != nil {
		t.Fatalf("Update() error = %v", err)
	}
	if _, err := db.Delete(ctx, key("ns", "c"), Preconditions{}); err != nil {
		t.Fatalf("Delete() error = %v", err)
	}
	mustCreate(t, db, key("ns", "e"), "1")
	if err := db.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	return cfg
}

// corrupt runs stmts on the closed database at path.
func corrupt(t *testing.T, path string, stmts ...string) {
	t.Helper()
	d, err := dsn(path)
	if err != nil {
		t.Fatal(err)
	}
	sdb, err := sql.Open("sqlite", d)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	for _, s := range stmts {
		if _, err := sdb.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		stmts []string
		want  string // a finding contains it; "" for none
	}{
		{name: "consistent"},
		{
			name:  "object without change-log row",
			stmts: []string{"DELETE FROM changelog WHERE rev = (SELECT mod_rev FROM objects WHERE name = 'e')"},
			want:  "object /registry/configmaps/ns/e: no change-log row for its revision",
		},
		{
			name:  "change-log row of another object",
			stmts: []string{"UPDATE changelog SET name = 'zz' WHERE rev = (SELECT mod_rev FROM objects WHERE name = 'e')"},
			want:  "is for another object, /registry/configmaps/ns/zz",
		},
		{
			name:  "duplicate mod revision",
			stmts: []string{"UPDATE objects SET mod_rev = (SELECT mod_rev FROM objects WHERE name = 'e') WHERE name = 'd'"},
			want:  "revisions: 1 revisions are the mod revision of more than one object",
		},
		{
			name:  "revision above the counter",
			stmts: []string{"UPDATE meta SET value = value - 1 WHERE key = 'rev'"},
			want:  "is above the current revision",
		},
		{
			name:  "value does not decode",
			stmts: []string{"UPDATE objects SET value = CAST('k8s:enc:aescbc:v1:x:garbage' AS BLOB) WHERE name = 'd'"},
			want:  "object /registry/configmaps/ns/d: value does not decode: identity transformer tried to read encrypted data",
		},
		{
			name:  "value not JSON",
			stmts: []string{"UPDATE objects SET value = CAST('not json' AS BLOB) WHERE name = 'd'"},
			want:  "object /registry/configmaps/ns/d: value is not a JSON object with metadata",
		},
		{
			name:  "wrong resourceVersion",
			stmts: []string{`UPDATE objects SET value = CAST(replace(CAST(value AS TEXT), '"resourceVersion":"', '"resourceVersion":"9') AS BLOB) WHERE name = 'd'`},
			want:  "object /registry/configmaps/ns/d: value's resourceVersion is 9",
		},
		{
			name:  "change-log value with wrong resourceVersion",
			stmts: []string{`UPDATE changelog SET value = CAST(replace(CAST(value AS TEXT), '"resourceVersion":"', '"resourceVersion":"9') AS BLOB) WHERE type = 3`},
			want:  "(DELETED /registry/configmaps/ns/c): value's resourceVersion is 9",
		},
		{
			// As the schema before version 5 stored it: out of key order.
			name:  "namespace stored without its slash",
			stmts: []string{"UPDATE objects SET namespace = 'ns' WHERE name = 'd'"},
			want:  `object /registry/configmaps/ns/d: stored namespace "ns" is not a namespace followed by /`,
		},
		{
			name:  "change-log namespace stored without its slash",
			stmts: []string{"UPDATE changelog SET namespace = 'ns' WHERE type = 3"},
			want:  `(DELETED /registry/configmaps/ns/c): stored namespace "ns" is not a namespace followed by /`,
		},
		{
			name:  "finished compaction above scheduled",
			stmts: []string{"UPDATE meta SET value = value + 1 WHERE key = 'finished_compact_rev'"},
			want:  "compaction marker: finished compaction revision",
		},
		{
			name:  "change-log rows below the finished compaction",
			stmts: []string{"INSERT INTO changelog SELECT 1, 1, resource, namespace, name, uid, 1, 0, value, NULL FROM objects WHERE name = 'd'"},
			want:  "compaction marker: 1 change-log rows (from revision 1) are at or below the finished compaction revision",
		},
		{
			name:  "page corruption found by integrity_check",
			stmts: []string{"PRAGMA writable_schema = ON", "UPDATE sqlite_schema SET rootpage = 1 WHERE name = 'changelog_resource_rev'"},
			want:  "sqlite integrity_check:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := checkFixture(t, Config{})
			corrupt(t, cfg.Path, tt.stmts...)
			r, err := Check(ctx, cfg)
			if err != nil {
				t.Fatalf("Check() error = %v", err)
			}
			if r.Objects != 4 && !strings.HasPrefix(tt.want, "sqlite") {
				t.Errorf("Check() Objects = %d, want 4", r.Objects)
			}
			if tt.want == "" {
				if !r.OK() {
					t.Errorf("Check() findings = %q, want none", r.Findings)
				}
				return
			}
			found := false
			for _, f := range r.Findings {
				found = found || strings.Contains(f, tt.want)
			}
			if !found {
				t.Errorf("Check() findings = %q, want one containing %q", r.Findings, tt.want)
			}
		})
	}
}

func TestCheck_transformers(t *testing.T) {
	ctx := context.Background()
	cfg := checkFixture(t, transformerConfig("", "k1"))
	r, err := Check(ctx, cfg)
	if err != nil {
		t.Fatalf("Check() error = %v", err)
	}
	if !r.OK() {
		t.Errorf("Check() with the key findings = %q, want none", r.Findings)
	}
	r, err = Check(ctx, transformerConfig(cfg.Path, "other"))
	if err != nil {
		t.Fatalf("Check() error = %v", err)
	}
	if r.OK() || !strings.Contains(r.Findings[0], "value does not decode: no matching prefix found") {
		t.Errorf("Check() with another key findings = %q, want values that do not decode", r.Findings)
	}
}

func TestCheck_readsOnly(t *testing.T) {
	cfg := checkFixture(t, Config{})
	before, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(context.Background(), cfg); err != nil {
		t.Fatalf("Check() error = %v", err)
	}
	after, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("Check() changed the database file")
	}
}

func TestCheckWithoutKeys(t *testing.T) {
	ctx := context.Background()
	cfg := checkFixture(t, transformerConfig("", "k1"))
	r, err := CheckWithoutKeys(ctx, cfg.Path)
	if err != nil {
		t.Fatalf("CheckWithoutKeys() error = %v", err)
	}
	// 4 objects and 5 change-log values after the compaction (b's update
	// and its previous value, c's delete and its previous value, e's
	// create).
	if !r.OK() || r.Opaque != 4+5 {
		t.Errorf("CheckWithoutKeys() = findings %q, %d opaque; want none and 9 opaque", r.Findings, r.Opaque)
	}
	corrupt(t, cfg.Path, "UPDATE meta SET value = value - 1 WHERE key = 'rev'")
	if r, err := CheckWithoutKeys(ctx, cfg.Path); err != nil || r.OK() {
		t.Errorf("CheckWithoutKeys() of a damaged database = %+v, %v; want findings", r, err)
	}
}

// TestCheck_damagedPages overwrites the database file's last page with
// garbage, as a bad disk sector would, and expects SQLite's integrity
// check to be reported.
func TestCheck_damagedPages(t *testing.T) {
	cfg := checkFixture(t, Config{})
	f, err := os.OpenFile(cfg.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = 0xa5
	}
	if _, err := f.WriteAt(garbage, st.Size()-4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := Check(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Check() error = %v", err)
	}
	if r.OK() || !strings.HasPrefix(r.Findings[0], "sqlite integrity_check: ") {
		t.Errorf("Check() findings = %q, want SQLite's integrity check first", r.Findings)
	}
}
