package httpapi

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/edgeapi/edgeapi/registry"
)

// servedCache keeps the served JSON of stored objects whose kind converts
// on the way out (FromStorage: custom resources whose schema has defaults
// or that have several versions, which decode, prune and default every
// stored object as kube-apiserver's storage codec does) and that
// Kind.AppendServedJSON cannot serve from the stored bytes (objects
// written before the schema changed; it serves the others in about 2 µs
// for 1 KB, with nothing to keep). Decoding costs about 35 µs for a 1 KB
// object, ten times the splice of stored bytes, so repeated LISTs, GETs
// and watches of such objects take the result from here. Entries are keyed by the kind (a changed CRD is a new Kind)
// and two independent hashes and the length of the stored value, which
// carries its resourceVersion; the conversion depends on nothing else.
// The cache is bounded in bytes and emptied when full.
type servedCache struct {
	mu      sync.Mutex // guards the fields below
	entries map[servedKey][]byte
	bytes   int
	// maxBytes bounds bytes (DefaultServedCacheBytes until set).
	maxBytes int
}

type servedKey struct {
	kind   *registry.Kind
	h1, h2 uint64
	n      int
	// proto marks the entry of the value's Protobuf document
	// (servedProtoObject) rather than its served JSON.
	proto bool
}

const (
	// DefaultServedCacheBytes bounds the cached JSON unless
	// Config.ServedCacheBytes says otherwise.
	DefaultServedCacheBytes = 32 << 20
	// servedCacheMaxObject is the largest object cached.
	servedCacheMaxObject = 64 << 10
)

var (
	served                   = &servedCache{entries: map[servedKey][]byte{}, maxBytes: DefaultServedCacheBytes}
	servedSeed1, servedSeed2 = maphash.MakeSeed(), maphash.MakeSeed()
)

func servedKeyOf(k *registry.Kind, value []byte) servedKey {
	return servedKey{kind: k, h1: maphash.Bytes(servedSeed1, value), h2: maphash.Bytes(servedSeed2, value), n: len(value)}
}

// get returns the cached served JSON of value, or nil. The slice is shared:
// callers must not modify it.
func (c *servedCache) get(key servedKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

// put caches b, the served JSON of the value behind key.
func (c *servedCache) put(key servedKey, b []byte) {
	if len(b) > servedCacheMaxObject {
		return
	}
	if cap(b) > len(b)+len(b)/8 {
		// An encoding appended into a growing buffer holds up to twice
		// its length: the cache keeps (and counts) a copy of its size.
		b = bytes.Clone(b)
	}
	size := cap(b) + servedEntryBytes
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+size > c.maxBytes {
		c.entries = map[servedKey][]byte{}
		c.bytes = 0
	}
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = b
		c.bytes += size
	}
}

// servedEntryBytes is what an entry costs beyond its bytes: its key and
// slice header in a map slot, with the map's spare room.
const servedEntryBytes = 96

// setMaxBytes bounds the cache at n bytes, emptying it when it holds more.
func (c *servedCache) setMaxBytes(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxBytes = n
	if c.bytes > n {
		c.entries = map[servedKey][]byte{}
		c.bytes = 0
	}
}

// servedProtoObject is appendProtoObject(nil, k, value) for a GET: the
// Protobuf document of a stored object is kept in the served cache beside
// the served JSON, under the same bound, so that repeated GETs of an
// unchanged object by client-go's typed clients (which ask for Protobuf)
// skip the transcoder (about 5 µs of a 1 KB ConfigMap's GET over HTTP/2,
// against 0.2 µs for the two hashes of the key). The slice is shared:
// callers must not modify it.
func servedProtoObject(k *registry.Kind, value []byte) ([]byte, bool) {
	if len(value) > servedCacheMaxObject {
		return appendProtoObject(nil, k, value)
	}
	key := servedKeyOf(k, value)
	key.proto = true
	if b := served.get(key); b != nil {
		return b, true
	}
	b, ok := appendProtoObject(nil, k, value)
	if ok {
		served.put(key, b)
	}
	return b, ok
}
