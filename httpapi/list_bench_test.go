package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

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

// benchmarkList measures one full LIST of n ConfigMaps in the given
// Accept, end to end over HTTP: 10,000 (about 14 MB stored) are streamed
// at the default list buffer, 1,000 built in memory.
func benchmarkList(b *testing.B, n int, accept string) {
	ts, db := newBenchServer(b)
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

func BenchmarkServer_ListJSON(b *testing.B)       { benchmarkList(b, 10_000, "") }
func BenchmarkServer_ListProtobuf(b *testing.B)   { benchmarkList(b, 10_000, acceptProtobuf) }
func BenchmarkServer_ListJSON1k(b *testing.B)     { benchmarkList(b, 1000, "") }
func BenchmarkServer_ListProtobuf1k(b *testing.B) { benchmarkList(b, 1000, acceptProtobuf) }
