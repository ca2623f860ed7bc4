package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// holdWriter returns a beforeBatch hook that stops the writer at its first
// batch until release is closed, and a channel closed once it has stopped
// there. Only the first batch is held.
func holdWriter() (hook func(), held <-chan struct{}, release chan struct{}) {
	heldCh := make(chan struct{})
	release = make(chan struct{})
	var once sync.Once
	hook = func() {
		once.Do(func() {
			close(heldCh)
			<-release
		})
	}
	return hook, heldCh, release
}

// waitQueued waits until n writes are queued behind the held writer.
func waitQueued(db *DB, n int) {
	for len(db.queue) < n {
		runtime.Gosched()
	}
}

func TestDB_GroupCommit(t *testing.T) {
	t.Run("concurrent writers get contiguous revisions", func(t *testing.T) {
		db := openTest(t, Config{})
		ctx := context.Background()
		const writers, each = 32, 30
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					k := key(fmt.Sprintf("ns%d", w%4), fmt.Sprintf("w%d-%d", w, i%10))
					var err error
					switch {
					case i < 10:
						_, err = db.Create(ctx, k, "u", obj(k.Namespace, k.Name, "0"))
					case i < 20:
						_, err = db.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, fmt.Sprint(i)))
					case i%2 == 0:
						_, err = db.Delete(ctx, k, Preconditions{})
					default:
						_, err = db.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, fmt.Sprint(i)))
					}
					if err != nil {
						errs <- fmt.Errorf("write %v: %w", k, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}

		const total = writers * each
		if got := db.Rev(); got != total {
			t.Errorf("Rev() = %d, want %d", got, total)
		}
		events, err := db.Changes(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != total {
			t.Fatalf("change log has %d rows, want %d", len(events), total)
		}
		last := map[Key]Event{}
		for i, ev := range events {
			if got, want := ev.Rev(), int64(i+1); got != want {
				t.Fatalf("change %d has revision %d, want %d (no gaps)", i, got, want)
			}
			wantStamped(t, ev.Object)
			last[ev.Object.Key] = ev
		}
		for k, ev := range last {
			got, err := db.Get(ctx, k)
			if ev.Type == Deleted {
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("Get(%v) error = %v, want ErrNotFound", k, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ModRev != ev.Rev() {
				t.Errorf("Get(%v).ModRev = %d, want its last change's %d", k, got.ModRev, ev.Rev())
			}
		}
		st := db.Stats()
		if st.BatchedWrites != total {
			t.Errorf("Stats().BatchedWrites = %d, want %d", st.BatchedWrites, total)
		}
		if st.ChangeLogRows != total {
			t.Errorf("Stats().ChangeLogRows = %d, want %d", st.ChangeLogRows, total)
		}
		t.Logf("%d writes in %d batches (max %d)", st.BatchedWrites, st.Batches, st.MaxBatchSeen)
	})

	t.Run("failed write fails alone", func(t *testing.T) {
		hook, held, release := holdWriter()
		db := openTest(t, Config{beforeBatch: hook})
		ctx := context.Background()

		// The first write stops the writer; everything after queues up
		// behind it and commits in one batch.
		firstErr := make(chan error, 1)
		go func() {
			_, err := db.Create(ctx, key("ns", "first"), "u", obj("ns", "first", ""))
			firstErr <- err
		}()
		<-held

		const good = 20
		type result struct {
			name string
			obj  Object
			err  error
		}
		results := make(chan result, good+2)
		create := func(name string) {
			o, err := db.Create(ctx, key("ns", name), "u", obj("ns", name, ""))
			results <- result{name, o, err}
		}
		for i := range good {
			go create(fmt.Sprintf("good-%d", i))
		}
		go create("dup")
		go create("dup")
		go func() {
			_, err := db.Update(ctx, key("ns", "missing"), Preconditions{}, obj("ns", "missing", ""))
			results <- result{"missing", Object{}, err}
		}()
		waitQueued(db, good+3)
		close(release)

		if err := <-firstErr; err != nil {
			t.Fatalf("first Create() error = %v", err)
		}
		var dupOK, dupExists int
		revs := map[int64]bool{}
		for range good + 3 {
			r := <-results
			switch {
			case r.name == "missing":
				if !errors.Is(r.err, ErrNotFound) {
					t.Errorf("Update(missing) error = %v, want ErrNotFound", r.err)
				}
				continue
			case r.name == "dup" && errors.Is(r.err, ErrExists):
				dupExists++
				continue
			case r.err != nil:
				t.Errorf("Create(%s) error = %v", r.name, r.err)
				continue
			case r.name == "dup":
				dupOK++
			}
			revs[r.obj.ModRev] = true
		}
		if dupOK != 1 || dupExists != 1 {
			t.Errorf("duplicate creates: %d succeeded, %d ErrExists; want 1 and 1", dupOK, dupExists)
		}
		// The first write took revision 1, its batch-mates 2..good+2, with
		// no gap for the failed ones.
		for rev := int64(2); rev <= good+2; rev++ {
			if !revs[rev] {
				t.Errorf("no write got revision %d", rev)
			}
		}
		st := db.Stats()
		if got, want := st.Rev, int64(good+2); got != want {
			t.Errorf("Stats().Rev = %d, want %d", got, want)
		}
		// One batch: the held first write and all queued behind it.
		if got, want := st.MaxBatchSeen, int64(good+2); got != want {
			t.Errorf("Stats().MaxBatchSeen = %d, want %d", got, want)
		}
		if got, want := st.Batches, int64(1); got != want {
			t.Errorf("Stats().Batches = %d, want %d", got, want)
		}
	})

	t.Run("batch bounded by MaxBatch", func(t *testing.T) {
		hook, held, release := holdWriter()
		db := openTest(t, Config{beforeBatch: hook, MaxBatch: 4})
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range 9 {
			wg.Go(func() {
				if _, err := db.Create(ctx, key("ns", fmt.Sprint(i)), "u", obj("ns", fmt.Sprint(i), "")); err != nil {
					t.Error(err)
				}
			})
			if i == 0 {
				<-held
			}
		}
		waitQueued(db, 8)
		close(release)
		wg.Wait()
		st := db.Stats()
		if st.MaxBatchSeen != 4 || st.Batches != 3 || st.BatchedWrites != 9 {
			t.Errorf("Stats() = %d writes in %d batches (max %d), want 9 in 3 (max 4)", st.BatchedWrites, st.Batches, st.MaxBatchSeen)
		}
	})

	t.Run("cancelled while queued", func(t *testing.T) {
		hook, held, release := holdWriter()
		db := openTest(t, Config{beforeBatch: hook})
		ctx := context.Background()
		firstErr := make(chan error, 1)
		go func() {
			_, err := db.Create(ctx, key("ns", "first"), "u", obj("ns", "first", ""))
			firstErr <- err
		}()
		<-held
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := db.Create(cctx, key("ns", "cancelled"), "u", obj("ns", "cancelled", ""))
			errc <- err
		}()
		waitQueued(db, 1)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("Create() error = %v, want context.Canceled", err)
		}
		close(release)
		if err := <-firstErr; err != nil {
			t.Fatal(err)
		}
		// Another write goes through the writer after the cancelled one.
		mustCreate(t, db, key("ns", "after"), "")
		if _, err := db.Get(ctx, key("ns", "cancelled")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(cancelled) error = %v, want ErrNotFound", err)
		}
		if got, want := db.Rev(), int64(2); got != want {
			t.Errorf("Rev() = %d, want %d", got, want)
		}
	})

	t.Run("close drains the queue", func(t *testing.T) {
		hook, held, release := holdWriter()
		db := openTest(t, Config{beforeBatch: hook})
		ctx := context.Background()
		const n = 10
		errs := make(chan error, n)
		for i := range n {
			go func() {
				_, err := db.Create(ctx, key("ns", fmt.Sprint(i)), "u", obj("ns", fmt.Sprint(i), ""))
				errs <- err
			}()
			if i == 0 {
				<-held
			}
		}
		waitQueued(db, n-1)
		closed := make(chan error, 1)
		go func() { closed <- db.Close() }()
		// Close waits for the queued writes; let them commit.
		close(release)
		if err := <-closed; err != nil {
			t.Fatalf("Close() error = %v", err)
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("queued Create() error = %v, want nil (drained before close)", err)
			}
		}
		if got := db.Rev(); got != n {
			t.Errorf("Rev() = %d, want %d", got, n)
		}
	})
}

