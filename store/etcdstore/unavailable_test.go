//go:build etcd

package etcdstore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/edgeapi/edgeapi/store"
)

// loseAnswers is a gRPC interceptor that makes the next lost Txn calls
// fail with Unavailable, as a connection reset does: after sending them
// to etcd when applied is true (the answer is lost), before when it is
// false (the request is lost).
type loseAnswers struct {
	lost    atomic.Int32 // Txn calls still to fail
	applied bool
	// stuck makes the lost calls hang, unsent, until their context ends,
	// as a proposal forwarded to a leader that died does.
	stuck bool
}

func (l *loseAnswers) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !strings.HasSuffix(method, "/Txn") || l.lost.Add(-1) < 0 {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	if l.stuck {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	if l.applied {
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
	}
	return status.Error(codes.Unavailable, "error reading from server: connection reset by peer")
}

// openLossy opens a Store on url whose Txn calls l intercepts.
func openLossy(t *testing.T, url string, l *loseAnswers) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, Config{Endpoints: []string{url}, dialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(l.intercept)}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStore_LostAnswer: a write whose answer (or request) is lost on
// the way, as when the etcd member it went to dies, or that gets no
// answer within attemptTimeout, is sent again; the write is applied
// once, and succeeds with the revision that applied it, whichever
// attempt that was.
func TestStore_LostAnswer(t *testing.T) {
	url := startEtcd(t)
	for _, tt := range []struct {
		name           string
		applied, stuck bool
	}{
		{name: "answer lost", applied: true},
		{name: "request lost"},
		{name: "request stuck", stuck: true},
	} {
		name := tt.name
		t.Run(name, func(t *testing.T) {
			l := &loseAnswers{applied: tt.applied, stuck: tt.stuck}
			s := openLossy(t, url, l)
			ns := strings.ReplaceAll(name, " ", "-")
			ctx := context.Background()
			check := func(what string, got store.Object, err error, wantV string) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				cur, err := s.Get(ctx, got.Key)
				if err != nil {
					t.Fatalf("%s: Get: %v", what, err)
				}
				if cur.ModRev != got.ModRev || dataOf(t, cur.Value) != wantV {
					t.Errorf("%s returned rev %d; the object is at rev %d with v=%q, want v=%q", what, got.ModRev, cur.ModRev, dataOf(t, cur.Value), wantV)
				}
			}
			// Each write is applied once: one revision each.
			rev0 := s.Rev()

			l.lost.Store(1)
			created, err := s.Create(ctx, key(ns, "a"), "u", cm(ns, "a", "u", "1"))
			check("Create", created, err, "1")

			l.lost.Store(1)
			updated, err := s.Update(ctx, key(ns, "a"), store.Preconditions{ModRev: created.ModRev}, cm(ns, "a", "u", "2"))
			check("Update", updated, err, "2")

			l.lost.Store(1)
			guaranteed, err := s.GuaranteedUpdate(ctx, key(ns, "a"), func(store.Object) ([]byte, error) { return cm(ns, "a", "u", "3"), nil })
			check("GuaranteedUpdate", guaranteed, err, "3")

			l.lost.Store(1)
			deleted, err := s.Delete(ctx, key(ns, "a"), store.Preconditions{UID: "u"})
			if err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if got := dataOf(t, deleted.Value); got != "3" {
				t.Errorf("Delete returned the last state v=%q, want v=3", got)
			}
			if _, err := s.Get(ctx, key(ns, "a")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get after Delete: got %v, want ErrNotFound", err)
			}
			if got, want := s.Rev()-rev0, int64(4); got != want {
				t.Errorf("the four writes took %d revisions, want %d (each applied once)", got, want)
			}
			if n := l.lost.Load(); n > 0 {
				t.Errorf("%d answers were not lost: the interceptor saw no Txn", n)
			}
		})
	}
}

// TestStore_LostAnswerConflict: a write whose answer is lost and whose
// key another writer changes before it is sent again fails with
// ErrConflict, as it would have without the loss: sending it again never
// applies it over the other write.
func TestStore_LostAnswerConflict(t *testing.T) {
	url := startEtcd(t)
	l := &loseAnswers{applied: false}
	s := openLossy(t, url, l)
	other := openAt(t, url, "")
	ctx := context.Background()
	created, err := s.Create(ctx, key("ns", "a"), "u", cm("ns", "a", "u", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Update(ctx, key("ns", "a"), store.Preconditions{ModRev: created.ModRev}, cm("ns", "a", "u", "other")); err != nil {
		t.Fatal(err)
	}
	l.lost.Store(1)
	_, err = s.Update(ctx, key("ns", "a"), store.Preconditions{ModRev: created.ModRev}, cm("ns", "a", "u", "2"))
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("Update from a stale revision with its request lost: got %v, want ErrConflict", err)
	}
	cur, err := s.Get(ctx, key("ns", "a"))
	if err != nil || dataOf(t, cur.Value) != "other" {
		t.Errorf("Get = %v, %v; want the other writer's value", cur, err)
	}
}

// TestStore_Unavailable: while etcd is down (and the client knows it),
// reads fail with ErrUnavailable and writes with ErrUnavailable or
// ErrUnknownOutcome once the unavailable wait has passed, not later and
// with no other error; once etcd is back, both work again on the same
// store.
func TestStore_Unavailable(t *testing.T) {
	e := newEtcd(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Endpoints: []string{e.url}, UnavailableWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	created, err := s.Create(ctx, key("ns", "a"), "u", cm("ns", "a", "u", "1"))
	if err != nil {
		t.Fatal(err)
	}
	e.stop()
	// Reads wait for the unavailable wait only once the client knows it
	// has no connection (a read on a live connection waits as long as
	// the request may).
	for deadline := time.Now().Add(30 * time.Second); s.connected(); {
		if time.Now().After(deadline) {
			t.Fatal("the client still has a ready connection 30 s after etcd stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A hang guard, not a timing check: the wait is 0.5 s.
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := s.Get(hctx, key("ns", "a")); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get with etcd down: got %v, want ErrUnavailable", err)
	}
	if _, err := s.List(hctx, store.ListOptions{Resource: "configmaps"}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("List with etcd down: got %v, want ErrUnavailable", err)
	}
	if err := s.Alive(hctx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Alive with etcd down: got %v, want ErrUnavailable", err)
	}
	_, err = s.Update(hctx, key("ns", "a"), store.Preconditions{ModRev: created.ModRev}, cm("ns", "a", "u", "2"))
	if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrUnknownOutcome) {
		t.Errorf("Update with etcd down: got %v, want ErrUnavailable or ErrUnknownOutcome", err)
	}
	if hctx.Err() != nil {
		t.Fatalf("the requests with etcd down took the whole hang guard")
	}

	e.start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cur, err := s.Get(ctx, key("ns", "a"))
		if err == nil {
			if _, err := s.Update(ctx, key("ns", "a"), store.Preconditions{ModRev: cur.ModRev}, cm("ns", "a", "u", "3")); err != nil {
				t.Errorf("Update after etcd is back: %v", err)
			}
			break
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("Get after etcd is back: %v", err)
		}
	}
}
