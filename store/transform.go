package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// This file is how values are transformed between what the callers see
// (an object's JSON) and what the database and its change log keep: the
// hook that encryption at rest plugs into. Every value written to the
// objects table or the change log passes through encode; every value read
// from them through decode. Events, the watch cache and the object cache
// hold the callers' form.

// Transformer turns one resource's values into their stored form and back.
type Transformer interface {
	// ToStorage returns the bytes to store for value. path is the
	// object's kube-apiserver storage key ("/registry/secrets/ns/name"),
	// which a transformer may authenticate.
	ToStorage(path string, value []byte) ([]byte, error)
	// FromStorage returns the value stored as stored under path; stale
	// reports that it was stored in a form ToStorage no longer writes (an
	// older key), so that rewriting it changes the stored bytes.
	FromStorage(path string, stored []byte) (value []byte, stale bool, err error)
}

// encryptedPrefix starts every value kube-apiserver's encrypting providers
// write.
var encryptedPrefix = []byte("k8s:enc:")

// TransformError is a stored value its resource's transformer could not
// read back (no configured key matches it, or it fails authentication).
// Its message is the transformer's, as kube-apiserver's storage returns it
// for a get.
type TransformError struct {
	// Path is the object's storage key.
	Path string
	Err  error
}

func (e *TransformError) Error() string { return e.Err.Error() }
func (e *TransformError) Unwrap() error { return e.Err }

// errReadEncrypted is kube-apiserver's identity transformer's answer to
// an encrypted value.
var errReadEncrypted = errors.New("identity transformer tried to read encrypted data")

// StoragePath is the kube-apiserver storage key of k: /registry/,
// resource, namespace (when set) and name.
func StoragePath(k Key) string {
	if k.Namespace == "" {
		return "/registry/" + k.Resource + "/" + k.Name
	}
	return "/registry/" + k.Resource + "/" + k.Namespace + "/" + k.Name
}

// transformer returns resource's transformer, nil when values are stored
// as they are.
func (db *DB) transformer(resource string) Transformer {
	if db.cfg.Transformers == nil {
		return nil
	}
	return db.cfg.Transformers(resource)
}

// encode returns the stored form of value, the object at k.
func (db *DB) encode(k Key, value []byte) ([]byte, error) {
	t := db.transformer(k.Resource)
	if t == nil || value == nil {
		return value, nil
	}
	out, err := t.ToStorage(StoragePath(k), value)
	if err != nil {
		return nil, fmt.Errorf("transform %s for storage: %w", StoragePath(k), err)
	}
	return out, nil
}

// decode returns the value stored as stored for the object at k, and
// whether it is stale (see Transformer.FromStorage).
func (db *DB) decode(k Key, stored []byte) ([]byte, bool, error) {
	if stored == nil {
		return nil, false, nil
	}
	t := db.transformer(k.Resource)
	if t == nil {
		if bytes.HasPrefix(stored, encryptedPrefix) {
			return nil, false, &TransformError{Path: StoragePath(k), Err: errReadEncrypted}
		}
		return stored, false, nil
	}
	out, stale, err := t.FromStorage(StoragePath(k), stored)
	if err != nil {
		return nil, false, &TransformError{Path: StoragePath(k), Err: err}
	}
	return out, stale, nil
}

// decodeInList is decode for a value read by a list or a change-log read:
// kube-apiserver names the key in that error.
func (db *DB) decodeInList(k Key, stored []byte) ([]byte, error) {
	out, _, err := db.decode(k, stored)
	if err != nil {
		var te *TransformError
		if errors.As(err, &te) {
			return nil, &TransformError{Path: te.Path, Err: fmt.Errorf("unable to transform key %q: %w", te.Path, te.Err)}
		}
		return nil, err
	}
	return out, nil
}

// storedStale reports whether the stored value of key is in a stale form,
// read straight from the database (the object cache holds decoded values).
// False when key's resource is not transformed or on any error.
func (db *DB) storedStale(ctx context.Context, key Key) bool {
	if db.transformer(key.Resource) == nil {
		return false
	}
	if err := db.readers.enter(ctx); err != nil {
		return false
	}
	var o Object
	err := db.getStmt.QueryRowContext(ctx, key.Resource, sqlNamespace(key.Namespace), key.Name).
		Scan(&o.UID, &o.CreateRev, &o.ModRev, &o.Value)
	db.readers.leave()
	if err != nil {
		return false
	}
	_, stale, err := db.decode(key, o.Value)
	return err == nil && stale
}

// rewritePage is how many objects RewriteStale lists at a time.
const rewritePage = 256

// RewriteStale writes again every object whose stored value is stale
// (stored with a transformer's older key or provider, see
// Transformer.FromStorage), so that afterwards every value is in the form
// the first key writes: the rewrite step of a key rotation. Each rewrite
// is an ordinary update (a new revision, a MODIFIED event). It returns the
// number of objects rewritten and of objects checked.
func (db *DB) RewriteStale(ctx context.Context) (rewritten, checked int, err error) {
	if db.cfg.Transformers == nil {
		return 0, 0, nil
	}
	var resources []string
	err = db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
		rows, err := conn.QueryContext(ctx, "SELECT DISTINCT resource FROM objects ORDER BY resource")
		if err != nil {
			return translate("list resources", err)
		}
		defer rows.Close()
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				return translate("list resources", err)
			}
			resources = append(resources, r)
		}
		return translate("list resources", rows.Err())
	})
	if err != nil {
		return 0, 0, err
	}
	same := func(cur Object) ([]byte, error) { return cur.Value, nil }
	for _, resource := range resources {
		if db.transformer(resource) == nil {
			continue
		}
		opts := ListOptions{Resource: resource, Limit: rewritePage}
		for {
			page, err := db.List(ctx, opts)
			if err != nil {
				return rewritten, checked, fmt.Errorf("rewrite %s: %w", resource, err)
			}
			for _, o := range page.Objects {
				checked++
				if !db.storedStale(ctx, o.Key) {
					continue
				}
				// GuaranteedUpdate writes an unchanged value when it is stale;
				// an object deleted meanwhile needs no rewrite.
				if _, err := db.GuaranteedUpdate(ctx, o.Key, same); err != nil && !errors.Is(err, ErrNotFound) {
					return rewritten, checked, fmt.Errorf("rewrite %s: %w", StoragePath(o.Key), err)
				}
				rewritten++
			}
			if !page.More || len(page.Objects) == 0 {
				break
			}
			last := page.Objects[len(page.Objects)-1].Key
			opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
		}
	}
	return rewritten, checked, nil
}
