package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// nextN reads n events from w (each read bounded by a hang guard).
func nextN(t *testing.T, w *Watcher, n int) []*CachedEvent {
	t.Helper()
	out := make([]*CachedEvent, 0, n)
	for len(out) < n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ev, err := w.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Next() after %d of %d events: %v", len(out), n, err)
		}
		out = append(out, ev)
	}
	return out
}

// wantRevs checks that events carry exactly the revisions from..to, in
// order.
func wantRevs(t *testing.T, events []*CachedEvent, from, to int64) {
	t.Helper()
	if got, want := int64(len(events)), to-from+1; got != want {
		t.Fatalf("got %d events, want %d (revisions %d..%d)", got, want, from, to)
	}
	for i, ev := range events {
		if got, want := ev.Rev(), from+int64(i); got != want {
			t.Fatalf("event %d: revision %d, want %d", i, got, want)
		}
	}
}

func TestWatchCache_Watch(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{MaxEvents: 8})
	defer wc.Close()
	ctx := context.Background()
	for i := range 20 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}

	t.Run("from inside the ring", func(t *testing.T) {
		w, err := wc.Watch(ctx, "configmaps", "", 15)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		wantRevs(t, nextN(t, w, 5), 16, 20)
	})

	t.Run("from before the ring reads the change log, then joins live", func(t *testing.T) {
		w, err := wc.Watch(ctx, "configmaps", "", 2)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		got := nextN(t, w, 18)
		wantRevs(t, got, 3, 20)
		mustCreate(t, db, key("ns", "live"), "v")
		wantRevs(t, nextN(t, w, 1), 21, 21)
	})

	t.Run("catch-up while writes continue has no gap or duplicate", func(t *testing.T) {
		// A cache of its own, started now: the watch from 0 catches up
		// from the change log, and its ring holds all 40 live writes, so
		// a watcher slower than the writer (a loaded machine) is never
		// closed as too slow, which is another subtest's concern.
		wc := NewWatchCache(db, WatchCacheConfig{MaxEvents: 64})
		defer wc.Close()
		w, err := wc.Watch(ctx, "configmaps", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		start := db.Rev()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				mustCreate(t, db, key("other", fmt.Sprint(i)), "v")
			}
		}()
		got := nextN(t, w, int(start)+40)
		wg.Wait()
		wantRevs(t, got, 1, start+40)
	})

	t.Run("namespace and resource filters", func(t *testing.T) {
		rev := db.Rev()
		w, err := wc.Watch(ctx, "configmaps", "only", rev)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		mustCreate(t, db, key("elsewhere", "x"), "v")
		if _, err := db.Create(ctx, Key{Resource: "secrets", Namespace: "only", Name: "s"}, "u", obj("only", "s", "v")); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, db, key("only", "x"), "v")
		got := nextN(t, w, 1)
		if k := got[0].Object.Key; k != key("only", "x") || got[0].Rev() != rev+3 {
			t.Errorf("got %v at %d, want %v at %d", k, got[0].Rev(), key("only", "x"), rev+3)
		}
	})

	t.Run("future revision waits", func(t *testing.T) {
		rev := db.Rev()
		w, err := wc.Watch(ctx, "configmaps", "", rev+2)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for i := range 3 {
			mustCreate(t, db, key("future", fmt.Sprint(i)), "v")
		}
		wantRevs(t, nextN(t, w, 1), rev+3, rev+3)
	})
}

func TestWatchCache_Compacted(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{})
	defer wc.Close()
	ctx := context.Background()
	for i := range 10 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}
	if err := db.Compact(ctx, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Watch(ctx, "configmaps", "", 5); !errors.Is(err, ErrCompacted) {
		t.Errorf("Watch(5) after Compact(6): err = %v, want ErrCompacted", err)
	}
	w, err := wc.Watch(ctx, "configmaps", "", 6)
	if err != nil {
		t.Fatalf("Watch(6) after Compact(6): %v", err)
	}
	defer w.Stop()
	wantRevs(t, nextN(t, w, 4), 7, 10)
}

