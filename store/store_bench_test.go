package store

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// payload850 is the bulk of a ~1 KiB object, built once so that the
// benchmarks measure the store rather than fmt.
var payload850 = strings.Repeat("x", 850)

// value1K is a ~1 KiB object as the HTTP layer passes it.
func value1K(ns, name string) []byte {
	b := make([]byte, 0, 1024)
	b = append(b, `{"metadata":{"name":"`...)
	b = append(b, name...)
	b = append(b, `","namespace":"`...)
	b = append(b, ns...)
	b = append(b, `","uid":"6f1c1e4e-0000-4000-8000-000000000000","labels":{"app":"bench"}},"data":{"payload":"`...)
	b = append(b, payload850...)
	return append(b, `"}}`...)
}

// BenchmarkDB_Create measures group commit: 64 goroutines create objects
// concurrently, each Create waiting for its commit (fsync). It reports the
// average number of writes per transaction.
func BenchmarkDB_Create(b *testing.B) {
	db := openTest(b, Config{})
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.SetBytes(int64(len(value1K("bench", "o-0000000"))))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := "o-" + strconv.FormatInt(n.Add(1), 10)
			if _, err := db.Create(ctx, key("bench", name), "u", value1K("bench", name)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	st := db.Stats()
	if st.Batches > 0 {
		b.ReportMetric(float64(st.BatchedWrites)/float64(st.Batches), "writes/batch")
	}
	b.ReportMetric(float64(st.MaxBatchSeen), "max-batch")
}

// BenchmarkDB_List10k lists 10,000 objects of ~1 KiB from one namespace.
func BenchmarkDB_List10k(b *testing.B) {
	db := openTest(b, Config{})
	ctx := context.Background()
	const n = 10000
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			name := fmt.Sprintf("o-%05d", i)
			_, err := db.Create(ctx, key("bench", name), "u", value1K("bench", name))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		opts ListOptions
		want int
	}{
		{"all", ListOptions{Resource: "configmaps"}, n},
		{"namespace", ListOptions{Resource: "configmaps", Namespace: "bench"}, n},
		{"page500", ListOptions{Resource: "configmaps", Limit: 500}, 500},
		// Rebuilt from the change log: the last 100 creates are undone.
		{"past", ListOptions{Resource: "configmaps", Rev: n - 100}, n - 100},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var bytes int64
			for b.Loop() {
				res, err := db.List(ctx, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Objects) != tc.want {
					b.Fatalf("listed %d objects, want %d", len(res.Objects), tc.want)
				}
				bytes = 0
				for _, o := range res.Objects {
					bytes += int64(len(o.Value))
				}
			}
			b.SetBytes(bytes)
		})
	}
}

// BenchmarkDB_Get reads one ~1 KiB object by key from SQLite (the object
// cache is off), among 1,000 in 10 namespaces.
func BenchmarkDB_Get(b *testing.B) {
	db := openTest(b, Config{ObjectCacheBytes: -1})
	ctx := context.Background()
	keys := createSpread(b, db, 10, 100)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := keys[i%len(keys)]
		i++
		if _, err := db.Get(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDB_ListNamespaces lists 10,000 objects of ~1 KiB spread over
// 100 namespaces, across namespaces: whole, in pages of 500 (each page's
// remaining count from the cache or a COUNT), and at a past revision.
func BenchmarkDB_ListNamespaces(b *testing.B) {
	db := openTest(b, Config{})
	ctx := context.Background()
	keys := createSpread(b, db, 100, 100)
	n := len(keys)
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := db.List(ctx, ListOptions{Resource: "configmaps"})
			if err != nil || len(res.Objects) != n {
				b.Fatalf("List() = %d objects, %v; want %d", len(res.Objects), err, n)
			}
		}
	})
	b.Run("pages500", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			opts := ListOptions{Resource: "configmaps", Limit: 500}
			got := 0
			for {
				res, err := db.List(ctx, opts)
				if err != nil {
					b.Fatal(err)
				}
				got += len(res.Objects)
				if !res.More {
					break
				}
				last := res.Objects[len(res.Objects)-1].Key
				opts.Rev, opts.AfterNamespace, opts.AfterName = res.Rev, last.Namespace, last.Name
			}
			if got != n {
				b.Fatalf("listed %d objects in pages, want %d", got, n)
			}
		}
	})
	b.Run("past", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: int64(n - 100)})
			if err != nil || len(res.Objects) != n-100 {
				b.Fatalf("List() = %d objects, %v; want %d", len(res.Objects), err, n-100)
			}
		}
	})
}

// createSpread creates per objects of ~1 KiB in each of nss namespaces,
// 64 at a time, and returns their keys.
func createSpread(b *testing.B, db *DB, nss, per int) []Key {
	b.Helper()
	ctx := context.Background()
	var keys []Key
	for i := range nss {
		for j := range per {
			keys = append(keys, key(fmt.Sprintf("ns-%03d", i), fmt.Sprintf("o-%05d", j)))
		}
	}
	errs := make(chan error, len(keys))
	sem := make(chan struct{}, 64)
	for _, k := range keys {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := db.Create(ctx, k, "u", value1K(k.Namespace, k.Name))
			errs <- err
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	return keys
}
