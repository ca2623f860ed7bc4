//go:build etcd

package etcdstore

import (
	"context"
	"errors"
	"sync"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/edgeapi/edgeapi/store"
)

// holds counts the revisions that readers keep from this store's
// compaction. It is local: another process compacting the same etcd
// ignores it.
type holds struct {
	// mu guards revs, and is held by Compact while it picks and applies
	// its revision, so a Hold either clamps it or sees its result.
	mu   sync.Mutex
	revs map[int64]int
}

// Hold implements store.Store.
func (s *Store) Hold(rev int64) (release func()) {
	h := &s.holds
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev < s.compactedRev.Load() {
		return func() {}
	}
	if h.revs == nil {
		h.revs = make(map[int64]int)
	}
	h.revs[rev]++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.revs[rev]--; h.revs[rev] == 0 {
				delete(h.revs, rev)
			}
		})
	}
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
	h := &s.holds
	h.mu.Lock()
	defer h.mu.Unlock()
	for r := range h.revs {
		rev = min(rev, r)
	}
	rev = min(rev, s.Rev())
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
}
