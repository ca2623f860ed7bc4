package store

import "sync"

// This file is the object cache: recently written or read objects, kept in
// memory so that Get (and so GuaranteedUpdate, under every PATCH and PUT)
// does not open a SQLite read transaction for them. It is bounded by bytes
// and always agrees with the last commit:
//
//   - The writer applies each committed batch to it (writes through
//     creates and updates, drops deletes) after COMMIT and before it
//     advances Rev, publishes events or answers any caller, so a Get that
//     starts after a write was acknowledged, or after Rev reached it, sees
//     it.
//   - A Get that missed fills the cache with what it read only if no batch
//     was applied since before its read began (gen is unchanged), and only
//     when the key is absent: a read from an older snapshot can never
//     replace a newer value, nor land after the writer's update of it.

// DefaultObjectCacheBytes bounds the object cache (values and keys).
const DefaultObjectCacheBytes = 4 << 20

// objectOverhead approximates an entry's bytes beyond its value and key.
const objectOverhead = 96

type objectCache struct {
	maxBytes int

	// mu guards objs, bytes and gen. It is a leaf lock.
	mu    sync.RWMutex
	objs  map[Key]Object
	bytes int
	// gen counts the batches applied by the writer.
	gen uint64
}

func newObjectCache(maxBytes int) *objectCache {
	return &objectCache{maxBytes: maxBytes, objs: make(map[Key]Object)}
}

func entryBytes(o *Object) int {
	return len(o.Value) + len(o.Key.Resource) + len(o.Key.Namespace) + len(o.Key.Name) + len(o.UID) + objectOverhead
}

// get returns the cached object at k, or false and the generation to pass
// to fill after reading it from the database.
func (c *objectCache) get(k Key) (Object, bool, uint64) {
	c.mu.RLock()
	o, ok := c.objs[k]
	gen := c.gen
	c.mu.RUnlock()
	return o, ok, gen
}

// fill caches obj, read from the database by a Get that saw generation
// gen before its read began, unless a batch was applied since or the key
// is cached already.
func (c *objectCache) fill(obj Object, gen uint64) {
	n := entryBytes(&obj)
	if n > c.maxBytes/8 {
		return // one large object should not empty the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if _, ok := c.objs[obj.Key]; ok {
		return
	}
	c.objs[obj.Key] = obj
	c.bytes += n
	c.unsafeEvictLocked()
}

// apply brings the cache up to date with a committed batch. Only the
// writer calls it, after COMMIT and before it advances Rev.
func (c *objectCache) apply(events []Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for i := range events {
		ev := &events[i]
		if old, ok := c.objs[ev.Object.Key]; ok {
			c.bytes -= entryBytes(&old)
			delete(c.objs, ev.Object.Key)
		}
		if ev.Type == Deleted {
			continue
		}
		if n := entryBytes(&ev.Object); n <= c.maxBytes/8 {
			c.objs[ev.Object.Key] = ev.Object
			c.bytes += n
		}
	}
	c.unsafeEvictLocked()
}

// unsafeEvictLocked drops entries, in map order (about random), until the
// cache is within its bound. The caller holds mu.
func (c *objectCache) unsafeEvictLocked() {
	for k, o := range c.objs {
		if c.bytes <= c.maxBytes {
			return
		}
		c.bytes -= entryBytes(&o)
		delete(c.objs, k)
	}
}
