package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBudgetFor(t *testing.T) {
	const Ki, Mi = 1 << 10, 1 << 20
	// At 128Mi with 30 MiB of binary pages and B/9 (14.2 MiB) for the
	// runtime's overhead the Go limit is 72.1 MiB (75,559,368), H = 3G/2
	// = 113,339,052 is less than the limit, and the caches are its
	// shares.
	default128 := memoryBudget{
		BinaryBytes:      30 * Mi,
		GoLimit:          128*Mi - 30*Mi - 128*Mi/9 - 6*2000*Ki,
		SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: -1,
		WatchCacheEvents: 8444, WatchCacheBytes: 28_334_763,
		ObjectCacheBytes: 3_541_845, ServedCacheBytes: 14_167_381, ListBufferBytes: 3_541_845, ListMemoryBytes: 14_167_381, BodyMemoryBytes: 7_083_690,
		UpdateCacheBytes: 1_770_922,
		MaxWatches:       1024, MaxWatchesPerUser: 512,
	}
	noGoLimit := default128
	noGoLimit.GoLimit = 0
	tests := []struct {
		name          string
		limit, binary int64
		want          memoryBudget
	}{
		{name: "default 128Mi, 30Mi of binary pages: no mmap", limit: 128 * Mi, binary: 30 * Mi, want: default128},
		{name: "binary pages unknown: DefaultBinaryBytes", limit: 128 * Mi, binary: 0, want: default128},
		{name: "no limit: caches as for 128Mi, no Go limit", limit: 0, binary: 30 * Mi, want: noGoLimit},
		{
			// 128Mi - 40Mi - 128Mi/9 - 6 × 2000Ki = 65,073,608 is under
			// the Go limit's floor of B/2: G = 64 MiB, H = 3G/2 = 96 MiB
			// (less than the limit), and the caches are its shares.
			name:  "128Mi, 40Mi of binary pages: the caches shrink with the Go limit",
			limit: 128 * Mi, binary: 40 * Mi,
			want: memoryBudget{
				BinaryBytes:      40 * Mi,
				GoLimit:          64 * Mi,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: -1,
				WatchCacheEvents: 7500, WatchCacheBytes: 24 * Mi,
				ObjectCacheBytes: 3 * Mi, ServedCacheBytes: 12 * Mi, ListBufferBytes: 3 * Mi, ListMemoryBytes: 12 * Mi, BodyMemoryBytes: 6 * Mi,
				UpdateCacheBytes: 1536 * Ki,
				MaxWatches:       1024, MaxWatchesPerUser: 512,
			},
		},
		{
			name:  "smallest 32Mi: the Go limit's floor, half the limit",
			limit: 32 * Mi, binary: 30 * Mi,
			want: memoryBudget{
				BinaryBytes:      30 * Mi,
				GoLimit:          16 * Mi,
				SQLiteCacheBytes: 512 * Ki, SQLiteMmapBytes: -1,
				WatchCacheEvents: 1875, WatchCacheBytes: 6 * Mi,
				ObjectCacheBytes: 768 * Ki, ServedCacheBytes: 3 * Mi, ListBufferBytes: 768 * Ki, ListMemoryBytes: 3 * Mi, BodyMemoryBytes: 1536 * Ki,
				UpdateCacheBytes: 384 * Ki,
				MaxWatches:       256, MaxWatchesPerUser: 128,
			},
		},
		{
			name:  "256Mi: the four read connections map B/32 each",
			limit: 256 * Mi, binary: 30 * Mi,
			want: memoryBudget{
				BinaryBytes:      30 * Mi,
				GoLimit:          256*Mi - 30*Mi - 16*Mi - 6*2000*Ki - 4*8*Mi,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: 8 * Mi,
				WatchCacheEvents: 19486, WatchCacheBytes: 65_384_448,
				ObjectCacheBytes: 8_173_056, ServedCacheBytes: 32_692_224, ListBufferBytes: 8_173_056, ListMemoryBytes: 32_692_224, BodyMemoryBytes: 16_346_112,
				UpdateCacheBytes: 4_086_528,
				MaxWatches:       2048, MaxWatchesPerUser: 1024,
			},
		},
		{
			name:  "1Gi: SQLite at its defaults, the map at its most",
			limit: 1024 * Mi, binary: 30 * Mi,
			want: memoryBudget{
				BinaryBytes:      30 * Mi,
				GoLimit:          1024*Mi - 30*Mi - 16*Mi - 6*2000*Ki - 4*32*Mi,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: 32 * Mi,
				WatchCacheEvents: 80000, WatchCacheBytes: 256 * Mi,
				ObjectCacheBytes: 32 * Mi, ServedCacheBytes: 128 * Mi, ListBufferBytes: 32 * Mi, ListMemoryBytes: 128 * Mi, BodyMemoryBytes: 64 * Mi,
				UpdateCacheBytes: 4 * Mi,
				MaxWatches:       8192, MaxWatchesPerUser: 4096,
			},
		},
		{
			name:  "64Gi: ring events and int sizes capped",
			limit: 64 << 30, binary: 30 * Mi,
			want: memoryBudget{
				BinaryBytes:      30 * Mi,
				GoLimit:          64<<30 - 30*Mi - 16*Mi - 6*2000*Ki - 4*32*Mi,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: 32 * Mi,
				WatchCacheEvents: 100000, WatchCacheBytes: 1<<31 - 1,
				ObjectCacheBytes: 1<<31 - 1, ServedCacheBytes: 1<<31 - 1, ListBufferBytes: 1<<31 - 1, ListMemoryBytes: 8 << 30, BodyMemoryBytes: 4 << 30,
				UpdateCacheBytes: 4 * Mi,
				MaxWatches:       512 * Ki, MaxWatchesPerUser: 256 * Ki,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := budgetFor(tt.limit, tt.binary)
			if got != tt.want {
				t.Errorf("budgetFor(%d, %d) =\n%+v\nwant\n%+v", tt.limit, tt.binary, got, tt.want)
			}
		})
	}
}

