package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// newBenchServer runs a Server over real SQLite behind httptest.
func newBenchServer(b *testing.B) (*httptest.Server, *store.DB) {
	b.Helper()
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Store: db, Registry: registry.Builtin()})
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

var benchPayload = strings.Repeat("x", 1000)

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
}

// BenchmarkServer_Create measures POST of ~1 KiB ConfigMaps from 64
// concurrent clients, end to end over HTTP.
func BenchmarkServer_Create(b *testing.B) {
	ts, db := newBenchServer(b)
	client := benchClient()
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"k":%q}}`, i, benchPayload)
			resp, err := client.Post(ts.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	st := db.Stats()
	if st.Batches > 0 {
		b.ReportMetric(float64(st.BatchedWrites)/float64(st.Batches), "writes/batch")
	}
}

// BenchmarkServer_Get measures GET by name from 16 concurrent clients.
func BenchmarkServer_Get(b *testing.B) {
	ts, _ := newBenchServer(b)
	client := benchClient()
	const objects = 1000
	for i := 0; i < objects; i++ {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"k":%q}}`, i, benchPayload)
		resp, err := client.Post(ts.URL+"/api/v1/namespaces/default/configmaps", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1) % objects
			resp, err := client.Get(fmt.Sprintf("%s/api/v1/namespaces/default/configmaps/cm-%d", ts.URL, i))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
