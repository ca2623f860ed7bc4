package store

import (
	"context"
	"io"
)

// The interfaces below are what a backend may offer beyond Store. The
// SQLite store (*DB) implements them all; the etcd store (store/etcdstore)
// those that make sense against a cluster. Callers type-assert and leave
// the feature out when a backend lacks it, so Store stays the only thing
// every backend must implement.

// StatsReporter reports the store's figures: revisions, and for SQLite
// the group commit's counters, the file and WAL sizes and the space state.
type StatsReporter interface {
	Stats() Stats
}

// ObjectCounter calls fn with the number of stored objects of each
// resource, as apiserver_storage_objects reports them. It returns false
// when no count is known yet.
type ObjectCounter interface {
	ObjectCounts(fn func(resource string, n int64)) bool
}

// Prober checks that the store still serves: for SQLite, that its writer
// commits; for etcd, that the cluster answers a read. It returns nil when
// the store is alive.
type Prober interface {
	Alive(ctx context.Context) error
}

// BackupStreamer writes a consistent copy of the whole store to the
// writer start returns, once it knows the copy's revision and size (see
// DB.BackupStream).
type BackupStreamer interface {
	BackupStream(ctx context.Context, start func(rev, size int64) (io.Writer, error)) (rev int64, err error)
}

var (
	_ BackupStreamer = (*DB)(nil)
	_ StatsReporter  = (*DB)(nil)
	_ ObjectCounter  = (*DB)(nil)
	_ Prober         = (*DB)(nil)
)
