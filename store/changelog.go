package store

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// This file reads the change log: one row per committed write, keyed by
// revision, kept until compaction. It serves watches (Changes) and lists
// at past revisions (pastStates).

// sqlFirstChanges returns, for every key of one resource changed after a
// revision, the first change after it: its prev_* columns are the key's
// state at that revision (none when the first change created the key).
const sqlFirstChanges = `SELECT c.type, c.namespace, c.name, c.uid, c.create_rev, c.prev_mod_rev, c.prev_value
FROM changelog AS c
WHERE c.rev IN (
	SELECT MIN(rev) FROM changelog
	WHERE resource = ? AND rev > ?
	GROUP BY namespace, name)
ORDER BY c.namespace, c.name`

// pastStates returns the objects of resource (in namespace if set) after
// (afterNS, afterName), as they were at rev, that have changed since rev:
// the rest of the state at rev is the current rows whose mod_rev <= rev.
//
// For a key changed after rev, the first change after rev tells its state
// at rev: a create means the key did not exist then; an update or delete
// carries the state before it in prev_value, with its revision in
// prev_mod_rev. The caller must have checked rev against the compacted
// revision in the same transaction.
func pastStates(ctx context.Context, tx *sql.Tx, resource, namespace, afterNS, afterName string, rev int64,
	decodeInList func(Key, []byte) ([]byte, error)) ([]Object, error) {
	rows, err := tx.QueryContext(ctx, sqlFirstChanges, resource, rev)
	if err != nil {
		return nil, translate("read change log", err)
	}
	defer rows.Close()
	after := Key{Namespace: afterNS, Name: afterName}
	var out []Object
	for rows.Next() {
		var (
			typ  EventType
			obj  Object
			prev []byte
		)
		obj.Key.Resource = resource
		if err := rows.Scan(&typ, &obj.Key.Namespace, &obj.Key.Name, &obj.UID, &obj.CreateRev, &obj.ModRev, &prev); err != nil {
			return nil, translate("read change log", err)
		}
		obj.Key.Namespace = plainNamespace(obj.Key.Namespace)
		if typ == Added || (namespace != "" && obj.Key.Namespace != namespace) || !keyLess(after, obj.Key) {
			continue
		}
		if obj.Value, err = decodeInList(obj.Key, prev); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	if err := rows.Err(); err != nil {
		return nil, translate("read change log", err)
	}
	// SQLite sorts the stored namespace+"/" with memcmp (BINARY
	// collation), which keyLess matches; keep the order explicit all the
	// same, since mergeList relies on it.
	if !slices.IsSortedFunc(out, func(a, b Object) int { return compareKeys(a.Key, b.Key) }) {
		slices.SortFunc(out, func(a, b Object) int { return compareKeys(a.Key, b.Key) })
	}
	return out, nil
}

func compareKeys(a, b Key) int {
	switch {
	case keyLess(a, b):
		return -1
	case keyLess(b, a):
		return 1
	}
	return 0
}

const sqlChanges = `SELECT rev, type, resource, namespace, name, uid, create_rev, value, prev_value
FROM changelog WHERE rev > ? ORDER BY rev LIMIT ?`

// sqlChangeKeys is sqlChanges without the values.
const sqlChangeKeys = `SELECT rev, type, resource, namespace, name, uid, create_rev, NULL, NULL
FROM changelog WHERE rev > ? ORDER BY rev LIMIT ?`

// Changes returns the committed writes with revision > afterRev, in
// revision order, at most limit of them (limit <= 0: all), as the events
// Subscribe delivered for them. A watch starting at afterRev reads from
// here until it catches up with the subscription.
//
// ErrCompacted when afterRev is below the compacted revision (the log no
// longer holds every change after it); ErrFutureRev when afterRev is above
// the current revision.
func (db *DB) Changes(ctx context.Context, afterRev int64, limit int) ([]Event, error) {
	return db.changes(ctx, afterRev, limit, sqlChanges)
}

// ChangeKeys is Changes without the values: each event has its type,
// revisions, key and UID, and no Value or PrevValue. It reads no value
// from the database.
func (db *DB) ChangeKeys(ctx context.Context, afterRev int64, limit int) ([]Event, error) {
	return db.changes(ctx, afterRev, limit, sqlChangeKeys)
}

func (db *DB) changes(ctx context.Context, afterRev int64, limit int, query string) ([]Event, error) {
	start := time.Now()
	var events []Event
	err := db.readTx(ctx, "read changes", func(tx *sql.Tx, cur, compacted int64) error {
		switch {
		case afterRev < compacted:
			return ErrCompacted
		case afterRev > cur:
			return ErrFutureRev
		case afterRev == cur:
			return nil
		}
		n := int64(limit)
		if n <= 0 {
			n = -1
		} else {
			events = make([]Event, 0, min(limit, 1024))
		}
		rows, err := tx.QueryContext(ctx, query, afterRev, n)
		if err != nil {
			return translate("read change log", err)
		}
		defer rows.Close()
		for rows.Next() {
			var ev Event
			o := &ev.Object
			if err := rows.Scan(&o.ModRev, &ev.Type, &o.Key.Resource, &o.Key.Namespace, &o.Key.Name,
				&o.UID, &o.CreateRev, &o.Value, &ev.PrevValue); err != nil {
				return translate("read change log", err)
			}
			o.Key.Namespace = plainNamespace(o.Key.Namespace)
			if o.Value, err = db.decodeInList(o.Key, o.Value); err != nil {
				return err
			}
			if ev.PrevValue, err = db.decodeInList(o.Key, ev.PrevValue); err != nil {
				return err
			}
			events = append(events, ev)
		}
		if err := rows.Err(); err != nil {
			return translate("read change log", err)
		}
		return nil
	})
	db.observeSince(OpChanges, "", start, err)
	if err != nil {
		return nil, err
	}
	return events, nil
}