// TestBudgetFor_Sums checks, for every limit from 32 MiB to 4 GiB and
// binaries of 10 to 50 MiB, that the binary's pages, what the budget gives
// SQLite (page caches, and a map per read connection) and the Go limit
// add up to the limit (or, where that would leave
// Go less than half the limit, that Go gets half), and that the caches
// inside the Go heap leave at least a third of the Go limit to requests
// and the runtime.
func TestBudgetFor_Sums(t *testing.T) {
	for _, binary := range []int64{10 << 20, 30 << 20, 50 << 20} {
		for limit := int64(minMemoryLimit); limit <= 4<<30; limit += 8 << 20 {
			b := budgetFor(limit, binary)
			sqlite := int64(sqliteConns*b.SQLiteCacheBytes + readConns*max(b.SQLiteMmapBytes, 0))
			overhead := overheadFor(limit)
			if got := b.BinaryBytes + overhead + sqlite + b.GoLimit; got != limit && b.GoLimit != limit/2 {
				t.Fatalf("limit %d: binary %d + overhead %d + SQLite %d + Go %d = %d, want the limit (or a Go limit of half)", limit, b.BinaryBytes, overhead, sqlite, b.GoLimit, got)
			}
			if b.GoLimit < limit/2 {
				t.Fatalf("limit %d, binary %d: Go limit %d, less than half the limit", limit, binary, b.GoLimit)
			}
			caches := int64(b.WatchCacheBytes + b.ObjectCacheBytes + b.ServedCacheBytes + b.ListBufferBytes)
			if caches > b.GoLimit*2/3 {
				t.Fatalf("limit %d, binary %d: caches %d of Go limit %d: more than two thirds", limit, binary, caches, b.GoLimit)
			}
		}
	}
}

func TestServeConfig_MemoryBudget(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		got, err := parseServeConfig(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.MemoryLimit != 128<<20 || got.budget != budgetFor(128<<20, 0) {
			t.Errorf("memory limit %d, budget %+v; want 128Mi and its budget", got.MemoryLimit, got.budget)
		}
		if got.MaxWatches != 1024 || got.MaxWatchesPerUser != 512 {
			t.Errorf("watch bounds = %d, %d, want 1024, 512", got.MaxWatches, got.MaxWatchesPerUser)
		}
	})
	t.Run("budget sizes the watch bounds", func(t *testing.T) {
		got, err := parseServeConfig([]string{"--memory-limit", "64Mi"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxWatches != 512 || got.MaxWatchesPerUser != 256 {
			t.Errorf("watch bounds = %d, %d, want 512, 256", got.MaxWatches, got.MaxWatchesPerUser)
		}
	})
	t.Run("flags win", func(t *testing.T) {
		got, err := parseServeConfig([]string{"--memory-limit", "64Mi", "--max-watches", "0", "--max-watches-per-user", "7"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxWatches != 0 || got.MaxWatchesPerUser != 7 {
			t.Errorf("watch bounds = %d, %d, want 0, 7", got.MaxWatches, got.MaxWatchesPerUser)
		}
	})
	t.Run("file wins", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte("memory-limit: 256Mi\nmax-watches: 9\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := parseServeConfig([]string{"--config", p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxWatches != 9 || got.MaxWatchesPerUser != 1024 {
			t.Errorf("watch bounds = %d, %d, want 9 (file), 1024 (256Mi budget)", got.MaxWatches, got.MaxWatchesPerUser)
		}
	})
	t.Run("too small", func(t *testing.T) {
		_, err := parseServeConfig([]string{"--memory-limit", "16Mi"}, nil)
		if err == nil {
			t.Fatal("--memory-limit 16Mi accepted, want an error")
		}
	})
}
