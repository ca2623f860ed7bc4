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
