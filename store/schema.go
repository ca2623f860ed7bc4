package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migration is one named schema statement. The schema version kept in
// PRAGMA user_version is the number of migrations applied; Open applies the
// ones after it, in order, in one transaction. Append only: never edit or
// reorder a migration that has shipped.
type migration struct {
	name string
	sql  string
}

// migrations is the schema, kine style: an ordered list of named
// CREATE ... IF NOT EXISTS statements.
var migrations = []migration{
	{
		// objects holds the current state: one row per live object. The
		// primary key's index serves Get (full key), namespaced List (prefix
		// resource, namespace) and cluster-wide List (prefix resource), all in
		// key order: from schema version 5 on, a namespaced object's
		// namespace is stored as namespace+"/" (see keyorder.go).
		name: "create table objects",
		sql: `CREATE TABLE IF NOT EXISTS objects (
	resource   TEXT    NOT NULL,
	namespace  TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	uid        TEXT    NOT NULL,
	create_rev INTEGER NOT NULL,
	mod_rev    INTEGER NOT NULL,
	value      BLOB    NOT NULL,
	PRIMARY KEY (resource, namespace, name)
)`,
	},
	{
		// changelog holds one row per committed write, keyed by its
		// revision, until compaction removes it. type is an EventType. value
		// is the state after the write (for a delete: the last state stamped
		// with the delete revision); prev_value the state before it (NULL for
		// a create) and prev_mod_rev that state's revision. uid and create_rev
		// are the object's, so an Event or a past list can be rebuilt from the
		// row alone.
		name: "create table changelog",
		sql: `CREATE TABLE IF NOT EXISTS changelog (
	rev          INTEGER PRIMARY KEY,
	type         INTEGER NOT NULL,
	resource     TEXT    NOT NULL,
	namespace    TEXT    NOT NULL,
	name         TEXT    NOT NULL,
	uid          TEXT    NOT NULL,
	create_rev   INTEGER NOT NULL,
	prev_mod_rev INTEGER NOT NULL,
	value        BLOB    NOT NULL,
	prev_value   BLOB
)`,
	},
	{
		// Past-revision lists read the changes to one resource after a
		// revision; watch reads the whole log by rev (the primary key).
		name: "create index changelog_resource_rev",
		sql:  `CREATE INDEX IF NOT EXISTS changelog_resource_rev ON changelog (resource, rev)`,
	},
	{
		// meta holds the store's counters, each an integer under a key named
		// by the meta… constants.
		name: "create table meta",
		sql: `CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID`,
	},
	{
		// Versions 5 and 6: namespaced rows store namespace+"/" instead of
		// namespace, so that the primary key sorts as etcd keys do and a
		// list across namespaces comes in kube-apiserver's order (a-b, a,
		// a0, ab; see keyorder.go). The change log too: past lists and
		// watches read keys from it.
		name: "store objects' namespace as namespace/",
		sql:  `UPDATE objects SET namespace = namespace || '/' WHERE namespace != ''`,
	},
	{
		name: "store changelog's namespace as namespace/",
		sql:  `UPDATE changelog SET namespace = namespace || '/' WHERE namespace != ''`,
	},
}

// Keys of the meta table.
const (
	// metaRev is the current revision, written in the same transaction as
	// every batch of writes.
	metaRev = "rev"
	// metaScheduledCompactRev is the revision a compaction was asked for,
	// written before it deletes anything; history at or below it is gone
	// from then on.
	metaScheduledCompactRev = "scheduled_compact_rev"
	// metaFinishedCompactRev is written when a compaction has deleted every
	// change-log row up to its revision. scheduled > finished after a crash
	// means a compaction to resume.
	metaFinishedCompactRev = "finished_compact_rev"
)

// migrate brings the schema to the newest version. conn must be the writer
// connection: the migrations run in one IMMEDIATE transaction.
func migrate(ctx context.Context, conn *sql.Conn) (from, to int, err error) {
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&from); err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	to = len(migrations)
	if from > to {
		return from, to, fmt.Errorf("read schema version: database is at version %d, newer than this binary's %d", from, to)
	}
	if from == to {
		return from, to, nil
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return from, to, fmt.Errorf("begin migration: %w", err)
	}
	for _, m := range migrations[from:] {
		if _, err := conn.ExecContext(ctx, m.sql); err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			return from, to, fmt.Errorf("migrate %q: %w", m.name, err)
		}
	}
	// PRAGMA takes no parameters; to is a small integer of our own.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", to)); err != nil {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		return from, to, fmt.Errorf("set schema version: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		return from, to, fmt.Errorf("commit migration: %w", err)
	}
	return from, to, nil
}
