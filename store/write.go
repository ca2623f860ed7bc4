package store

import (
	"context"
	"errors"
	"strings"
	"time"
)

// This file is the write API: each call validates its input on the
// caller's goroutine (size, where the resourceVersion goes), then queues
// one request for the writer (groupcommit.go) and waits for the commit.

// Create stores value at key, stamped with a new revision that is both its
// CreateRev and its ModRev. ErrExists when an object is already at key;
// ErrTooLarge, ErrInvalidObject for a value the store cannot take;
// ErrNoSpace while the file system is full (see space.go); ErrClosed after
// Close. If ctx ends while the write is still queued it is withdrawn
// and ctx's error returned; once the writer has taken it, Create returns
// the commit's outcome.
func (db *DB) Create(ctx context.Context, key Key, uid string, value []byte) (Object, error) {
	if !validKey(key) {
		return Object{}, ErrInvalidObject
	}
	loc, err := db.checkValue(value)
	if err != nil {
		return Object{}, err
	}
	if db.noSpace.Load() {
		return Object{}, ErrNoSpace
	}
	if db.overQuota.Load() {
		return Object{}, ErrQuotaExceeded
	}
	r := getReq()
	r.op, r.key, r.uid, r.value, r.loc = opCreate, key, uid, value, loc
	start := time.Now()
	obj, err := db.submit(ctx, r)
	db.observeSince(OpCreate, key.Resource, start, err)
	return obj, err
}

// Update replaces the object at key with value, stamped with a new
// revision, if pre holds. CreateRev and UID are kept. ErrNotFound,
// ErrConflict (pre did not hold; nothing written), ErrTooLarge,
// ErrInvalidObject, ErrNoSpace, ErrClosed; ctx as for Create.
func (db *DB) Update(ctx context.Context, key Key, pre Preconditions, value []byte) (Object, error) {
	loc, err := db.checkValue(value)
	if err != nil {
		return Object{}, err
	}
	if db.noSpace.Load() {
		return Object{}, ErrNoSpace
	}
	if db.overQuota.Load() {
		return Object{}, ErrQuotaExceeded
	}
	r := getReq()
	r.op, r.key, r.pre, r.value, r.loc = opUpdate, key, pre, value, loc
	start := time.Now()
	obj, err := db.submit(ctx, r)
	db.observeSince(OpUpdate, key.Resource, start, err)
	return obj, err
}

// Delete removes the object at key if pre holds and returns its last state
// stamped with the delete revision (ModRev is the delete revision).
// ErrNotFound, ErrConflict, ErrClosed; ctx as for Create. Deletes commit
// while the file system is full, on the space reserve (see space.go); a
// delete gets ErrNoSpace only when that is used up too.
func (db *DB) Delete(ctx context.Context, key Key, pre Preconditions) (Object, error) {
	r := getReq()
	r.op, r.key, r.pre = opDelete, key, pre
	start := time.Now()
	obj, err := db.submit(ctx, r)
	db.observeSince(OpDelete, key.Resource, start, err)
	return obj, err
}

// GuaranteedUpdate reads the object at key (current revision, read pool),
// calls tryUpdate with it and writes the result with the read ModRev as
// precondition. When another write got in between (ErrConflict) it starts
// again from a fresh read, until ctx ends. An error from tryUpdate ends the
// loop and is returned as it is; so are ErrNotFound and any other write
// error. A result equal to the current value once both are stamped with
// the current revision writes nothing and returns the current object,
// unless the stored bytes are stale (written with a key that is no longer
// the first): then it is written again, as kube-apiserver does, which is
// how an update without changes moves a Secret to the new key.
func (db *DB) GuaranteedUpdate(ctx context.Context, key Key, tryUpdate func(cur Object) ([]byte, error)) (Object, error) {
	for {
		cur, err := db.Get(ctx, key)
		if err != nil {
			return Object{}, err
		}
		value, err := tryUpdate(cur)
		if err != nil {
			return Object{}, err
		}
		if loc, err := locateRevision(value); err == nil && equalStamped(cur.Value, value, loc, cur.ModRev) &&
			!db.storedStale(ctx, key) {
			return cur, nil
		}
		obj, err := db.Update(ctx, key, Preconditions{ModRev: cur.ModRev}, value)
		if errors.Is(err, ErrConflict) {
			if err := ctx.Err(); err != nil {
				return Object{}, err
			}
			continue
		}
		return obj, err
	}
}

// validKey reports whether key can be stored: resource and name set, and
// no NUL byte in namespace or name, since List reads a key's parts packed
// into one NUL-separated column.
func validKey(k Key) bool {
	return k.Resource != "" && k.Name != "" &&
		strings.IndexByte(k.Namespace, 0) < 0 && strings.IndexByte(k.Name, 0) < 0
}

// checkValue checks value against MaxValueBytes and finds where its
// resourceVersion goes, off the writer goroutine.
func (db *DB) checkValue(value []byte) (rvLocation, error) {
	if len(value) > db.cfg.MaxValueBytes {
		return rvLocation{}, ErrTooLarge
	}
	return locateRevision(value)
}
