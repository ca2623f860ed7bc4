package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDB_Alive(t *testing.T) {
	t.Run("idle writer answers", func(t *testing.T) {
		db := openTest(t, Config{})
		if err := db.Alive(context.Background()); err != nil {
			t.Fatalf("Alive() = %v, want nil", err)
		}
		if got, want := db.Rev(), int64(0); got != want {
			t.Errorf("Rev() after Alive = %d, want %d (Alive must not write)", got, want)
		}
	})

	t.Run("stuck writer does not answer", func(t *testing.T) {
		hook, held, release := holdWriter()
		db := openTest(t, Config{beforeBatch: hook})
		created := make(chan error, 1)
		go func() {
			_, err := db.Create(context.Background(), key("ns", "a"), "u", obj("ns", "a", ""))
			created <- err
		}()
		<-held // the writer is inside its first batch and stays there

		// The bound only keeps the test short: the writer cannot
		// answer before release, however long Alive waits.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := db.Alive(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Alive() with the writer held = %v, want context.DeadlineExceeded", err)
		}

		close(release)
		if err := <-created; err != nil {
			t.Fatalf("Create() = %v", err)
		}
		if err := db.Alive(context.Background()); err != nil {
			t.Errorf("Alive() after release = %v, want nil", err)
		}
	})

	t.Run("closed store", func(t *testing.T) {
		db := openTest(t, Config{})
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.Alive(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("Alive() after Close = %v, want ErrClosed", err)
		}
	})
}
