package store

import (
	"context"
	"testing"
)

func TestOpen_UnsafeNoSync(t *testing.T) {
	db := openTest(t, Config{UnsafeNoSync: true})
	ctx := context.Background()
	var writer, ckpt string
	if err := db.writeConn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&writer); err != nil {
		t.Fatal(err)
	}
	if err := db.ckptConn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&ckpt); err != nil {
		t.Fatal(err)
	}
	if writer != "0" || ckpt != "0" {
		t.Errorf("PRAGMA synchronous = %q (writer), %q (checkpointer); want \"0\" (OFF) for both", writer, ckpt)
	}
}
