package main

import (
	"math"

	"github.com/edgeapi/edgeapi/store"
)

// The memory budget of --memory-limit. One figure sizes everything in the
// daemon that grows with load, so that an operator who gives edgeapi
// 128 MiB of a 512 MB device gets a daemon whose RSS stays within
// 128 MiB, whatever the clients do. The RSS counts:
//
//   - the binary's own pages that the process has touched (clean file
//     pages: the Go runtime's soft limit does not count them), measured at
//     start (binaryResidentBytes);
//   - SQLite's page caches and memory maps, which are outside the Go heap
//     (modernc's libc allocates with mmap) and so outside Go's soft limit;
//   - Go's soft memory limit, which is what is left: near it the collector
//     works harder, so garbage does not pile up;
//   - the caches inside the Go heap (watch cache ring, object cache,
//     served-JSON cache, list buffers) as fixed shares of it;
//   - the watch bounds, at a conservative cost per watch.
//
// budgetFor is a pure function of the limit and the binary's pages; its
// table test shows the sizes at the usual limits. Flags that set a size
// themselves (--max-watches, --max-watches-per-user) win over the budget.

// Shares of the budget and their bounds.
const (
	// minMemoryLimit is the smallest --memory-limit accepted (other than
	// 0): below it the fixed costs (Go runtime, SQLite schema and
	// statements) leave the caches nothing.
	minMemoryLimit = 32 << 20
	// sqliteConns is the number of SQLite connections the store opens:
	// the writer, the checkpointer and the read pool.
	sqliteConns = 2 + store.DefaultReadConns
	// maxSQLiteCache is SQLite's default page cache per connection
	// (cache_size=-2000, in KiB), which larger budgets keep.
	maxSQLiteCache = 2000 << 10
	// minSQLiteCache keeps a small budget's caches useful: 64 pages.
	minSQLiteCache = 256 << 10
	// readConns is the number of read connections, each with its own map
	// of the database file.
	readConns = store.DefaultReadConns
	// maxSQLiteMmap is the most of the database file a read connection
	// maps (mmap_size): a 10k-object list reads as fast with it as with
	// 256 MiB.
	maxSQLiteMmap = 32 << 20
	// minMmapBudget is the smallest budget that maps the database at all.
	// Mapped pages count toward the RSS once read, once per connection
	// that maps them (a LIST of 10,000 from a checkpointed file left
	// 38-42 MiB of the four 32 MiB maps resident); below it the read
	// connections read through their page caches, which costs that LIST
	// about 12% more daemon CPU (README, Memory).
	minMmapBudget = 256 << 20
	// DefaultBinaryBytes is what budgetFor counts for the binary's own
	// resident pages when they cannot be measured (not Linux, or
	// /proc/self/smaps unreadable): the amd64 binary had 27 MiB of its
	// pages resident once ready, about 30 MiB after the bench's workloads.
	DefaultBinaryBytes = 30 << 20
	// overheadShare: B/overheadShare of the budget is left for what the
	// Go runtime holds beyond its soft limit (the heap overshoots it
	// between collections; stacks, metadata) and SQLite beyond its page
	// caches (schemas, statements, the allocator): without it one daemon
	// serving issue 13's whole benchmark over TLS and HTTP/2 peaked at
	// 133-138 MiB at 128Mi, anon 105-110 MiB against a Go limit of 86
	// and page caches of 12.
	//
	// With issue 13's last caches the same sequence peaked at
	// 128.0-128.5 MiB with B/12, anon 99.5-100 MiB against a Go limit
	// of 75.6 and page caches of 12 (12.4 MiB over them): B/9 is
	// 14.2 MiB at 128Mi.
	overheadShare = 9
	// maxOverheadBytes caps that share: what it stands for does not grow
	// with the budget.
	maxOverheadBytes = 16 << 20
	// maxUpdateCacheBytes caps the update cache's share: the entries of a
	// few thousand objects' updates.
	maxUpdateCacheBytes = 4 << 20
	// watchBytesPerWatch is what --max-watches allows per watch: an idle
	// watch costs 5-6 KiB over plain HTTP/1.1, about 29 KiB over HTTP/2
	// and 69-75 KiB over HTTP/1.1 with TLS (README, Benchmarks), plus a
	// share of its write batch (64 KiB) while it writes.
	watchBytesPerWatch = 128 << 10
	// defaultWatchCacheEventsPer128Mi is the watch cache ring's event
	// count at a 128 MiB budget (store.DefaultWatchCacheEvents), scaled
	// with the budget between minWatchCacheEvents and maxWatchCacheEvents.
	minWatchCacheEvents = 1000
	maxWatchCacheEvents = 100_000
)

