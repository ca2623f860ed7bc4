package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
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
		// The least of five measurements: other tests' goroutines may
		// still allocate and free meanwhile.
		per := math.Inf(1)
		for range 5 {
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
			if d := int64(after.HeapAlloc) - int64(before.HeapAlloc); d > 0 {
				per = min(per, float64(d)/float64(n))
			}
			runtime.KeepAlive(c)
		}
		if math.IsInf(per, 1) {
			t.Fatalf("%d entries: the heap never grew", n)
		}
		worst = max(worst, per)
		t.Logf("%6d entries: %.1f bytes each", n, per)
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

// protoListServers serves db through a server that builds every list in
// memory and one that streams any list past listBuffer bytes, and returns
// a function that lists namespace a's ConfigMaps as Protobuf from either,
// and one that creates a ConfigMap there with the given data.
func protoListServers(t *testing.T, reg *registry.Registry, db *store.DB, listBuffer int) (buffered, streamed *httptest.Server, list func(*httptest.Server) ([]byte, error), create func(name, data string)) {
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
	buffered, streamed = serve(1<<30), serve(listBuffer)
	list = func(ts *httptest.Server) ([]byte, error) {
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
		if resp.StatusCode != http.StatusCreated && !(path == "/api/v1/namespaces" && resp.StatusCode == http.StatusConflict) {
			t.Fatalf("POST %s = %d", path, resp.StatusCode)
		}
	}
	post("/api/v1/namespaces", `{"metadata":{"name":"a"}}`) // or there already
	create = func(name, data string) {
		t.Helper()
		post("/api/v1/namespaces/a/configmaps", fmt.Sprintf(`{"metadata":{"name":%q},"data":{"k":%q}}`, name, data))
	}
	return buffered, streamed, list, create
}

// randomLetters returns n letters that S2 cannot compress.
func randomLetters(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.Intn(26))
	}
	return string(b)
}

// TestServer_ListProtobufSizes lists ConfigMaps as Protobuf through a
// server that streams any list of more than 3,000 bytes, so that the
// first pass keeps a few items (their data does not compress) and sizes
// the rest: a repeated list (whose first pass takes the sizes from
// protoSizes) answers the buffered server's bytes; with a wrong size in
// the cache the response is cut short rather than wrong, and the list
// after it is right again.
func TestServer_ListProtobufSizes(t *testing.T) {
	db := openTestStore(t)
	reg := registry.Builtin()
	buffered, streamed, list, create := protoListServers(t, reg, db, 3000)
	r := rand.New(rand.NewSource(13))
	for i := range 12 {
		create(fmt.Sprintf("cm%02d", i), randomLetters(r, 100*i))
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

// TestServer_ListProtobufKeptBlocks lists 400 ConfigMaps of about 1 KB,
// every third one's data random letters and the others' repeated words,
// through servers that stream any list of more than 64, 200 and 380 KiB:
// the kept items fill several blocks, compressed and not, and the bound
// falls inside a block; each list answers the buffered server's bytes.
func TestServer_ListProtobufKeptBlocks(t *testing.T) {
	db := openTestStore(t)
	reg := registry.Builtin()
	r := rand.New(rand.NewSource(13))
	var servers []*httptest.Server
	var buffered *httptest.Server
	var list func(*httptest.Server) ([]byte, error)
	for i, bound := range []int{64 << 10, 200 << 10, 380 << 10} {
		b, s, l, create := protoListServers(t, reg, db, bound)
		servers = append(servers, s)
		if i == 0 {
			buffered, list = b, l
			for j := range 400 {
				data := strings.Repeat(fmt.Sprintf("word%d ", j%7), 150)
				if j%3 == 0 {
					data = randomLetters(r, 1000)
				}
				create(fmt.Sprintf("cm%03d", j), data)
			}
		}
	}
	want, err := list(buffered)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 380<<10 {
		t.Fatalf("list = %d bytes, want more than the largest bound", len(want))
	}
	for i, s := range servers {
		for range 2 {
			if got, err := list(s); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("server %d: %d bytes, %v; buffered %d bytes", i, len(got), err, len(want))
			}
		}
	}
}

// BenchmarkServer_ListProtobufRandom is BenchmarkServer_ListProtobuf with
// each ConfigMap's 1,000-byte value random letters, which S2 cannot
// compress (BenchmarkServer_ListProtobuf's repeated byte compresses
// about 30 times): the kept items take their encoded size, and the first
// pass pays for trying to compress them.
func BenchmarkServer_ListProtobufRandom(b *testing.B) {
	ts, db := newListBenchServer(b, 0)
	r := rand.New(rand.NewSource(13))
	for i := range 10_000 {
		if err := seedOne(context.Background(), db, i, randomLetters(r, 1000)); err != nil {
			b.Fatal(err)
		}
	}
	client := benchClient()
	get := func() int64 {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/namespaces/bench/configmaps", nil)
		req.Header.Set("Accept", acceptProtobuf)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("list: %d %v", resp.StatusCode, err)
		}
		return n
	}
	b.SetBytes(get())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		get()
	}
}
