package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Alive reports whether the writer goroutine still takes work: it hands
// the writer a job that does nothing, between two batches, and waits for
// the answer until ctx ends. It reads and writes nothing. It returns nil
// when the writer answered, ErrClosed once the store is closed, and ctx's
// error, wrapped, when the writer did not answer in time: a commit that
// does not return (an fsync stuck in the kernel, a lock never released).
//
// The systemd watchdog is pinged only while Alive returns nil, so a
// writer that stopped gets the service restarted.
func (db *DB) Alive(ctx context.Context) error {
	job := writerJob{
		fn:   func(context.Context, *sql.Conn) error { return nil },
		done: make(chan error, 1),
	}
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return ErrClosed
	}
	select {
	case db.jobs <- job:
	case <-ctx.Done():
		db.closeMu.RUnlock()
		return fmt.Errorf("store writer did not take a no-op job: %w", ctx.Err())
	}
	db.closeMu.RUnlock()
	select {
	case err := <-job.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("store writer did not finish a no-op job: %w", ctx.Err())
	}
}
