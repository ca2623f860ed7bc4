package controller

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// openTestStore opens a SQLite store in a temporary directory.
func openTestStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(t.TempDir(), "test.db"), UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// testElector returns an elector named id over db whose clock is *now.
func testElector(t *testing.T, db store.Store, id string, now *time.Time, le LeaderElection) *elector {
	t.Helper()
	le.Enabled, le.Identity = true, id
	e, err := newElector(le, db, registry.Builtin(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if now != nil {
		e.now = func() time.Time { return *now }
	}
	return e
}

// readLease returns the stored election Lease.
func readLease(t *testing.T, e *elector) *coordinationv1.Lease {
	t.Helper()
	o, err := e.st.Get(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := e.kind.DecodeStored(o.Value)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*coordinationv1.Lease)
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestElector_TryAcquireOrRenew(t *testing.T) {
	ctx := context.Background()
	db := openTestStore(t)
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	a := testElector(t, db, "a", &now, LeaderElection{})
	b := testElector(t, db, "b", &now, LeaderElection{})

	step := func(e *elector, wantOK bool, wantErr error) {
		t.Helper()
		ok, err := e.tryAcquireOrRenew(ctx)
		if ok != wantOK || (wantErr != nil && !errors.Is(err, wantErr)) {
			t.Fatalf("%s: tryAcquireOrRenew() = %v, %v; want %v, %v", e.cfg.Identity, ok, err, wantOK, wantErr)
		}
	}
	step(a, true, nil) // creates the Lease
	if got := readLease(t, a); holderOf(got) != "a" || *got.Spec.LeaseDurationSeconds != 15 || *got.Spec.LeaseTransitions != 0 {
		t.Fatalf("after create: holder %q, duration %d, transitions %d; want a, 15, 0", holderOf(got), *got.Spec.LeaseDurationSeconds, *got.Spec.LeaseTransitions)
	}
	step(b, false, errHeldByOther)
	// a renews every retry period: b never sees the Lease expire.
	for range 10 {
		now = now.Add(DefaultRetryPeriod)
		step(a, true, nil)
		step(b, false, errHeldByOther)
	}
	// a stops renewing: b takes the Lease one lease duration after it
	// last saw it change, not before.
	now = now.Add(DefaultLeaseDuration - time.Second)
	step(b, false, errHeldByOther)
	now = now.Add(time.Second)
	step(b, true, nil)
	got := readLease(t, b)
	if holderOf(got) != "b" || *got.Spec.LeaseTransitions != 1 || !got.Spec.AcquireTime.Time.Equal(now) {
		t.Fatalf("after takeover: holder %q, transitions %d, acquired %v; want b, 1, %v", holderOf(got), *got.Spec.LeaseTransitions, got.Spec.AcquireTime, now)
	}
	// a, back, finds b holding it.
	step(a, false, errHeldByOther)
}

func TestElector_Release(t *testing.T) {
	ctx := context.Background()
	db := openTestStore(t)
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	a := testElector(t, db, "a", &now, LeaderElection{})
	b := testElector(t, db, "b", &now, LeaderElection{})
	if ok, err := a.tryAcquireOrRenew(ctx); !ok {
		t.Fatalf("a: tryAcquireOrRenew() = false, %v", err)
	}
	if ok, _ := b.tryAcquireOrRenew(ctx); ok {
		t.Fatal("b acquired a held Lease")
	}
	// b releasing does nothing: it does not hold the Lease.
	b.release()
	if got := holderOf(readLease(t, a)); got != "a" {
		t.Fatalf("after b's release: holder %q, want a", got)
	}
	a.release()
	if got := readLease(t, a); holderOf(got) != "" || *got.Spec.LeaseDurationSeconds != 1 {
		t.Fatalf("after a's release: holder %q, duration %d; want none, 1", holderOf(got), *got.Spec.LeaseDurationSeconds)
	}
	// b takes the released Lease at once, on the same clock.
	if ok, err := b.tryAcquireOrRenew(ctx); !ok {
		t.Fatalf("b after release: tryAcquireOrRenew() = false, %v", err)
	}
}

func TestLeaderElection_Validate(t *testing.T) {
	tests := []struct {
		name    string
		le      LeaderElection
		wantErr bool
	}{
		{"defaults", LeaderElection{}, false},
		{"short", LeaderElection{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}, false},
		{"renew deadline not below lease", LeaderElection{LeaseDuration: 2 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}, true},
		{"retry not below renew deadline", LeaderElection{LeaseDuration: 3 * time.Second, RenewDeadline: time.Second, RetryPeriod: time.Second}, true},
		{"lease below a second", LeaderElection{LeaseDuration: 500 * time.Millisecond, RenewDeadline: 200 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.le.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// TestElector_Run runs two candidates on one store: exactly one leads;
// when its context ends it stops leading, releases the Lease, and the
// other leads.
func TestElector_Run(t *testing.T) {
	db := openTestStore(t)
	timings := LeaderElection{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}
	type candidate struct {
		e       *elector
		cancel  context.CancelFunc
		done    chan struct{}
		leading chan string // "start" and "stop" of each leadership
	}
	start := func(id string) *candidate {
		c := &candidate{e: testElector(t, db, id, nil, timings), done: make(chan struct{}), leading: make(chan string, 10)}
		var ctx context.Context
		ctx, c.cancel = context.WithCancel(context.Background())
		go func() {
			defer close(c.done)
			c.e.run(ctx, func(lctx context.Context) {
				c.leading <- "start"
				<-lctx.Done()
				c.leading <- "stop"
			})
		}()
		return c
	}
	a := start("a")
	b := start("b")
	var once sync.Once
	stopAll := func() { once.Do(func() { a.cancel(); b.cancel(); <-a.done; <-b.done }) }
	defer stopAll()

	var leader, follower *candidate
	select {
	case <-a.leading:
		leader, follower = a, b
	case <-b.leading:
		leader, follower = b, a
	case <-time.After(30 * time.Second):
		t.Fatal("no candidate leads after 30s")
	}
	if !leader.e.isLeading() || follower.e.isLeading() {
		t.Fatalf("leading: %s %v, %s %v; want true, false", leader.e.cfg.Identity, leader.e.isLeading(), follower.e.cfg.Identity, follower.e.isLeading())
	}
	if got := holderOf(readLease(t, leader.e)); got != leader.e.cfg.Identity {
		t.Fatalf("holder %q, want %q", got, leader.e.cfg.Identity)
	}
	leader.cancel()
	<-leader.done
	if got := <-leader.leading; got != "stop" {
		t.Fatalf("leader's lead func: got %q, want stop", got)
	}
	select {
	case <-follower.leading:
	case <-time.After(30 * time.Second):
		t.Fatal("the follower does not lead 30s after the leader released the Lease")
	}
	if got := holderOf(readLease(t, follower.e)); got != follower.e.cfg.Identity {
		t.Fatalf("holder after takeover %q, want %q", got, follower.e.cfg.Identity)
	}
	stopAll()
	if got := holderOf(readLease(t, follower.e)); got != "" {
		t.Fatalf("holder after both stopped %q, want none", got)
	}
}
