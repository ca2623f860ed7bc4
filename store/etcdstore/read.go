//go:build etcd

package etcdstore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeapi/edgeapi/store"
)

// Get implements store.Store with one linearizable Range: the object as
// of etcd's latest commit, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key store.Key) (store.Object, error) {
	obj, _, err := s.getStale(ctx, key)
	return obj, err
}

// getStale is Get, also reporting whether the stored value is stale.
func (s *Store) getStale(ctx context.Context, key store.Key) (store.Object, bool, error) {
	if s.closed.Load() {
		return store.Object{}, false, store.ErrClosed
	}
	if !validKey(key) {
		return store.Object{}, false, store.ErrNotFound
	}
	resp, err := s.get(ctx, "get object", s.keys.key(key))
	if err != nil {
		return store.Object{}, false, err
	}
	if len(resp.Kvs) == 0 {
		return store.Object{}, false, store.ErrNotFound
	}
	return s.storedStale(key, resp.Kvs[0])
}

// List implements store.Store with Ranges over the resource's (or the
// namespace's) key prefix at one revision: opts.Rev, or when 0 the
// revision of the first Range. Below etcd's compacted revision it returns
// ErrCompacted, above its current one ErrFutureRev.
//
// Objects come in etcd key order. Within one namespace that is name
// order, as in the SQLite store; across namespaces it differs from
// (namespace, name) order only where a namespace is a prefix of another
// followed by a byte below '/' ("a" and "a-b": etcd lists "a-b/..."
// first). Paging with AfterNamespace/AfterName follows the same order, so
// pages neither skip nor repeat objects.
//
// Limit, Filter, MaxBytes, More, Remaining and Cut are as in
// store.ListOptions and store.ListResult: without a Filter or MaxBytes
// one Range asks for Limit+1 keys; otherwise Ranges read DefaultListBatch
// keys at a time. Without a Filter, the Range's count gives Remaining;
// with one Remaining is -1 when More.
func (s *Store) List(ctx context.Context, opts store.ListOptions) (store.ListResult, error) {
	if s.closed.Load() {
		return store.ListResult{}, store.ErrClosed
	}
	if opts.Rev < 0 {
		return store.ListResult{}, store.ErrFutureRev
	}
	if opts.Rev > 0 && opts.Rev < s.compactedRev.Load() {
		return store.ListResult{}, store.ErrCompacted
	}
	select {
	case s.listSlots <- struct{}{}:
		defer func() { <-s.listSlots }()
	case <-ctx.Done():
		return store.ListResult{}, ctx.Err()
	}
	prefix := s.keys.resourcePrefix(opts.Resource)
	if opts.Namespace != "" {
		prefix = s.keys.namespacePrefix(opts.Resource, opts.Namespace)
	}
	start, empty := startKey(prefix, opts)
	if empty {
		return store.ListResult{Rev: s.listRev(opts.Rev)}, nil
	}
	end := clientv3.GetPrefixRangeEnd(prefix)

	var res store.ListResult
	switch {
	case cap(opts.Objects) > 0:
		res.Objects = opts.Objects[:0]
	case opts.Limit > 0:
		res.Objects = make([]store.Object, 0, min(opts.Limit, 1024))
	}
	exact := opts.Filter == nil && opts.MaxBytes <= 0
	batch := int64(DefaultListBatch)
	if opts.Limit > 0 && (exact || int64(opts.Limit)+1 < batch) {
		batch = int64(opts.Limit) + 1
	}
	if exact && opts.Limit == 0 {
		batch = 0 // everything in one Range
	}
	rev := opts.Rev
	size := 0
	for {
		ropts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(batch)}
		if rev > 0 {
			ropts = append(ropts, clientv3.WithRev(rev))
		}
		resp, err := s.get(ctx, "list objects", start, ropts...)
		if err != nil {
			if err == store.ErrCompacted {
				s.observeCompacted(rev + 1) // a lower bound
			}
			return store.ListResult{}, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		res.Rev = rev
		for i, kv := range resp.Kvs {
			key, ok := s.listKey(opts, prefix, string(kv.Key))
			if !ok {
				continue
			}
			obj, err := s.storedInList(key, kv)
			if err != nil {
				return store.ListResult{}, err
			}
			if opts.Filter != nil && !opts.Filter(&obj) {
				continue
			}
			if opts.Limit > 0 && len(res.Objects) == opts.Limit {
				res.More = true
				if opts.Filter == nil {
					// Count is every key from this Range's start; those
					// before this one in it are not remaining after the
					// last returned.
					res.Remaining = resp.Count - int64(i)
				} else {
					res.Remaining = -1
				}
				return res, nil
			}
			res.Objects = append(res.Objects, obj)
			size += len(obj.Value)
			if opts.MaxBytes > 0 && size >= opts.MaxBytes && (opts.Limit == 0 || len(res.Objects) < opts.Limit) {
				res.More, res.Cut, res.Remaining = true, true, -1
				return res, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return res, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// listRev is the revision an empty list reports: rev, or the current one.
func (s *Store) listRev(rev int64) int64 {
	if rev == 0 {
		return s.rev.Load()
	}
	return rev
}

// startKey returns the first etcd key a list may return: the prefix, or
// just past the After position. empty reports that the After position is
// past every key under the prefix.
func startKey(prefix string, opts store.ListOptions) (start string, empty bool) {
	afterNS, afterName := opts.AfterNamespace, opts.AfterName
	if opts.Namespace != "" {
		// In key order: a namespace sorts by its bytes and the '/' after
		// it ("a-b/" before "a/").
		if afterNS != opts.Namespace {
			if afterNS+"/" > opts.Namespace+"/" {
				return "", true
			}
			return prefix, false
		}
		if afterName == "" {
			return prefix, false
		}
		return prefix + afterName + "\x00", false
	}
	switch {
	case afterNS == "" && afterName == "":
		return prefix, false
	case afterNS == "":
		return prefix + afterName + "\x00", false // cluster-scoped
	case afterName == "":
		return prefix + afterNS + "/", false
	}
	return prefix + afterNS + "/" + afterName + "\x00", false
}

// listKey parses an etcd key returned by a list under prefix.
func (s *Store) listKey(opts store.ListOptions, prefix, etcdKey string) (store.Key, bool) {
	rest := etcdKey[len(prefix):]
	if opts.Namespace != "" {
		return store.Key{Resource: opts.Resource, Namespace: opts.Namespace, Name: rest}, rest != ""
	}
	ns, name := splitRest(rest)
	return store.Key{Resource: opts.Resource, Namespace: ns, Name: name}, name != ""
}
