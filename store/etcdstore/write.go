//go:build etcd

package etcdstore

import (
	"bytes"
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
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
	c, err := s.commit(ctx, "create object", k, clientv3.Compare(clientv3.CreateRevision(k), "=", 0), clientv3.OpPut(k, string(enc)), enc)
	if err != nil {
		return store.Object{}, err
	}
	var obj store.Object
	switch rev := c.resp.Header.Revision; {
	case c.earlier:
		obj, err = s.stored(key, c.now)
	case !c.resp.Succeeded:
		return store.Object{}, store.ErrExists
	default:
		obj, err = object(key, value, uid, rev, rev)
	}
	if err != nil {
		return store.Object{}, err
	}
	obj.UID = uid
	return obj, s.waitPublished(ctx, obj.ModRev)
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
	c, err := s.preconditioned(ctx, key, k, pre, clientv3.OpPut(k, string(enc), clientv3.WithPrevKV()), enc, "update object")
	if err != nil {
		return store.Object{}, err
	}
	var obj store.Object
	if c.earlier {
		obj, err = s.stored(key, c.now)
	} else {
		prev := c.resp.Responses[0].GetResponsePut().PrevKv
		obj, err = object(key, value, "", prev.CreateRevision, c.resp.Header.Revision)
	}
	if err != nil {
		return store.Object{}, err
	}
	return obj, s.waitPublished(ctx, obj.ModRev)
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
	c, err := s.preconditioned(ctx, key, k, pre, clientv3.OpDelete(k, clientv3.WithPrevKV()), nil, "delete object")
	if err != nil {
		return store.Object{}, err
	}
	rev := c.resp.Header.Revision
	var prevs []*mvccpb.KeyValue
	if c.earlier {
		// An earlier attempt deleted it: its last state is the one the
		// transaction compared, stamped with a revision at or after the
		// delete's.
		if prevs, err = s.stateAt(ctx, k, c.compared); err != nil {
			return store.Object{}, err
		}
	} else {
		prevs = c.resp.Responses[0].GetResponseDeleteRange().PrevKvs
	}
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

// stateAt returns etcd key k as it was at revision rev (none when rev is
// 0 or compacted).
func (s *Store) stateAt(ctx context.Context, k string, rev int64) ([]*mvccpb.KeyValue, error) {
	if rev == 0 {
		return nil, nil
	}
	resp, err := s.get(ctx, "delete object", k, clientv3.WithRev(rev))
	if err == store.ErrCompacted {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return resp.Kvs, nil
}

// preconditioned runs op on etcd key k in one transaction guarded by pre
// (see precondition) and returns the successful outcome. When only a
// UID was given and the object changed between its check and the
// transaction, it checks again. put is the value op puts (nil for a
// delete); what names the write in errors.
func (s *Store) preconditioned(ctx context.Context, key store.Key, k string, pre store.Preconditions, op clientv3.Op, put []byte, what string) (preconditionedWrite, error) {
	for {
		cmp, modRev, err := s.precondition(ctx, key, k, pre)
		if err != nil {
			return preconditionedWrite{}, err
		}
		c, err := s.commit(ctx, what, k, cmp, op, put)
		if err != nil {
			return preconditionedWrite{}, err
		}
		if c.resp.Succeeded || c.earlier {
			return preconditionedWrite{committed: c, compared: modRev}, nil
		}
		if err := failed(c.resp); err != store.ErrConflict || pre.UID == "" || pre.ModRev != 0 {
			return preconditionedWrite{}, err
		}
		// Changed since the UID was checked: check again.
	}
}

// preconditionedWrite is what preconditioned returns: the write's
// outcome and the ModRevision its transaction compared (0 when it
// compared only that the key exists).
type preconditionedWrite struct {
	committed
	compared int64
}

// precondition returns the comparison a write at etcd key k makes, and
// the ModRevision it compares (0 when none): the key exists, with
// ModRevision pre.ModRev when set. With pre.UID it reads the current
// object first (ErrNotFound, ErrConflict) and compares its ModRevision.
func (s *Store) precondition(ctx context.Context, key store.Key, k string, pre store.Preconditions) (clientv3.Cmp, int64, error) {
	if pre.UID == "" {
		if pre.ModRev != 0 {
			return clientv3.Compare(clientv3.ModRevision(k), "=", pre.ModRev), pre.ModRev, nil
		}
		return clientv3.Compare(clientv3.CreateRevision(k), ">", 0), 0, nil
	}
	cur, err := s.Get(ctx, key)
	if err != nil {
		return clientv3.Cmp{}, 0, err
	}
	if cur.UID != pre.UID || (pre.ModRev != 0 && cur.ModRev != pre.ModRev) {
		return clientv3.Cmp{}, 0, store.ErrConflict
	}
	return clientv3.Compare(clientv3.ModRevision(k), "=", cur.ModRev), cur.ModRev, nil
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
	cur, stale, err := s.getStale(ctx, key)
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
		c, err := s.commit(ctx, "update object", k, clientv3.Compare(clientv3.ModRevision(k), "=", cur.ModRev), clientv3.OpPut(k, string(enc)), enc)
		if err != nil {
			return store.Object{}, err
		}
		if c.resp.Succeeded || c.earlier {
			var obj store.Object
			if c.earlier {
				obj, err = s.stored(key, c.now)
			} else {
				obj, err = object(key, value, "", cur.CreateRev, c.resp.Header.Revision)
			}
			if err != nil {
				return store.Object{}, err
			}
			return obj, s.waitPublished(ctx, obj.ModRev)
		}
		resp := c.resp
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return store.Object{}, store.ErrNotFound
		}
		if cur, stale, err = s.storedStale(key, kvs[0]); err != nil {
			return store.Object{}, err
		}
	}
}
