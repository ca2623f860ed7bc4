//go:build etcd

package etcdstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/store"
)

// TestStore_Replicas runs two stores on one etcd, as two edgeapi
// replicas would, and a third under another prefix.
func TestStore_Replicas(t *testing.T) {
	url := startEtcd(t)
	s1, s2 := openAt(t, url, ""), openAt(t, url, "/registry/")
	other := openAt(t, url, "/other")
	ctx := context.Background()

	var mu sync.Mutex
	var got []store.Event
	cancel := s2.Subscribe(func(evs []store.Event) {
		mu.Lock()
		got = append(got, evs...)
		mu.Unlock()
	})
	defer cancel()

	k := key("ns", "a")
	created, err := s1.Create(ctx, k, "u", cm("ns", "a", "u", "1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := s2.Create(ctx, k, "u", cm("ns", "a", "u", "1")); !errors.Is(err, store.ErrExists) {
		t.Errorf("Create through the other store: got %v, want ErrExists", err)
	}
	if _, err := s2.Update(ctx, k, store.Preconditions{ModRev: created.ModRev}, cm("ns", "a", "u", "2")); err != nil {
		t.Errorf("Update through the other store: %v", err)
	}
	if _, err := s1.Update(ctx, k, store.Preconditions{ModRev: created.ModRev}, cm("ns", "a", "u", "3")); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale Update: got %v, want ErrConflict", err)
	}

	t.Run("Watch", func(t *testing.T) {
		// s2's subscriber sees s1's create, in order before s2's update.
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n >= 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 || got[0].Type != store.Added || got[0].Rev() != created.ModRev || got[1].Type != store.Modified {
			t.Errorf("s2's events = %+v, want ADDED at %d then MODIFIED", got, created.ModRev)
		}
	})
	t.Run("Prefix", func(t *testing.T) {
		res, err := other.List(ctx, store.ListOptions{Resource: "configmaps"})
		if err != nil || len(res.Objects) != 0 {
			t.Errorf("List under /other = %d objects, %v, want none", len(res.Objects), err)
		}
		if _, err := other.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get under /other: got %v, want ErrNotFound", err)
		}
	})
}

// TestStore_Restart stops and restarts etcd under a store: the watch
// feed resumes where it was, so a write after the restart reaches the
// subscriber before its writer is answered, and none is lost or doubled.
func TestStore_Restart(t *testing.T) {
	e := newEtcd(t)
	s := openAt(t, e.url, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var mu sync.Mutex
	var revs []int64
	stop := s.Subscribe(func(evs []store.Event) {
		mu.Lock()
		for _, ev := range evs {
			revs = append(revs, ev.Rev())
		}
		mu.Unlock()
	})
	defer stop()

	first, err := s.Create(ctx, key("ns", "a"), "", cm("ns", "a", "", "1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	e.stop()
	e.start()
	var second store.Object
	for {
		second, err = s.Create(ctx, key("ns", "b"), "", cm("ns", "b", "", "1"))
		if err == nil || ctx.Err() != nil || errors.Is(err, store.ErrExists) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the client reconnects
	}
	if err != nil {
		t.Fatalf("Create after restart: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int64{first.ModRev, second.ModRev}; len(revs) != 2 || revs[0] != want[0] || revs[1] != want[1] {
		t.Errorf("subscriber saw revisions %v, want %v", revs, want)
	}
}

// TestStore_RunCompactor runs the compactor on two stores on one etcd
// while writes go on: etcd gets compacted, and the stores take turns, so
// there are about as many compactions as intervals, not twice as many.
func TestStore_RunCompactor(t *testing.T) {
	url := startEtcd(t)
	s1, s2 := openAt(t, url, ""), openAt(t, url, "")
	ctx, cancel := context.WithCancel(context.Background())
	const interval = 100 * time.Millisecond
	var wg sync.WaitGroup
	for _, s := range []*Store{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.RunCompactor(ctx, interval)
		}()
	}
	start := time.Now()
	for i := 0; time.Since(start) < 12*interval; i++ {
		if _, err := s1.Create(ctx, key("ns", strconv.Itoa(i)), "", cm("ns", strconv.Itoa(i), "", "")); err != nil {
			t.Fatalf("Create: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	elapsed := time.Since(start)

	resp, err := s1.client.Get(context.Background(), "/registry"+compactKeySuffix)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("compaction key: %v, %d kvs", err, len(resp.Kvs))
	}
	compactions, maxRuns := resp.Kvs[0].Version, int64(elapsed/interval)+1
	if compactions < 1 || compactions > maxRuns {
		t.Errorf("%d compactions in %v, want 1 to %d", compactions, elapsed, maxRuns)
	}
	t.Logf("%d compactions in %v at intervals of %v from two stores", compactions, elapsed, interval)
	// etcd itself is compacted, up to the last claim (whose Compact the
	// end of the test may have cancelled).
	claimed, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		t.Fatalf("compaction key value %q: %v", resp.Kvs[0].Value, err)
	}
	s3 := openAt(t, url, "")
	if got := s3.CompactedRev(); got < 1 || got > claimed {
		t.Errorf("etcd compacted at %d, want 1 to the last claim %d", got, claimed)
	}
}
