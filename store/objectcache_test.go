package store

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
)

func TestDB_GetCache(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes int
	}{
		{"cache", 0},
		{"tiny cache", 4 << 10},
		{"no cache", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Config{ObjectCacheBytes: tc.bytes})
			ctx := context.Background()
			var keys []Key
			for i := range 50 {
				k := key("ns", "o"+strconv.Itoa(i))
				mustCreate(t, db, k, "v0")
				keys = append(keys, k)
			}
			for round := 1; round <= 3; round++ {
				for _, k := range keys {
					// Twice: the second may come from the cache.
					for range 2 {
						if _, err := db.Get(ctx, k); err != nil {
							t.Fatal(err)
						}
					}
					up, err := db.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, "v"+strconv.Itoa(round)))
					if err != nil {
						t.Fatal(err)
					}
					got, err := db.Get(ctx, k)
					if err != nil {
						t.Fatal(err)
					}
					if got.ModRev != up.ModRev || !bytes.Equal(got.Value, up.Value) {
						t.Fatalf("Get after Update = rev %d %s, want rev %d %s", got.ModRev, got.Value, up.ModRev, up.Value)
					}
				}
			}
			if _, err := db.Delete(ctx, keys[0], Preconditions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Get(ctx, keys[0]); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get after Delete error = %v, want ErrNotFound", err)
			}
			if db.cache != nil && db.cache.bytes > db.cache.maxBytes {
				t.Errorf("cache holds %d bytes, bound %d", db.cache.bytes, db.cache.maxBytes)
			}
		})
	}
}

// TestDB_GetCacheConcurrent has readers race writers on a few keys: a Get
// that starts after an Update returned must see that Update or a later
// one, and no reader may see a key's revision go backwards.
func TestDB_GetCacheConcurrent(t *testing.T) {
	db := openTest(t, Config{ObjectCacheBytes: 64 << 10})
	ctx := context.Background()
	const nKeys, nWrites = 4, 300
	var acked [nKeys]struct {
		mu  sync.Mutex
		rev int64
	}
	for i := range nKeys {
		o := mustCreate(t, db, key("ns", "k"+strconv.Itoa(i)), "0")
		acked[i].rev = o.ModRev
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last [nKeys]int64
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (n + r) % nKeys
				acked[i].mu.Lock()
				min := acked[i].rev
				acked[i].mu.Unlock()
				o, err := db.Get(ctx, key("ns", "k"+strconv.Itoa(i)))
				if err != nil {
					errc <- err
					return
				}
				if o.ModRev < min || o.ModRev < last[i] {
					errc <- errors.New("stale read: rev " + strconv.FormatInt(o.ModRev, 10) +
						" after acknowledged " + strconv.FormatInt(min, 10) + ", last seen " + strconv.FormatInt(last[i], 10))
					return
				}
				last[i] = o.ModRev
			}
		}()
	}
	var wwg sync.WaitGroup
	for w := range nKeys {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			k := key("ns", "k"+strconv.Itoa(w))
			for n := range nWrites {
				o, err := db.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, strconv.Itoa(n)))
				if err != nil {
					errc <- err
					return
				}
				acked[w].mu.Lock()
				acked[w].rev = o.ModRev
				acked[w].mu.Unlock()
			}
		}()
	}
	wwg.Wait()
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}
