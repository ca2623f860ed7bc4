package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// counts waits for db's first object count (it runs in the background
// after Open) and returns the counts.
func counts(t *testing.T, db *DB) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	deadline := time.Now().Add(30 * time.Second)
	for !db.ObjectCounts(func(r string, n int64) { got[r] = n }) {
		if time.Now().After(deadline) {
			t.Fatal("ObjectCounts() still false after 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return got
}

func wantCounts(t *testing.T, got, want map[string]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ObjectCounts() = %v, want %v", got, want)
	}
}

// TestDB_ObjectCounts: the counts follow creates and deletes per
// resource, are counted again from the table after a restart, and count
// writes that commit while the first count runs exactly once.
func TestDB_ObjectCounts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db := openTestPath(t, path)
	secret := func(name string) Key { return Key{Resource: "secrets", Namespace: "ns", Name: name} }
	for i := range 3 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}
	mustCreate(t, db, secret("s"), "v")
	if _, err := db.Delete(ctx, key("ns", "0"), Preconditions{}); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, counts(t, db), map[string]int64{"configmaps": 2, "secrets": 1})
	if _, err := db.Delete(ctx, secret("s"), Preconditions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, Key{Resource: "leases.coordination.k8s.io", Namespace: "ns", Name: "l"}, "v")
	wantCounts(t, counts(t, db), map[string]int64{"configmaps": 2, "secrets": 0, "leases.coordination.k8s.io": 1})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Writes while the count runs: one create commits before its
	// snapshot, one create and one delete after.
	var hookDB *DB
	opened := make(chan struct{})
	var before, after sync.Once
	countHook = func(afterSnapshot bool) {
		<-opened
		if !afterSnapshot {
			before.Do(func() { mustCreate(t, hookDB, key("ns", "before"), "v") })
			return
		}
		after.Do(func() {
			mustCreate(t, hookDB, key("ns", "during"), "v")
			if _, err := hookDB.Delete(ctx, key("ns", "1"), Preconditions{}); err != nil {
				t.Error(err)
			}
		})
	}
	defer func() { countHook = nil }()
	db, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	hookDB = db
	close(opened)
	defer db.Close()
	got := counts(t, db)
	wantCounts(t, got, map[string]int64{"configmaps": 3, "leases.coordination.k8s.io": 1})
}

// recordingObserver records what the store tells its Observer.
type recordingObserver struct {
	mu          sync.Mutex
	requests    map[string]int // "op resource"
	failures    map[string]int
	commits     int
	writes      int
	compactions map[CompactionTrigger]int
}

func (o *recordingObserver) ObserveRequest(op Op, resource string, d time.Duration, failed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests[op.String()+" "+resource]++
	if failed {
		o.failures[op.String()+" "+resource]++
	}
}

func (o *recordingObserver) ObserveCommit(writes int, total, commit time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commits++
	o.writes += writes
	if commit > total {
		panic(fmt.Sprintf("commit %v longer than the transaction %v", commit, total))
	}
}

func (o *recordingObserver) ObserveCompaction(trigger CompactionTrigger, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.compactions[trigger]++
}

// TestDB_Observer: the Observer hears of each SQLite request by
// operation and resource (not of gets the object cache answers), of
// each commit with its writes, and of compactions with their trigger.
func TestDB_Observer(t *testing.T) {
	ctx := context.Background()
	o := &recordingObserver{requests: map[string]int{}, failures: map[string]int{}, compactions: map[CompactionTrigger]int{}}
	db := openTest(t, Config{Observer: o, MaxChangeLogRows: 10, ObjectCacheBytes: -1})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.RunCompactor(cctx, time.Hour)
	}()
	t.Cleanup(func() { cancel(); <-done })

	a := mustCreate(t, db, key("ns", "a"), "1")
	if _, err := db.Update(ctx, a.Key, Preconditions{}, obj("ns", "a", "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(ctx, a.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := db.List(ctx, ListOptions{Resource: "configmaps"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Changes(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(ctx, a.Key, Preconditions{}); err != nil {
		t.Fatal(err)
	}
	// Answers are not failures; a cancelled read is.
	if _, err := db.Get(ctx, a.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if _, err := db.Update(ctx, a.Key, Preconditions{}, obj("ns", "a", "3")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Update after Delete: %v, want ErrNotFound", err)
	}
	cancelled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	if _, err := db.Get(cancelled, key("ns", "b")); err == nil {
		t.Fatal("Get with a cancelled context succeeded")
	}
	for i := range 20 { // past MaxChangeLogRows: a size compaction
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}
	deadline := time.Now().Add(30 * time.Second)
	for db.Stats().SizeCompactions == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, req := range []string{"create configmaps", "update configmaps", "get configmaps", "list configmaps", "changes ", "delete configmaps"} {
		if o.requests[req] == 0 {
			t.Errorf("no %q request observed; got %v", req, o.requests)
		}
	}
	if got, want := fmt.Sprint(o.failures), "map[get configmaps:1]"; got != want {
		t.Errorf("failures observed: got %s, want %s", got, want)
	}
	if o.commits == 0 || o.writes != 23 {
		t.Errorf("observed %d writes in %d commits, want 23 in at least one", o.writes, o.commits)
	}
	if o.compactions[CompactSize] == 0 {
		t.Errorf("compactions observed = %v, want a size one", o.compactions)
	}
}

// TestDB_Observer_cachedGet: a get the object cache answers is not a
// request to SQLite.
func TestDB_Observer_cachedGet(t *testing.T) {
	o := &recordingObserver{requests: map[string]int{}, failures: map[string]int{}, compactions: map[CompactionTrigger]int{}}
	db := openTest(t, Config{Observer: o})
	a := mustCreate(t, db, key("ns", "a"), "1")
	for range 3 {
		if _, err := db.Get(context.Background(), a.Key); err != nil {
			t.Fatal(err)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := o.requests["get configmaps"]; n != 0 {
		t.Errorf("got %d get requests observed for cached gets, want 0", n)
	}
}
