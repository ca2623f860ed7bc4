package store

import "sync"

// remainingCache spares the pages of a limited list after the first a
// COUNT of the objects after them. A page's Remaining, the objects after
// its last one at the list's revision, is a count of the primary key's
// index from that object to the end: for a 10,000-object list read in
// pages of 500, twenty counts over 95,000 index entries in all, a sixth
// of the store's time for the list. The state at a revision never
// changes, so the next page (the same resource, namespace and revision,
// after that object), which returns m of those objects with more after
// them, has Remaining m fewer. The cache remembers the last page of the
// last few such lists; a page that finds its start there takes the slot
// over for its own last object.
//
// Only unfiltered lists use it: with a Filter, Remaining is -1.
type remainingCache struct {
	mu      sync.Mutex
	entries [remainingCacheSize]remainingEntry
	next    int
}

// remainingCacheSize is how many paged lists can be followed at once.
const remainingCacheSize = 16

// remainingEntry: at revision rev, n objects of resource (in namespace,
// when set) come after the key (afterNS, afterName).
type remainingEntry struct {
	resource, namespace string
	rev                 int64
	afterNS, afterName  string
	n                   int64
}

// matches reports whether e is the count after the key that a list of
// resource in namespace at rev starts after.
func (e *remainingEntry) matches(resource, namespace string, rev int64, afterNS, afterName string) bool {
	return e.n > 0 && e.rev == rev && e.resource == resource && e.namespace == namespace &&
		e.afterNS == afterNS && e.afterName == afterName
}

// nextPage returns the Remaining of a page of resource in namespace at rev
// that starts after (afterNS, afterName), returns m objects and has more
// after them, if the page before it left its count; ok is false if not.
// On success the slot now holds the count after last, the page's last
// object.
func (c *remainingCache) nextPage(resource, namespace string, rev int64, afterNS, afterName string, m int, last Key) (n int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.entries {
		e := &c.entries[i]
		if !e.matches(resource, namespace, rev, afterNS, afterName) {
			continue
		}
		n = e.n - int64(m)
		if n <= 0 {
			// Not what a page with more after it can have: count.
			*e = remainingEntry{}
			return 0, false
		}
		e.afterNS, e.afterName, e.n = last.Namespace, last.Name, n
		return n, true
	}
	return 0, false
}

// put remembers that n objects of resource in namespace at rev come after
// last.
func (c *remainingCache) put(resource, namespace string, rev int64, last Key, n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[c.next] = remainingEntry{
		resource: resource, namespace: namespace, rev: rev,
		afterNS: last.Namespace, afterName: last.Name, n: n,
	}
	c.next = (c.next + 1) % len(c.entries)
}
