package httpapi

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/edgeapi/edgeapi/store"
)

// openTestStore opens a store in a temporary directory, closed when the
// test ends.
func openTestStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(t.TempDir(), "test.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
