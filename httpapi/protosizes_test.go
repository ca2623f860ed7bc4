package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
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

// TestServer_ListProtobufSizes lists ConfigMaps as Protobuf through a
// server that streams any list of more than 3,000 bytes, so that the
// first pass keeps a few items and sizes the rest: a repeated list (whose
// first pass takes the sizes from protoSizes) answers the buffered
// server's bytes; with a wrong size in the cache the response is cut
// short rather than wrong, and the list after it is right again.
func TestServer_ListProtobufSizes(t *testing.T) {
	db := openTestStore(t)
	reg := registry.Builtin()
	serve := func(listBuffer int) *httptest.Server {
		s, err := New(Config{Store: db, Registry: reg, ListBufferBytes: listBuffer})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(func() {
			ts.Close()
			_ = s.Close(context.Background())
		})
		return ts
	}
	buffered, streamed := serve(1<<30), serve(3000)
	list := func(ts *httptest.Server) ([]byte, error) {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/namespaces/a/configmaps", nil)
		req.Header.Set("Accept", acceptProtobuf)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		return b, err
	}
	post := func(path, body string) {
		t.Helper()
		resp, err := http.Post(buffered.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s = %d", path, resp.StatusCode)
		}
	}
	post("/api/v1/namespaces", `{"metadata":{"name":"a"}}`)
	for i := range 12 {
		post("/api/v1/namespaces/a/configmaps", fmt.Sprintf(`{"metadata":{"name":"cm%02d"},"data":{"k":%q}}`, i, strings.Repeat("v", 100*i)))
	}
	want, err := list(buffered)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if got, err := list(streamed); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("list %d: %q, %v\nbuffered: %q", i, got, err, want)
		}
	}

	// Every stored ConfigMap's cached size one byte off.
	res, err := db.List(context.Background(), store.ListOptions{Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	var k *registry.Kind
	for _, kk := range reg.Kinds() {
		if kk.GVK.String() == "/v1, Kind=ConfigMap" {
			k = kk
		}
	}
	var keys []servedKey
	var sizes []int
	for _, o := range res.Objects {
		n, err := protoItemSize(k, o.Value)
		if err != nil {
			t.Fatal(err)
		}
		keys, sizes = append(keys, servedKeyOf(k, o.Value)), append(sizes, n+1)
	}
	protoSizes.put(keys, sizes)
	if got, err := list(streamed); err == nil {
		t.Errorf("list with wrong cached sizes = %d bytes, no error; want the response cut short", len(got))
	}
	if got, err := list(streamed); err != nil || !bytes.Equal(got, want) {
		t.Errorf("list after the cut one: %q, %v\nbuffered: %q", got, err, want)
	}
}
