package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// benchConfigMap is a ConfigMap as the API stores it, about 600 bytes.
func benchConfigMap(ns, name string) []byte {
	return fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"uid":"uid-%s","creationTimestamp":"2026-11-26T00:00:00Z","labels":{"app":"bench"}},"data":{"payload":%q}}`,
		name, ns, name, strings.Repeat("x", 400))
}

// benchGCObjects is the number of ConfigMaps the garbage collector's
// benchmarks store: 100,000, or $GC_BENCH_OBJECTS.
func benchGCObjects() int {
	if n, err := strconv.Atoi(os.Getenv("GC_BENCH_OBJECTS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// seedConfigMaps stores n ConfigMaps in namespace ns, 64 writers at a
// time.
func seedConfigMaps(tb testing.TB, db *store.DB, ns string, n int) {
	tb.Helper()
	ctx := context.Background()
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			name := fmt.Sprintf("cm-%06d", i)
			_, err := db.Create(ctx, store.Key{Resource: "configmaps", Namespace: ns, Name: name}, "uid-"+name, benchConfigMap(ns, name))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkGarbageCollector_Resync measures one full rescan of a store of
// benchGCObjects ConfigMaps without owners: what the collector did every
// minute before the tick was made to retry only what failed.
func BenchmarkGarbageCollector_Resync(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{Path: filepath.Join(b.TempDir(), "bench.db"), UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	seedConfigMaps(b, db, "bench", benchGCObjects())
	gc := newGarbageCollector(New(Config{Store: db, Registry: registry.Builtin()}))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		if err := gc.resync(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per operation since start, in
// milliseconds: all goroutines' (the store's included), and less noisy
// than ns/op on a loaded machine.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkGarbageCollector_Tick measures the collector's periodic tick
// on a store of benchGCObjects ConfigMaps, once it has scanned them: with
// nothing to retry (idle), and with 100 dependents of existing owners to
// process again (each tick reads those and their owners).
func BenchmarkGarbageCollector_Tick(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{Path: filepath.Join(b.TempDir(), "bench.db"), UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	seedConfigMaps(b, db, "bench", benchGCObjects())
	var pending []store.Key
	owner := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"owner","namespace":"deps","uid":"uid-owner"}}`
	if _, err := db.Create(ctx, store.Key{Resource: "configmaps", Namespace: "deps", Name: "owner"}, "uid-owner", []byte(owner)); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		key := store.Key{Resource: "configmaps", Namespace: "deps", Name: fmt.Sprintf("dep-%03d", i)}
		value := fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"deps","uid":"uid-%s","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"uid-owner"}]}}`, key.Name, key.Name)
		if _, err := db.Create(ctx, key, "uid-"+key.Name, value); err != nil {
			b.Fatal(err)
		}
		pending = append(pending, key)
	}
	gc := newGarbageCollector(New(Config{Store: db, Registry: registry.Builtin()}))
	if err := gc.resync(ctx); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		pending []store.Key
	}{{"idle", nil}, {"100-pending", pending}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				for _, key := range tc.pending {
					gc.retryLater(key)
				}
				gc.tick(ctx)
			}
			reportCPU(b, cpu)
		})
	}
}