func TestWatchCache_SlowWatcher(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{WatcherBuffer: 4})
	defer wc.Close()
	ctx := context.Background()
	slow, err := wc.Watch(ctx, "configmaps", "", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	fast, err := wc.Watch(ctx, "configmaps", "", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	// The fast watcher reads each event before the next write; the slow
	// one never reads. Writes must not wait for it. (Reading in step keeps
	// the fast watcher within its buffer of 4 on a loaded machine too: a
	// reader on a goroutine of its own could fall 4 behind and be closed.)
	var events []*CachedEvent
	for i := range 20 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
		events = append(events, nextN(t, fast, 1)...)
	}
	wantRevs(t, events, 1, 20)
	// The slow watcher gets what fit in its buffer, then ErrWatcherTooSlow.
	var got []*CachedEvent
	for {
		ev, err := slow.Next(ctx)
		if err != nil {
			if !errors.Is(err, ErrWatcherTooSlow) {
				t.Fatalf("slow watcher: err = %v, want ErrWatcherTooSlow", err)
			}
			break
		}
		got = append(got, ev)
	}
	if len(got) > 4 {
		t.Errorf("slow watcher got %d events, want at most its buffer (4)", len(got))
	}
	if _, _, watchers := wc.Stats(); watchers != 1 {
		t.Errorf("watchers after the slow one was dropped = %d, want 1", watchers)
	}
	if m := wc.Metrics(); m.TooSlow != 1 || m.Watchers != 1 || m.Events != 20 {
		t.Errorf("Metrics() = %+v, want TooSlow 1, Watchers 1, Events 20", m)
	}
}

func TestWatchCache_Bounded(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{MaxEvents: 100, MaxBytes: 2000})
	defer wc.Close()
	for i := range 50 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}
	n, bytes, _ := wc.Stats()
	if bytes > 2000 {
		t.Errorf("ring holds %d bytes, want at most 2000", bytes)
	}
	if n == 0 || n >= 50 {
		t.Errorf("ring holds %d events, want fewer than 50 and more than 0 (byte-bounded)", n)
	}
}

// TestWatchCache_BoundedWithEncodings: the encodings watchers memoize on
// events count against MaxBytes until every watcher has written them, so
// a ring whose events were each encoded several ways holds fewer of them,
// and evicted events stop counting. Once the watcher comes back for more
// (it wrote what it had), those encodings are dropped.
func TestWatchCache_BoundedWithEncodings(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{MaxEvents: 1000, MaxBytes: 20000})
	defer wc.Close()
	ctx := context.Background()
	w, err := wc.Watch(ctx, "", "", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 60
	for i := range n {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}
	evs, err := w.Drain(ctx, nil, 2*n)
	if err != nil || len(evs) != n {
		t.Fatalf("Drain: %d events, %v; want %d", len(evs), err, n)
	}
	for _, ev := range evs {
		for _, enc := range []string{"json", "proto", "yaml"} {
			ev.Memo(enc, func() []byte { return make([]byte, 200) })
		}
	}
	// The watcher has not come back: its encodings count, and the next
	// commits evict events to stay within the bound.
	for i := range 5 {
		mustCreate(t, db, key("more", fmt.Sprint(i)), "v")
		if _, bytes, _ := wc.Stats(); bytes > 20000 {
			t.Fatalf("after commit %d the ring holds %d bytes, want at most 20000", i, bytes)
		}
	}
	// Each event is about 100 bytes of value and 600 of encodings.
	if events, bytes, _ := wc.Stats(); events == 0 || events > 20000/600+5 {
		t.Errorf("ring holds %d events (%d bytes), want between 1 and %d", events, bytes, 20000/600+5)
	}
	if evs, err := w.Drain(ctx, nil, 2*n); err != nil || len(evs) != 5 {
		t.Fatalf("Drain: %d events, %v; want 5", len(evs), err)
	}
	mustCreate(t, db, key("more", "last"), "v")
	if events, bytes, _ := wc.Stats(); bytes > events*150 {
		t.Errorf("ring holds %d events in %d bytes after the watcher wrote them, want their values only (about 100 bytes each)", events, bytes)
	}
}

