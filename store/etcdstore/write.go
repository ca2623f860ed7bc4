//go:build etcd

package etcdstore

import (
	"bytes"
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeapi/edgeapi/store"
)

// This file is the write API. Every write is one etcd transaction that
// compares the key's revisions, so that concurrent writers through any
// number of stores on one etcd cluster serialize per key. Before
// answering, a write waits until the watch feed has published its
// revision (see waitPublished), as the SQLite store answers writers only
// after its subscribers have the batch.

// checkValue returns ErrInvalidObject when value cannot be stamped or
// key cannot be held in the layout, ErrTooLarge when value exceeds the
// configured maximum.
func (s *Store) checkValue(key store.Key, value []byte) error {
	if !validKey(key) {
		return store.ErrInvalidObject
	}
	if len(value) > s.maxValue {
		return store.ErrTooLarge
	}
	if _, err := store.StampRevision(value, 0); err != nil {
		return err
	}
	return nil
}

// Create implements store.Store: one transaction puts value at key if
// the key has no CreateRevision, else ErrExists.
func (s *Store) Create(ctx context.Context, key store.Key, uid string, value []byte) (store.Object, error) {
	if s.closed.Load() {
		return store.Object{}, store.ErrClosed
	}
	if err := s.checkValue(key, value); err != nil {
		return store.Object{}, err
	}
	k := s.keys.key(key)
	enc, err := s.encode(key, k, value)
	if err != nil {
		return store.Object{}, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(enc))).
		Commit()
	if err != nil {
		return store.Object{}, s.translate("create object", err)
	}
	rev := resp.Header.Revision
	s.observe(rev)
	if !resp.Succeeded {
		return store.Object{}, store.ErrExists
	}
	obj, err := object(key, value, rev, rev)
	if err != nil {
		return store.Object{}, err
	}
	obj.UID = uid
	return obj, s.waitPublished(ctx, rev)
}

// Update implements store.Store: one transaction puts value at key if the
// key exists and, when pre.ModRev is set, its ModRevision equals it. A
// UID precondition is checked against the current value first and the
// transaction then compares that value's ModRevision, retrying when
// another writer got in between (unless pre.ModRev pins the revision).
func (s *Store) Update(ctx context.Context, key store.Key, pre store.Preconditions, value []byte) (store.Object, error) {
	if s.closed.Load() {
		return store.Object{}, store.ErrClosed
	}
	if err := s.checkValue(key, value); err != nil {
		return store.Object{}, err
	}
	k := s.keys.key(key)
	enc, err := s.encode(key, k, value)
	if err != nil {
		return store.Object{}, err
	}
	resp, err := s.preconditioned(ctx, key, k, pre, clientv3.OpPut(k, string(enc), clientv3.WithPrevKV()), "update object")
	if err != nil {
		return store.Object{}, err
	}
	rev := resp.Header.Revision
	prev := resp.Responses[0].GetResponsePut().PrevKv
	obj, err := object(key, value, prev.CreateRevision, rev)
	if err != nil {
		return store.Object{}, err
	}
	return obj, s.waitPublished(ctx, rev)
}

// Delete implements store.Store like Update, deleting instead of putting.
// The returned Object is the last state stamped with the delete revision.
func (s *Store) Delete(ctx context.Context, key store.Key, pre store.Preconditions) (store.Object, error) {
	if s.closed.Load() {
		return store.Object{}, store.ErrClosed
	}
	if !validKey(key) {
		return store.Object{}, store.ErrNotFound
	}
	k := s.keys.key(key)
	resp, err := s.preconditioned(ctx, key, k, pre, clientv3.OpDelete(k, clientv3.WithPrevKV()), "delete object")
	if err != nil {
		return store.Object{}, err
	}
	rev := resp.Header.Revision
	prevs := resp.Responses[0].GetResponseDeleteRange().PrevKvs
	if len(prevs) == 0 {
		return store.Object{}, store.ErrNotFound
	}
	last := *prevs[0]
	last.ModRevision = rev
	obj, err := s.stored(key, &last)
	if err != nil {
		return store.Object{}, err
	}
	return obj, s.waitPublished(ctx, rev)
}

