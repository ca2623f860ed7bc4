package rbac

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/store"
)

// TestAuthorizer_Follow runs the index against a real store and watch
// cache: objects stored before the start are listed, later writes arrive
// through the watch.
func TestAuthorizer_Follow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, store.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wc := store.NewWatchCache(db, store.WatchCacheConfig{})
	defer wc.Close()
	put := func(resource, ns, name, value string) {
		t.Helper()
		if _, err := db.Create(ctx, store.Key{Resource: resource, Namespace: ns, Name: name}, "uid-"+name, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	put(ResourceRoles, "ns", "r", `{"metadata":{"name":"r","namespace":"ns"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["configmaps"]}]}`)
	put(ResourceRoleBindings, "ns", "b1", `{"metadata":{"name":"b1","namespace":"ns"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},"subjects":[{"kind":"User","name":"u1"}]}`)

	a := New()
	synced := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- a.Follow(ctx, db, wc, func() { close(synced) }) }()
	<-synced
	u1 := with(res("get", "", "configmaps", "", "ns", "x"), as("u1"))
	if got := decide(t, a, u1); got != "allow" {
		t.Errorf("listed binding: got %q, want allow", got)
	}

	// A binding written after the list arrives through the watch: poll
	// until it does, for at least 30 s.
	put(ResourceRoleBindings, "ns", "b2", `{"metadata":{"name":"b2","namespace":"ns"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},"subjects":[{"kind":"User","name":"u2"}]}`)
	u2 := with(res("get", "", "configmaps", "", "ns", "x"), as("u2"))
	// The poll asks AuthorizeQuiet alone: decide asks twice and compares,
	// and the binding may arrive between the two (it did, on armv7 under
	// qemu). Once it is there, decide checks both.
	allowed := func() bool {
		d, _, err := a.AuthorizeQuiet(context.Background(), u2)
		return err == nil && d == authorizer.DecisionAllow
	}
	for i := 0; !allowed(); i++ {
		select {
		case err := <-done:
			t.Fatalf("Follow ended: %v", err)
		default:
		}
		if i == 30000 {
			t.Fatal("the binding written after the list never arrived")
		}
		wait(t)
	}
	if got := decide(t, a, u2); got != "allow" {
		t.Errorf("binding written after the list: got %q, want allow", got)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Follow returned %v, want context.Canceled", err)
	}
}

// wait yields to the follower between polls.
func wait(t *testing.T) {
	t.Helper()
	<-time.After(time.Millisecond)
}
