//go:build etcd

package etcdstore

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/edgeapi/edgeapi/store"
)

// BenchmarkStore_Create creates ConfigMaps from parallel goroutines
// against a single-member etcd on loopback (each create waits for the
// watch feed, as writes do).
func BenchmarkStore_Create(b *testing.B) {
	s := openStore(b)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := strconv.FormatInt(n.Add(1), 10)
			if _, err := s.Create(ctx, key("ns", name), "", cm("ns", name, "", "v")); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkStore_Get reads one ConfigMap with linearizable Ranges.
func BenchmarkStore_Get(b *testing.B) {
	s := openStore(b)
	ctx := context.Background()
	if _, err := s.Create(ctx, key("ns", "a"), "", cm("ns", "a", "", "v")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, key("ns", "a")); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkStore_List lists 1,000 ConfigMaps in pages of 500.
func BenchmarkStore_List(b *testing.B) {
	s := openStore(b)
	ctx := context.Background()
	for i := range 1000 {
		name := strconv.Itoa(i)
		if _, err := s.Create(ctx, key("ns", name), "", cm("ns", name, "", "v")); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		res, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Limit: 500})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Objects) != 500 {
			b.Fatalf("%d objects", len(res.Objects))
		}
	}
}