// preconditioned runs op on etcd key k in one transaction guarded by pre
// (see precondition) and returns the successful response. When only a
// UID was given and the object changed between its check and the
// transaction, it checks again. what names the write in errors.
func (s *Store) preconditioned(ctx context.Context, key store.Key, k string, pre store.Preconditions, op clientv3.Op, what string) (*clientv3.TxnResponse, error) {
	for {
		cmp, err := s.precondition(ctx, key, k, pre)
		if err != nil {
			return nil, err
		}
		resp, err := s.client.Txn(ctx).If(cmp).Then(op).Else(clientv3.OpGet(k)).Commit()
		if err != nil {
			return nil, s.translate(what, err)
		}
		s.observe(resp.Header.Revision)
		if resp.Succeeded {
			return resp, nil
		}
		if err := failed(resp); err != store.ErrConflict || pre.UID == "" || pre.ModRev != 0 {
			return nil, err
		}
		// Changed since the UID was checked: check again.
	}
}

// precondition returns the comparison a write at etcd key k makes: the
// key exists, with ModRevision pre.ModRev when set. With pre.UID it reads
// the current object first (ErrNotFound, ErrConflict) and compares its
// ModRevision.
func (s *Store) precondition(ctx context.Context, key store.Key, k string, pre store.Preconditions) (clientv3.Cmp, error) {
	if pre.UID == "" {
		if pre.ModRev != 0 {
			return clientv3.Compare(clientv3.ModRevision(k), "=", pre.ModRev), nil
		}
		return clientv3.Compare(clientv3.CreateRevision(k), ">", 0), nil
	}
	cur, err := s.Get(ctx, key)
	if err != nil {
		return clientv3.Cmp{}, err
	}
	if cur.UID != pre.UID || (pre.ModRev != 0 && cur.ModRev != pre.ModRev) {
		return clientv3.Cmp{}, store.ErrConflict
	}
	return clientv3.Compare(clientv3.ModRevision(k), "=", cur.ModRev), nil
}

// failed returns the error of a write transaction whose comparison
// failed, from its Else Get: ErrNotFound when the key is gone, else
// ErrConflict (which callers with only a UID precondition retry).
func failed(resp *clientv3.TxnResponse) error {
	if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
		return store.ErrNotFound
	}
	return store.ErrConflict
}

// GuaranteedUpdate implements store.Store: read, tryUpdate, and a
// transaction that puts the result if the ModRevision is still the one
// read; when it is not, the transaction's Else branch reads the current
// object and the loop runs again from it. A result equal to the current
// value but for its resourceVersion writes nothing.
func (s *Store) GuaranteedUpdate(ctx context.Context, key store.Key, tryUpdate func(cur store.Object) ([]byte, error)) (store.Object, error) {
	if s.closed.Load() {
		return store.Object{}, store.ErrClosed
	}
	cur, stale, err := s.get(ctx, key)
	if err != nil {
		return store.Object{}, err
	}
	k := s.keys.key(key)
	for {
		value, err := tryUpdate(cur)
		if err != nil {
			return store.Object{}, err
		}
		if err := s.checkValue(key, value); err != nil {
			return store.Object{}, err
		}
		// Unchanged writes nothing, unless the stored bytes are stale
		// (written with a key that is no longer the first): then it is
		// written again, as kube-apiserver does, which is how an update
		// without changes moves a Secret to the new key.
		if same, err := store.StampRevision(value, cur.ModRev); err == nil && bytes.Equal(same, cur.Value) && !stale {
			return cur, nil
		}
		enc, err := s.encode(key, k, value)
		if err != nil {
			return store.Object{}, err
		}
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.ModRev)).
			Then(clientv3.OpPut(k, string(enc))).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return store.Object{}, s.translate("update object", err)
		}
		rev := resp.Header.Revision
		s.observe(rev)
		if resp.Succeeded {
			obj, err := object(key, value, cur.CreateRev, rev)
			if err != nil {
				return store.Object{}, err
			}
			return obj, s.waitPublished(ctx, rev)
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return store.Object{}, store.ErrNotFound
		}
		if cur, stale, err = s.storedStale(key, kvs[0]); err != nil {
			return store.Object{}, err
		}
	}
}