// TestDB_CompactUnderLoad compacts a long change log while writers keep
// writing: every write succeeds and compaction completes.
func TestDB_CompactUnderLoad(t *testing.T) {
	defer func(n int) { compactChunk = n }(compactChunk)
	compactChunk = 50
	db := openTest(t, Config{})
	ctx := context.Background()
	for i := range 2000 {
		mustCreate(t, db, key("seed", fmt.Sprint(i)), "v")
	}
	target := db.Rev()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var writes, failures int64
	var mu sync.Mutex
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := db.Create(ctx, key(fmt.Sprint("load-", g), fmt.Sprint(i)), "u", obj("load", fmt.Sprint(i), "v"))
				mu.Lock()
				if err != nil {
					failures++
				} else {
					writes++
				}
				mu.Unlock()
			}
		}()
	}
	if err := db.Compact(ctx, target); err != nil {
		t.Fatalf("Compact() error = %v", err)
	}
	close(stop)
	wg.Wait()
	if failures != 0 {
		t.Errorf("%d writes failed during compaction, want 0", failures)
	}
	if writes == 0 {
		t.Error("no write completed while compaction ran")
	}
	if got := db.CompactedRev(); got != target {
		t.Errorf("CompactedRev() = %d, want %d", got, target)
	}
	if got, want := db.Stats().ChangeLogRows, db.Rev()-target; got != want {
		t.Errorf("change-log rows = %d, want %d (everything after the compacted revision)", got, want)
	}
}

