//go:build etcd

package etcdstore

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/store"
)

// BenchmarkStore_Advance raises a single-member etcd's revision by b.N
// with Advance, for workers writes in flight, and reports revisions per
// second (the cost of a move from a store at a high revision).
func BenchmarkStore_Advance(b *testing.B) {
	for _, workers := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := openStore(b)
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			n, err := s.Advance(ctx, s.Rev()+int64(b.N), workers)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "revisions/s")
		})
	}
}

// BenchmarkStore_Dump reads 10,000 ConfigMaps of about 1 KiB with Dump
// and reports objects per second.
func BenchmarkStore_Dump(b *testing.B) {
	s := openStore(b)
	ctx := context.Background()
	const n = 10_000
	pad := make([]byte, 1000)
	for i := range pad {
		pad[i] = 'x'
	}
	sem := make(chan struct{}, 64)
	errs := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			name := strconv.Itoa(i)
			_, err := s.Create(ctx, key("ns", name), "u", cm("ns", name, "u", string(pad)))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		got := 0
		if _, err := s.Dump(ctx, func(store.Object) error { got++; return nil }); err != nil || got != n {
			b.Fatalf("Dump = %d objects (%v), want %d", got, err, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "objects/s")
}
