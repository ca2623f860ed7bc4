package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// benchObjects returns n ConfigMap objects of about 1 KiB.
func benchObjects(n int) []Object {
	pad := make([]byte, 1000)
	for i := range pad {
		pad[i] = 'x'
	}
	objs := make([]Object, n)
	for i := range objs {
		name := strconv.Itoa(i)
		objs[i] = Object{Key: key("ns", name), UID: "uid-" + name, Value: obj("ns", name, string(pad))}
	}
	return objs
}

// BenchmarkImporter loads 10,000 objects of about 1 KiB into a new
// database with 64 creates in flight, as `edgeapi migrate` does, Finish
// included (compaction of the load's change log, sync, rename), and
// reports objects per second.
func BenchmarkImporter(b *testing.B) {
	const n = 10_000
	objs := benchObjects(n)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		im, err := NewImporter(ctx, Config{Path: filepath.Join(b.TempDir(), fmt.Sprintf("db%d", i))}, 1_000_000)
		if err != nil {
			b.Fatal(err)
		}
		work := make(chan Object)
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for o := range work {
					if err := im.Create(ctx, o); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for _, o := range objs {
			work <- o
		}
		close(work)
		wg.Wait()
		if _, err := im.Finish(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "objects/s")
}

// BenchmarkDB_Dump reads 10,000 objects of about 1 KiB with Dump and
// reports objects per second.
func BenchmarkDB_Dump(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "edgeapi.db")
	im, err := NewImporter(ctx, Config{Path: path}, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range benchObjects(n) {
		if err := im.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := im.Finish(ctx); err != nil {
		b.Fatal(err)
	}
	db := openTest(b, Config{Path: path})
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		got := 0
		if _, err := db.Dump(ctx, func(Object) error { got++; return nil }); err != nil || got != n {
			b.Fatalf("Dump = %d objects (%v), want %d", got, err, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "objects/s")
}