func TestWatchCache_WatchFunc(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{})
	defer wc.Close()
	ctx := context.Background()
	kicks := make(chan struct{}, 100)
	w, err := wc.WatchFunc(ctx, "configmaps", "a", db.Rev(), func() { kicks <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if got := len(kicks); got != 1 {
		t.Fatalf("kicks after WatchFunc = %d, want 1 (the first Drain)", got)
	}
	<-kicks
	mustCreate(t, db, key("b", "x"), "v") // not watched: no kick
	mustCreate(t, db, key("a", "x"), "v")
	if got := len(kicks); got != 1 {
		t.Fatalf("kicks after one wanted and one unwanted commit = %d, want 1", got)
	}
	evs, err := w.Drain(ctx, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Object.Key.Namespace != "a" {
		t.Fatalf("Drain = %d events, want the one in namespace a", len(evs))
	}
	<-kicks
	w.Stop()
	if got := len(kicks); got != 1 {
		t.Errorf("kicks after Stop = %d, want 1", got)
	}
	if _, err := w.Drain(ctx, nil, 10); !errors.Is(err, ErrWatchClosed) {
		t.Errorf("Drain after Stop: err = %v, want ErrWatchClosed", err)
	}
}

// TestWatchCache_IdleWatcherIsNotSlow: a watcher that wants none of many
// events is not behind, however many there are.
func TestWatchCache_IdleWatcherIsNotSlow(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{WatcherBuffer: 4})
	defer wc.Close()
	ctx := context.Background()
	idle, err := wc.Watch(ctx, "configmaps", "quiet", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Stop()
	for i := range 20 {
		mustCreate(t, db, key("busy", fmt.Sprint(i)), "v")
	}
	mustCreate(t, db, key("quiet", "x"), "v")
	ev := nextN(t, idle, 1)[0]
	if got, want := ev.Rev(), int64(21); got != want {
		t.Errorf("idle watcher's event: revision %d, want %d", got, want)
	}
}

// TestWatchCache_SharesPrevValue: an update's previous state, read again
// from the database, is kept once: the event shares the bytes of the
// key's event before it. A watcher sees the same values as without.
func TestWatchCache_SharesPrevValue(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{})
	defer wc.Close()
	ctx := context.Background()
	w, err := wc.Watch(ctx, "", "", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	k := key("ns", "a")
	mustCreate(t, db, k, "v1")
	mustCreate(t, db, key("ns", "b"), "other")
	for _, v := range []string{"v2", "v3"} {
		if _, err := db.Update(ctx, k, Preconditions{}, obj("ns", "a", v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Delete(ctx, k, Preconditions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, k, "v4")
	if _, err := db.Update(ctx, k, Preconditions{}, obj("ns", "a", "v5")); err != nil {
		t.Fatal(err)
	}
	events := nextN(t, w, 7)
	var prev *CachedEvent
	for i, ev := range events {
		if ev.Object.Key != k {
			continue
		}
		switch {
		case ev.Type == Added && ev.PrevValue != nil:
			t.Errorf("event %d: an Added event has a previous value", i)
		case ev.Type != Added && prev == nil:
			t.Fatalf("event %d: %v without an event before it", i, ev.Type)
		case ev.Type != Added && string(ev.PrevValue) != string(prev.Object.Value):
			t.Errorf("event %d: previous value %s, want %s", i, ev.PrevValue, prev.Object.Value)
		case ev.Type != Added && unsafe.SliceData(ev.PrevValue) != unsafe.SliceData(prev.Object.Value):
			t.Errorf("event %d (%v): previous value is a copy, want the bytes of event %d's value", i, ev.Type, i-1)
		}
		prev = ev
	}
}

// TestWatchCache_EncodingsKeptForSlowerWatchers: an event's encodings are
// kept until the last watcher has written it, so the fan-out encodes once
// however far apart the watchers read.
func TestWatchCache_EncodingsKeptForSlowerWatchers(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{})
	defer wc.Close()
	ctx := context.Background()
	fast, err := wc.Watch(ctx, "", "", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	slow, err := wc.Watch(ctx, "", "", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	builds := 0
	build := func() []byte { builds++; return []byte("encoded") }
	mustCreate(t, db, key("ns", "a"), "v")
	for _, ev := range nextN(t, fast, 1) {
		ev.Memo("json", build)
	}
	// slow has taken the event but not written it yet; fast comes back
	// (it wrote the event) and more commits follow.
	got := nextN(t, slow, 1)
	for i := range 3 {
		mustCreate(t, db, key("ns", fmt.Sprint("b", i)), "v")
		nextN(t, fast, 1)
	}
	if b := got[0].Memo("json", build); string(b) != "encoded" {
		t.Fatalf("Memo = %q", b)
	}
	if builds != 1 {
		t.Errorf("the event was encoded %d times for two watchers, want once", builds)
	}
}

// TestWatchCache_ReleasesWithoutCommits: the encodings of the last events
// of a burst go once the watchers wrote them, without waiting for another
// commit.
func TestWatchCache_ReleasesWithoutCommits(t *testing.T) {
	defer func(d time.Duration) { releaseEvery = d }(releaseEvery)
	releaseEvery = 10 * time.Millisecond
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{})
	defer wc.Close()
	ctx := context.Background()
	w, err := wc.Watch(ctx, "", "", db.Rev())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 3 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}
	for _, ev := range nextN(t, w, 3) {
		ev.Memo("json", func() []byte { return make([]byte, 1000) })
	}
	_, before, _ := wc.Stats()
	if evs, err := w.Drain(ctx, nil, 10); err != nil || len(evs) != 0 { // the watcher wrote all three
		t.Fatalf("Drain: %d events, %v", len(evs), err)
	}
	deadline := time.Now().Add(10 * time.Second) // a hang guard, not a timing check
	for {
		_, bytes, _ := wc.Stats()
		if bytes < before-2000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ring still holds %d bytes (%d with the encodings), want the encodings dropped", bytes, before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchCache_CompactedWhileCatchingUp: a watcher that must read the
// change log, compacted past its start before it read anything, ends with
// ErrCompacted and still reports its start (the 410 names it).
func TestWatchCache_CompactedWhileCatchingUp(t *testing.T) {
	db := openTest(t, Config{})
	wc := NewWatchCache(db, WatchCacheConfig{MaxEvents: 2})
	defer wc.Close()
	ctx := context.Background()
	for i := range 10 {
		mustCreate(t, db, key("ns", fmt.Sprint(i)), "v")
	}
	w, err := wc.Watch(ctx, "configmaps", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := db.Compact(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Drain(ctx, nil, 10); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Drain after Compact(8): %v, want ErrCompacted", err)
	}
	if got, want := w.Rev(), int64(3); got != want {
		t.Errorf("Rev() = %d, want %d (the watch's start)", got, want)
	}
}
