//go:build etcd

package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeapi/edgeapi/store"
)

// This file is what `edgeapi migrate` reads and prepares an etcd with:
// Dump reads every object under the prefix at one revision; Empty and
// Advance ready a fresh etcd to take objects whose revisions are above
// those another store handed out.

var _ store.Dumper = (*Store)(nil)

// dumpBatch is how many keys one Range of Dump reads.
const dumpBatch = 256

// UnmappedError is Dump's error when keys under the prefix are not
// objects edgeapi can read: a key outside the layout of keys.go, or a
// value that is not a JSON object with metadata (a kube-apiserver's
// protobuf, for example).
type UnmappedError struct {
	// Rev is the revision Dump read at.
	Rev int64
	// Keys are the first maxUnmappedKeys such keys, each with why;
	// Count counts them all.
	Keys  []string
	Count int
}

// maxUnmappedKeys bounds UnmappedError.Keys.
const maxUnmappedKeys = 20

func (e *UnmappedError) Error() string {
	more := ""
	if e.Count > len(e.Keys) {
		more = fmt.Sprintf(" (and %d more)", e.Count-len(e.Keys))
	}
	return fmt.Sprintf("%d keys are not objects edgeapi can read: %s%s", e.Count, strings.Join(e.Keys, "; "), more)
}

// add records one unmapped key.
func (e *UnmappedError) add(key, why string) {
	e.Count++
	if len(e.Keys) < maxUnmappedKeys {
		e.Keys = append(e.Keys, key+": "+why)
	}
}

// Dump implements store.Dumper with Ranges over the whole prefix at one
// revision (that of the first Range), dumpBatch keys at a time, mapping
// each key back to a store.Key. Keys that are not objects edgeapi can
// read are not passed to fn: Dump reads on past them and then returns
// the revision with an *UnmappedError naming them. Below etcd's
// compacted revision (a compaction while it reads) it returns
// ErrCompacted.
func (s *Store) Dump(ctx context.Context, fn func(store.Object) error) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	prefix := s.keys.prefix + "/"
	end := clientv3.GetPrefixRangeEnd(prefix)
	start := prefix
	var rev int64
	unmapped := &UnmappedError{}
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(dumpBatch)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, start, opts...)
		if err != nil {
			return 0, s.translate("dump", err)
		}
		s.observe(resp.Header.Revision)
		if rev == 0 {
			rev = resp.Header.Revision
			unmapped.Rev = rev
		}
		for _, kv := range resp.Kvs {
			etcdKey := string(kv.Key)
			key, ok := s.keys.parse(etcdKey)
			if !ok || !validKey(key) || s.keys.key(key) != etcdKey {
				unmapped.add(etcdKey, "not in edgeapi's key layout")
				continue
			}
			obj, err := s.stored(key, kv)
			var te *store.TransformError
			if errors.As(err, &te) {
				unmapped.add(etcdKey, "value cannot be read: "+te.Err.Error())
				continue
			}
			if err != nil {
				unmapped.add(etcdKey, "value is not a JSON object with metadata")
				continue
			}
			if err := fn(obj); err != nil {
				return 0, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if unmapped.Count > 0 {
		return rev, unmapped
	}
	return rev, nil
}

// Empty reports whether no key is under the prefix, and etcd's current
// revision.
func (s *Store) Empty(ctx context.Context) (empty bool, rev int64, err error) {
	resp, err := s.client.Get(ctx, s.keys.prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return false, 0, s.translate("count keys", err)
	}
	s.observe(resp.Header.Revision)
	return resp.Count == 0, resp.Header.Revision, nil
}

// advanceKeySuffix names the scratch key, next to the prefix, that
// Advance writes: "/registry-migrate" for the default prefix, outside
// the prefix so that no list or watch of objects sees it.
const advanceKeySuffix = "-migrate"

// DefaultAdvanceWorkers is how many writes Advance keeps in flight: etcd
// commits the writes in flight together, so many at once cost about one
// disk sync each batch.
const DefaultAdvanceWorkers = 64

// Advance raises etcd's revision to at least rev, as a move from another
// store needs: etcd revisions cannot jump, so it writes a scratch key
// (<prefix>-migrate) again and again, workers writes in flight at once,
// and deletes it last (one more revision). It returns the number of
// revisions written; none when etcd is already at rev.
func (s *Store) Advance(ctx context.Context, rev int64, workers int) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	if workers <= 0 {
		workers = DefaultAdvanceWorkers
	}
	key := s.keys.prefix + advanceKeySuffix
	head, err := s.client.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return 0, s.translate("advance revision", err)
	}
	s.observe(head.Header.Revision)
	// The delete takes the last revision; it needs a put before it.
	puts := max(rev-head.Header.Revision-1, 1)
	if head.Header.Revision >= rev {
		return 0, nil
	}
	var left atomic.Int64
	left.Store(puts)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range min(int64(workers), puts) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				resp, err := s.client.Put(ctx, key, "")
				if err != nil {
					errOnce.Do(func() { firstErr = s.translate("advance revision", err); cancel() })
					return
				}
				s.observe(resp.Header.Revision)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	resp, err := s.client.Delete(ctx, key)
	if err != nil {
		return puts, s.translate("advance revision", err)
	}
	s.observe(resp.Header.Revision)
	return puts + 1, nil
}

// DeleteAll deletes every key under the prefix and the scratch key of
// Advance: what a move into an empty prefix wrote, when it fails.
func (s *Store) DeleteAll(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if _, err := s.client.Delete(ctx, s.keys.prefix+"/", clientv3.WithPrefix()); err != nil {
		return s.translate("delete objects", err)
	}
	if _, err := s.client.Delete(ctx, s.keys.prefix+advanceKeySuffix); err != nil {
		return s.translate("delete objects", err)
	}
	return nil
}
