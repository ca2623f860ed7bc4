package httpapi

import (
	"sync"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// protoSizeCache keeps the Protobuf message size of stored objects that a
// streamed Protobuf LIST sized but did not keep (see protoItems): the
// first pass of a repeated LIST then finds those sizes here instead of
// transcoding each object only to measure it. Entries are keyed as the
// served-JSON cache's are: by the kind (a changed CRD is a new Kind), two
// independent hashes of the stored value and its length; the value
// carries its resourceVersion, and its Protobuf depends on nothing else.
// Hashing a stored 1.4 KB ConfigMap twice takes about a tenth of
// transcoding it. The second pass checks every size it encodes against the
// first pass's (protoListEncoder.item), so a wrong size would cut the
// response short, never send wrong bytes. The cache is bounded in entries
// (protoSizeEntryBytes each) and emptied when full.
type protoSizeCache struct {
	mu      sync.Mutex // guards the fields below
	entries map[servedKey]uint32
	// maxEntries bounds entries.
	maxEntries int
}

// protoSizeEntryBytes is what one entry may cost the heap: the 32-byte
// key and 4-byte size in a Go map slot (40 bytes with padding), its
// control byte, and the map's spare slots (7/8 full at most, half full
// just after growing). TestProtoSizeCache_EntryBytes measured 55 to 94
// bytes an entry between 1,800 and 20,000 entries.
const protoSizeEntryBytes = 128

// protoSizes is the process's cache; New bounds it at half the list
// buffer: 1.85 MiB, about 15,000 entries, at --memory-limit 128Mi.
var protoSizes = &protoSizeCache{entries: map[servedKey]uint32{}, maxEntries: DefaultListBufferBytes / 2 / protoSizeEntryBytes}

// setMaxBytes bounds the cache at n bytes, emptying it when it holds
// more.
func (c *protoSizeCache) setMaxBytes(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxEntries = n / protoSizeEntryBytes
	if len(c.entries) > c.maxEntries {
		c.entries = map[servedKey]uint32{}
	}
}

// lookup sets sizes[i] to the cached size of objs[i]'s value, or -1, with
// keys[i] its key.
func (c *protoSizeCache) lookup(k *registry.Kind, objs []store.Object, keys []servedKey, sizes []int) {
	for i := range objs {
		keys[i] = servedKeyOf(k, objs[i].Value)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, key := range keys {
		if n, ok := c.entries[key]; ok {
			sizes[i] = int(n)
		} else {
			sizes[i] = -1
		}
	}
}

// get returns the cached size of the value behind key.
func (c *protoSizeCache) get(key servedKey) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.entries[key]
	return int(n), ok
}

// put caches sizes[i] as the size of the value behind keys[i].
func (c *protoSizeCache) put(keys []servedKey, sizes []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, key := range keys {
		if uint64(sizes[i]) > maxUint32 || c.maxEntries == 0 {
			continue
		}
		if len(c.entries) >= c.maxEntries {
			c.entries = map[servedKey]uint32{}
		}
		c.entries[key] = uint32(sizes[i])
	}
}

// forget drops the cache: a size it gave did not match the object's.
func (c *protoSizeCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = map[servedKey]uint32{}
}

const maxUint32 = 1<<32 - 1