func TestDB_Subscribe(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	var (
		mu  sync.Mutex
		got []Event
	)
	cancel := db.Subscribe(func(events []Event) {
		mu.Lock()
		got = append(got, events...)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				k := key("ns", fmt.Sprintf("%d-%d", w, i%5))
				var err error
				switch {
				case i < 5:
					_, err = db.Create(ctx, k, "u", obj(k.Namespace, k.Name, ""))
				case i < 15:
					_, err = db.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, fmt.Sprint(i)))
				default:
					_, err = db.Delete(ctx, k, Preconditions{})
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	cancel()
	mustCreate(t, db, key("ns", "after-cancel"), "")

	want, err := db.Changes(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want = want[:len(want)-1] // the write after cancel
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("received %d events, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Rev() != int64(i+1) || g.Type != w.Type || g.Object.Key != w.Object.Key ||
			string(g.Object.Value) != string(w.Object.Value) || string(g.PrevValue) != string(w.PrevValue) ||
			g.Object.UID != w.Object.UID || g.Object.CreateRev != w.Object.CreateRev {
			t.Errorf("event %d = %v %v rev %d, want %v %v rev %d (as in the change log)",
				i, g.Type, g.Object.Key, g.Rev(), w.Type, w.Object.Key, w.Rev())
		}
	}
}

func TestDB_GroupCommitFailure(t *testing.T) {
	errInjected := errors.New("injected")
	run := func(t *testing.T, poisoned map[string]bool) (results map[string]error, db *DB) {
		hook, held, release := holdWriter()
		db = openTest(t, Config{beforeBatch: hook, afterWrite: func(k Key) error {
			if poisoned[k.Name] {
				return errInjected
			}
			return nil
		}})
		ctx := context.Background()
		type result struct {
			name string
			err  error
		}
		resc := make(chan result)
		names := []string{"a", "b", "c", "d", "e", "f"}
		for i, name := range names {
			go func() {
				_, err := db.Create(ctx, key("ns", name), "u", obj("ns", name, ""))
				resc <- result{name, err}
			}()
			if i == 0 {
				<-held
			}
		}
		waitQueued(db, len(names)-1)
		close(release)
		results = map[string]error{}
		for range names {
			r := <-resc
			results[r.name] = r.err
		}
		return results, db
	}

	t.Run("unexpected error fails that write alone", func(t *testing.T) {
		results, db := run(t, map[string]bool{"b": true, "e": true})
		for name, err := range results {
			want := error(nil)
			if name == "b" || name == "e" {
				want = errInjected
			}
			if !errors.Is(err, want) {
				t.Errorf("Create(%s) error = %v, want %v", name, err, want)
			}
		}
		if got, want := db.Rev(), int64(4); got != want {
			t.Errorf("Rev() = %d, want %d", got, want)
		}
		events, err := db.Changes(context.Background(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range events {
			if ev.Rev() != int64(i+1) || ev.Object.Key.Name == "b" || ev.Object.Key.Name == "e" {
				t.Errorf("change %d = %s at rev %d, want rev %d and no poisoned write", i, ev.Object.Key.Name, ev.Rev(), i+1)
			}
		}
		if _, err := db.Get(context.Background(), key("ns", "b")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(poisoned) error = %v, want ErrNotFound (rolled back)", err)
		}
		if st := db.Stats(); st.Batches != 1 || st.BatchedWrites != 4 {
			t.Errorf("Stats() = %d writes in %d batches, want 4 in 1", st.BatchedWrites, st.Batches)
		}
	})

	t.Run("too many failures fail the batch", func(t *testing.T) {
		results, db := run(t, map[string]bool{"a": true, "c": true, "f": true})
		for name, err := range results {
			if !errors.Is(err, errInjected) {
				t.Errorf("Create(%s) error = %v, want %v", name, err, errInjected)
			}
		}
		if got := db.Rev(); got != 0 {
			t.Errorf("Rev() = %d, want 0: nothing committed", got)
		}
		if res, err := db.List(context.Background(), ListOptions{Resource: "configmaps"}); err != nil || len(res.Objects) != 0 || res.Rev != 0 {
			t.Errorf("List() = %d objects at rev %d (err %v), want none at 0", len(res.Objects), res.Rev, err)
		}
		// The writer goes on.
		if o := mustCreate(t, db, key("ns", "later"), ""); o.ModRev != 1 {
			t.Errorf("next write got revision %d, want 1", o.ModRev)
		}
	})
}
