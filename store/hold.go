package store

import "sync"

// holds counts the revisions that readers keep from compaction. Compact
// takes mu while it picks its revision and schedules it, so a Hold either
// comes before (and clamps it) or sees the new compacted revision.
type holds struct {
	mu   sync.Mutex
	revs map[int64]int
}

// clamp returns rev, or the oldest held revision when that is older. The
// caller holds mu.
func (h *holds) clamp(rev int64) int64 {
	for r := range h.revs {
		rev = min(rev, r)
	}
	return rev
}

// Hold implements Store.
func (db *DB) Hold(rev int64) (release func()) {
	h := &db.holds
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev < db.compactedRev.Load() {
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
