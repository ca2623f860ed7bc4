//go:build etcd

package etcdstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeapi/edgeapi/store"
)

// Hold implements store.Store. Holds are local: another process
// compacting the same etcd ignores them.
func (s *Store) Hold(rev int64) (release func()) {
	return s.holds.Hold(rev, s.compactedRev.Load)
}

// Compact implements store.Store with etcd's Compact at rev, clamped to
// the oldest held revision and to the current revision: afterwards reads
// below rev fail with ErrCompacted (reads at rev itself still work, as in
// etcd). A rev at or below the compacted revision does nothing; so does
// one another client already compacted past.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.holds.Compact(min(rev, s.Rev()), func(rev int64) error {
		if rev <= s.compactedRev.Load() {
			return nil
		}
		resp, err := s.client.Compact(ctx, rev)
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil
		}
		if err != nil {
			return s.translate("compact", err)
		}
		s.observe(resp.Header.Revision)
		s.observeCompacted(rev)
		return nil
	})
}

// compactKeySuffix names the key, next to the prefix, through which the
// compactors of all stores on one etcd take turns: "/registry-compact"
// for the default prefix, outside the prefix so the watch feed never sees
// it. Its value is the last compacted revision, its version counts the
// compactions.
const compactKeySuffix = "-compact"

// RunCompactor compacts every interval until ctx ends, as
// kube-apiserver's --etcd-compaction-interval does: each run compacts up
// to the revision that was current one interval before. Several stores on
// one etcd (edgeapi replicas) take turns: a run compacts only when the
// compaction key has not changed since this store's previous run, and
// claims it with a transaction on its version, so the cluster compacts
// about once per interval whatever the number of replicas. Holds of this
// store clamp its compactions (Compact); other stores' holds do not.
// Failures are retried at the next run.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	ckey := s.keys.prefix + compactKeySuffix
	var seenVersion int64 // the compaction key's version at the previous run
	prevRev := int64(0)   // the revision current at the previous run
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		head, err := s.client.Get(ctx, ckey)
		if err != nil {
			continue
		}
		s.observe(head.Header.Revision)
		target := prevRev
		prevRev = head.Header.Revision
		if target == 0 || target <= s.compactedRev.Load() {
			if len(head.Kvs) > 0 {
				seenVersion = head.Kvs[0].Version
			}
			continue
		}
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.Version(ckey), "=", seenVersion)).
			Then(clientv3.OpPut(ckey, strconv.FormatInt(target, 10))).
			Else(clientv3.OpGet(ckey)).
			Commit()
		if err != nil {
			continue
		}
		if !resp.Succeeded {
			// Another store compacted within the interval: its turn.
			if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
				seenVersion = kvs[0].Version
			}
			continue
		}
		seenVersion++
		_ = s.Compact(ctx, target)
	}
}
