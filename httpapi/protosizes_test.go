package httpapi

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// TestProtoSizeCache_EntryBytes measures what the cache's entries take on
// the heap at sizes from just after the map grew to just before it grows
// again, and checks that it stays within protoSizeEntryBytes an entry, the
// figure the cache is bounded by.
func TestProtoSizeCache_EntryBytes(t *testing.T) {
	k := registry.Builtin().Kinds()[0]
	worst := 0.0
	for _, n := range []int{1000, 1800, 2000, 3500, 5000, 7000, 9000, 15000, 20000} {
		keys := make([]servedKey, n)
		sizes := make([]int, n)
		for i := range keys {
			keys[i] = servedKeyOf(k, fmt.Appendf(nil, `{"metadata":{"name":"cm-%d"}}`, i))
			sizes[i] = i
		}
		c := &protoSizeCache{entries: map[servedKey]uint32{}, maxEntries: n}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c.put(keys, sizes)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if len(c.entries) != n {
			t.Fatalf("entries = %d, want %d", len(c.entries), n)
		}
		per := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		worst = max(worst, per)
		t.Logf("%6d entries: %.1f bytes each", n, per)
		runtime.KeepAlive(c)
		runtime.KeepAlive(keys)
	}
	if worst > protoSizeEntryBytes {
		t.Errorf("an entry takes up to %.1f bytes, want at most protoSizeEntryBytes (%d)", worst, protoSizeEntryBytes)
	}
}

// TestProtoSizeCache_Bound checks that the cache gives back what it was
// given, holds at most its bound, and is emptied when full.
func TestProtoSizeCache_Bound(t *testing.T) {
	k := registry.Builtin().Kinds()[0]
	objs := make([]store.Object, 10)
	keys := make([]servedKey, len(objs))
	sizes := make([]int, len(objs))
	for i := range objs {
		objs[i].Value = fmt.Appendf(nil, `{"metadata":{"name":"cm-%d"}}`, i)
		keys[i] = servedKeyOf(k, objs[i].Value)
		sizes[i] = 100 + i
	}
	c := &protoSizeCache{entries: map[servedKey]uint32{}}
	c.setMaxBytes(6 * protoSizeEntryBytes)
	c.put(keys[:6], sizes[:6])
	got := make([]int, len(objs))
	c.lookup(k, objs, make([]servedKey, len(objs)), got)
	want := []int{100, 101, 102, 103, 104, 105, -1, -1, -1, -1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sizes = %v, want %v", got, want)
	}
	c.put(keys[6:7], sizes[6:7])
	c.lookup(k, objs, make([]servedKey, len(objs)), got)
	want = []int{-1, -1, -1, -1, -1, -1, 106, -1, -1, -1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the 7th entry, sizes = %v, want %v (emptied, then the 7th)", got, want)
	}
	// Another kind's identical value is another entry.
	other := registry.Builtin().Kinds()[1]
	c.lookup(other, objs[6:7], make([]servedKey, 1), got[:1])
	if got[0] != -1 {
		t.Errorf("size for another kind = %d, want -1", got[0])
	}
}
