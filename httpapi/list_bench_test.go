package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// seedListBench stores n ConfigMaps of about 1.4 KB in namespace bench
// directly through the store, shaped as the server stores a created one.
func seedListBench(b *testing.B, db *store.DB, n int) {
	b.Helper()
	ctx := context.Background()
	payload := strings.Repeat("x", 1000)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < n; i += 64 {
				if err := seedOne(ctx, db, i, payload); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func seedOne(ctx context.Context, db *store.DB, i int, payload string) error {
	{
		name := fmt.Sprintf("cm-%05d", i)
		v := fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"bench","uid":"%08d-0000-4000-8000-000000000000","creationTimestamp":"2026-11-26T00:00:00Z","labels":{"app":"bench"},"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-11-26T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]},"data":{"k":%q}}`, name, i, payload)
		_, err := db.Create(ctx, store.Key{Resource: "configmaps", Namespace: "bench", Name: name}, fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), []byte(v))
		return err
	}
}

// newListBenchServer is newBenchServer with the given list buffer (the
// default when 0).
func newListBenchServer(b *testing.B, listBuffer int) (*httptest.Server, *store.DB) {
	b.Helper()
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Store: db, Registry: registry.Builtin(), ListBufferBytes: listBuffer})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	b.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
		_ = db.Close()
	})
	return ts, db
}

// benchmarkList measures one full LIST of n ConfigMaps in the given
// Accept, end to end over HTTP: 10,000 (about 14 MB stored) are streamed
// at the default list buffer, 1,000 built in memory. With listBuffer
// 16 MiB (a --memory-limit of 512Mi) a streamed Protobuf list of 10,000
// keeps every item it encodes and reads the store once.
func benchmarkList(b *testing.B, n int, accept string, listBuffer int) {
	ts, db := newListBenchServer(b, listBuffer)
	seedListBench(b, db, n)
	client := benchClient()
	get := func() int64 {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/namespaces/bench/configmaps", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
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
	size := get()
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		get()
	}
}

const acceptProtobuf = "application/vnd.kubernetes.protobuf"

func BenchmarkServer_ListJSON(b *testing.B)     { benchmarkList(b, 10_000, "", 0) }
func BenchmarkServer_ListProtobuf(b *testing.B) { benchmarkList(b, 10_000, acceptProtobuf, 0) }
func BenchmarkServer_ListProtobufKept(b *testing.B) {
	benchmarkList(b, 10_000, acceptProtobuf, 16<<20)
}
func BenchmarkServer_ListJSON1k(b *testing.B)     { benchmarkList(b, 1000, "", 0) }
func BenchmarkServer_ListProtobuf1k(b *testing.B) { benchmarkList(b, 1000, acceptProtobuf, 0) }

// BenchmarkServer_ListJSONPaged500 lists the 10,000 ConfigMaps of
// BenchmarkServer_ListJSON in pages of 500, following continue tokens:
// one op is the whole list, to compare with the full LIST.
func BenchmarkServer_ListJSONPaged500(b *testing.B) {
	ts, db := newListBenchServer(b, 0)
	seedListBench(b, db, 10_000)
	client := benchClient()
	base := ts.URL + "/api/v1/namespaces/bench/configmaps?limit=500"
	// list reads every page; with count, it decodes them to count the
	// items, else it finds the continue token in the list's head only.
	var buf bytes.Buffer
	list := func(count bool) int {
		items := 0
		next := base
		for {
			resp, err := client.Get(next)
			if err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			_, err = buf.ReadFrom(resp.Body)
			body := buf.Bytes()
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("page: %d %v", resp.StatusCode, err)
			}
			cont := ""
			if count {
				var page struct {
					Metadata struct{ Continue string }
					Items    []json.RawMessage
				}
				if err := json.Unmarshal(body, &page); err != nil {
					b.Fatal(err)
				}
				items += len(page.Items)
				cont = page.Metadata.Continue
			} else if _, rest, ok := bytes.Cut(body[:min(len(body), 1024)], []byte(`"continue":"`)); ok {
				cont, _, _ = strings.Cut(string(rest), `"`)
			}
			if cont == "" {
				return items
			}
			next = base + "&continue=" + url.QueryEscape(cont)
		}
	}
	if n := list(true); n != 10_000 {
		b.Fatalf("paged list: %d items, want 10000", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		list(false)
	}
}