// memoryBudget is what a --memory-limit sizes. Zero fields mean the
// component's own default.
type memoryBudget struct {
	// BinaryBytes is what the budget counts for the binary's resident
	// pages (an input: measured, or DefaultBinaryBytes).
	BinaryBytes int64
	// GoLimit is the Go runtime's soft memory limit (0: none).
	GoLimit int64
	// SQLiteCacheBytes is each SQLite connection's page cache
	// (cache_size), SQLiteMmapBytes each read connection's mmap_size
	// (negative: none, as store.Config reads it).
	SQLiteCacheBytes int
	SQLiteMmapBytes  int
	// WatchCacheEvents and WatchCacheBytes bound the watch cache ring.
	WatchCacheEvents int
	WatchCacheBytes  int
	// ObjectCacheBytes bounds the store's object cache.
	ObjectCacheBytes int
	// ServedCacheBytes bounds the API's cache of converted custom
	// resources' JSON.
	ServedCacheBytes int
	// UpdateCacheBytes bounds the API's cache of the managedFields that
	// updates of built-in kinds get.
	UpdateCacheBytes int
	// ListBufferBytes is the size up to which a LIST is built in memory
	// (larger ones are streamed in pages).
	ListBufferBytes int
	// ListMemoryBytes is shared by the LISTs in flight, BodyMemoryBytes
	// by the request bodies held (see httpapi's memgate.go).
	ListMemoryBytes int64
	BodyMemoryBytes int64
	// MaxWatches and MaxWatchesPerUser are the defaults of --max-watches
	// and --max-watches-per-user.
	MaxWatches        int
	MaxWatchesPerUser int
}

// budgetFor sizes the daemon for a memory limit of limit bytes, of which
// the binary's resident pages take binary bytes (0 or less:
// DefaultBinaryBytes). With limit 0 (no limit) the caches are sized as
// for DefaultMemoryLimit and the Go runtime gets no soft limit.
//
// The formulas, with B the limit and P the binary's pages:
//
//	SQLite page cache  B/64 per connection, 256 KiB to 2000 KiB (6 connections)
//	SQLite mmap        none below 256 MiB, then B/32 per read connection, at most 32 MiB (4 connections)
//	runtime overhead   O = B/9, at most 16 MiB: what the Go runtime holds
//	                   beyond its soft limit and SQLite beyond its page
//	                   caches under load
//	Go soft limit      G = B − P − O − 6 × page cache − 4 × mmap, at least B/2
//	heap base          H = min(B, 3G/2), of which the caches take shares:
//	watch cache        H/4 bytes; 10,000 events per 128 MiB of H (1,000 to 100,000)
//	object cache       H/32
//	served cache       H/8 (converted custom resources' JSON, Protobuf GETs' documents)
//	LIST buffer        H/32, and the Protobuf list sizes cache half that, H/64
//	update cache       H/64, at most 4 MiB (managedFields of updates)
//	LISTs in flight    H/8 shared (each up to twice the LIST buffer)
//	bodies in flight   H/16 shared (a body larger than that is read alone)
//	max watches        B/128 KiB, per user half of that
//
// The caches' shares of H add up to 15/32 of it, so they never take more
// than 71% of the Go limit: the rest is for requests and the
// runtime. At limits below about 72 MiB the floor of G (B/2) wins and the
// RSS may pass the limit: the binary's pages and SQLite's caches leave too
// little.
func budgetFor(limit, binary int64) memoryBudget {
	b := limit
	if b <= 0 {
		b = DefaultMemoryLimit
	}
	if binary <= 0 {
		binary = DefaultBinaryBytes
	}
	sqliteCache := clamp(b/64, minSQLiteCache, maxSQLiteCache)
	var sqliteMmap int64
	if b >= minMmapBudget {
		sqliteMmap = min(b/8/readConns, maxSQLiteMmap)
	}
	g := max(b-binary-overheadFor(b)-sqliteConns*sqliteCache-readConns*sqliteMmap, b/2)
	h := min(b, g*3/2)
	var goLimit int64
	if limit > 0 {
		goLimit = g
	}
	mmap := toInt(sqliteMmap)
	if mmap == 0 {
		mmap = -1 // store.Config: 0 is the store's default, negative none
	}
	maxWatches := b / watchBytesPerWatch
	return memoryBudget{
		BinaryBytes:       binary,
		GoLimit:           goLimit,
		SQLiteCacheBytes:  toInt(sqliteCache),
		SQLiteMmapBytes:   mmap,
		WatchCacheEvents:  toInt(clamp(store.DefaultWatchCacheEvents*h/(128<<20), minWatchCacheEvents, maxWatchCacheEvents)),
		WatchCacheBytes:   toInt(h / 4),
		ObjectCacheBytes:  toInt(h / 32),
		ServedCacheBytes:  toInt(h / 8),
		ListBufferBytes:   toInt(h / 32),
		ListMemoryBytes:   h / 8,
		BodyMemoryBytes:   h / 16,
		UpdateCacheBytes:  toInt(min(h/64, maxUpdateCacheBytes)),
		MaxWatches:        toInt(maxWatches),
		MaxWatchesPerUser: toInt(maxWatches / 2),
	}
}

// overheadFor is the budget's share for the runtime's and SQLite's memory
// beyond the Go limit and the page caches (see overheadShare).
func overheadFor(b int64) int64 { return min(b/overheadShare, maxOverheadBytes) }

func clamp(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

// toInt converts a size to int, capped at 2 GiB - 1 so that it fits where
// int is 32 bits (armv7).
func toInt(v int64) int { return int(min(v, math.MaxInt32)) }
