package store

import "sync"

// Holds counts the revisions that readers keep from compaction
// (Store.Hold), for any implementation of Store. Compact runs with its
// lock held while it picks and applies its revision, so a Hold either
// comes before (and clamps it) or sees the new compacted revision.
type Holds struct {
	mu   sync.Mutex
	revs map[int64]int
}

// Hold keeps rev from compaction until release is called; a rev below
// compacted() (read under the lock) is gone already, and holding it does
// nothing.
func (h *Holds) Hold(rev int64, compacted func() int64) (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev < compacted() {
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

// Compact calls compact with rev, or the oldest held revision when that
// is older, with the lock held: no Hold comes between the choice of the
// revision and compact's result.
func (h *Holds) Compact(rev int64, compact func(rev int64) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for r := range h.revs {
		rev = min(rev, r)
	}
	return compact(rev)
}

// Hold implements Store.
func (db *DB) Hold(rev int64) (release func()) {
	return db.holds.Hold(rev, db.compactedRev.Load)
}
