package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBudgetFor(t *testing.T) {
	const Ki, Mi = 1 << 10, 1 << 20
	tests := []struct {
		name  string
		limit int64
		want  memoryBudget
	}{
		{
			name:  "default 128Mi",
			limit: 128 * Mi,
			want: memoryBudget{
				GoLimit:          128*Mi - 6*2000*Ki - 32*Mi,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: 32 * Mi,
				WatchCacheEvents: 10000, WatchCacheBytes: 32 * Mi,
				ObjectCacheBytes: 4 * Mi, ServedCacheBytes: 16 * Mi, ListBufferBytes: 4 * Mi,
				MaxWatches: 1024, MaxWatchesPerUser: 512,
			},
		},
		{
			name:  "no limit: caches as for 128Mi, no Go limit",
			limit: 0,
			want: memoryBudget{
				GoLimit:          0,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: 32 * Mi,
				WatchCacheEvents: 10000, WatchCacheBytes: 32 * Mi,
				ObjectCacheBytes: 4 * Mi, ServedCacheBytes: 16 * Mi, ListBufferBytes: 4 * Mi,
				MaxWatches: 1024, MaxWatchesPerUser: 512,
			},
		},
		{
			name:  "smallest 32Mi",
			limit: 32 * Mi,
			want: memoryBudget{
				GoLimit:          32*Mi - 6*512*Ki - 8*Mi,
				SQLiteCacheBytes: 512 * Ki, SQLiteMmapBytes: 8 * Mi,
				WatchCacheEvents: 2500, WatchCacheBytes: 8 * Mi,
				ObjectCacheBytes: 1 * Mi, ServedCacheBytes: 4 * Mi, ListBufferBytes: 1 * Mi,
				MaxWatches: 256, MaxWatchesPerUser: 128,
			},
		},
		{
			name:  "1Gi: SQLite at its defaults",
			limit: 1024 * Mi,
			want: memoryBudget{
				GoLimit:          1024*Mi - 6*2000*Ki - 32*Mi,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: 32 * Mi,
				WatchCacheEvents: 80000, WatchCacheBytes: 256 * Mi,
				ObjectCacheBytes: 32 * Mi, ServedCacheBytes: 128 * Mi, ListBufferBytes: 32 * Mi,
				MaxWatches: 8192, MaxWatchesPerUser: 4096,
			},
		},
		{
			name:  "64Gi: ring events and int sizes capped",
			limit: 64 << 30,
			want: memoryBudget{
				GoLimit:          64<<30 - 6*2000*Ki - 32*Mi,
				SQLiteCacheBytes: 2000 * Ki, SQLiteMmapBytes: 32 * Mi,
				WatchCacheEvents: 100000, WatchCacheBytes: 1<<31 - 1,
				ObjectCacheBytes: 1<<31 - 1, ServedCacheBytes: 1<<31 - 1, ListBufferBytes: 1<<31 - 1,
				MaxWatches: 512 * Ki, MaxWatchesPerUser: 256 * Ki,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := budgetFor(tt.limit)
			if got != tt.want {
				t.Errorf("budgetFor(%d) =\n%+v\nwant\n%+v", tt.limit, got, tt.want)
			}
		})
	}
}

// TestBudgetFor_Sums checks, for every limit from 32 MiB to 4 GiB, that
// what the budget gives SQLite and Go adds up to the limit, and that the
// caches inside the Go heap leave at least a third of the Go limit to
// requests and the runtime.
func TestBudgetFor_Sums(t *testing.T) {
	for limit := int64(minMemoryLimit); limit <= 4<<30; limit += 8 << 20 {
		b := budgetFor(limit)
		sqlite := int64(sqliteConns*b.SQLiteCacheBytes + b.SQLiteMmapBytes)
		if got := b.GoLimit + sqlite; got != limit {
			t.Fatalf("limit %d: Go %d + SQLite %d = %d, want the limit", limit, b.GoLimit, sqlite, got)
		}
		caches := int64(b.WatchCacheBytes + b.ObjectCacheBytes + b.ServedCacheBytes + b.ListBufferBytes)
		if caches > b.GoLimit*2/3 {
			t.Fatalf("limit %d: caches %d of Go limit %d: more than two thirds", limit, caches, b.GoLimit)
		}
	}
}

func TestServeConfig_MemoryBudget(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		got, err := parseServeConfig(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.MemoryLimit != 128<<20 || got.budget != budgetFor(128<<20) {
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
