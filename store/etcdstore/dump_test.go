//go:build etcd

package etcdstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeapi/edgeapi/store"
)

func TestStore_Dump(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	keys := []store.Key{
		key("a", "x"), key("a-b", "x"), key("b", "y"),
		{Resource: "namespaces", Name: "a"},
		{Resource: "services", Namespace: "a", Name: "svc"},
		{Resource: "widgets.example.com", Namespace: "a", Name: "w"},
		{Resource: "customresourcedefinitions.apiextensions.k8s.io", Name: "widgets.example.com"},
	}
	for _, k := range keys {
		if _, err := s.Create(ctx, k, "uid-"+k.Name, cm(k.Namespace, k.Name, "uid-"+k.Name, "1")); err != nil {
			t.Fatalf("Create(%v): %v", k, err)
		}
	}
	if _, err := s.Update(ctx, key("b", "y"), store.Preconditions{}, cm("b", "y", "uid-y", "2")); err != nil {
		t.Fatal(err)
	}
	gone := key("b", "gone")
	if _, err := s.Create(ctx, gone, "u", cm("b", "gone", "u", "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, gone, store.Preconditions{}); err != nil {
		t.Fatal(err)
	}
	// Keys edgeapi cannot read: one outside the layout, one whose value is
	// not JSON (as kube-apiserver's protobuf), and one outside the prefix
	// that Dump must not see at all.
	for k, v := range map[string]string{
		"/registry/health":      `{"health":"true"}`,
		"/registry/pods/a/p":    "k8s\x00\n\x09\n\x02v1\x12\x03Pod",
		"/registry-compact":     "5",
		"/registryother/thing":  "{}",
		"/registry/configmaps/": "{}",
	} {
		if _, err := s.client.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	wantRev := s.Rev()

	got := map[store.Key]store.Object{}
	rev, err := s.Dump(ctx, func(o store.Object) error {
		got[o.Key] = o
		return nil
	})
	var unmapped *UnmappedError
	if !errors.As(err, &unmapped) {
		t.Fatalf("Dump error = %v, want an UnmappedError", err)
	}
	if unmapped.Count != 3 || !strings.Contains(err.Error(), "/registry/health") || !strings.Contains(err.Error(), "/registry/pods/a/p") {
		t.Errorf("Dump error = %v, want the three keys it cannot read", err)
	}
	if rev < wantRev || unmapped.Rev != rev {
		t.Errorf("Dump rev = %d (error's %d), want %d", rev, unmapped.Rev, wantRev)
	}
	if len(got) != len(keys) {
		t.Errorf("Dump reported %d objects, want %d", len(got), len(keys))
	}
	for _, k := range keys {
		o, ok := got[k]
		if !ok {
			t.Errorf("Dump did not report %v", k)
			continue
		}
		g, err := s.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if string(o.Value) != string(g.Value) || o.UID != g.UID || o.ModRev != g.ModRev || o.CreateRev != g.CreateRev {
			t.Errorf("Dump %v = %+v, want Get's %+v", k, o, g)
		}
	}
}

func TestStore_Dump_pages(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const n = dumpBatch*2 + 3
	for i := range n {
		k := key("ns", string(rune('a'+i/26))+string(rune('a'+i%26))+strings.Repeat("x", i%3))
		if _, err := s.Create(ctx, k, "u", cm(k.Namespace, k.Name, "u", "1")); err != nil {
			t.Fatal(err)
		}
	}
	rev0 := s.Rev()
	calls := 0
	rev, err := s.Dump(ctx, func(o store.Object) error {
		calls++
		if calls == 1 {
			// A write while Dump reads is not in its revision.
			if _, err := s.Create(ctx, key("zz", "late"), "u", cm("zz", "late", "u", "1")); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != n || rev != rev0 {
		t.Errorf("Dump = %d objects at %d, want %d at %d", calls, rev, n, rev0)
	}
}

func TestStore_Empty(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if _, err := s.client.Put(ctx, "/registry-compact", "1"); err != nil {
		t.Fatal(err)
	}
	empty, rev, err := s.Empty(ctx)
	if err != nil || !empty || rev < 2 {
		t.Errorf("Empty with only a key beside the prefix = %v at %d (%v), want true", empty, rev, err)
	}
	if _, err := s.Create(ctx, key("a", "x"), "u", cm("a", "x", "u", "1")); err != nil {
		t.Fatal(err)
	}
	if empty, _, err := s.Empty(ctx); err != nil || empty {
		t.Errorf("Empty with an object = %v (%v), want false", empty, err)
	}
}

func TestStore_Advance(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if _, err := s.Create(ctx, key("a", "x"), "u", cm("a", "x", "u", "1")); err != nil {
		t.Fatal(err)
	}
	const target = 5000
	start := time.Now()
	writes, err := s.Advance(ctx, target, 0)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Advance: %v", err)
	}
	t.Logf("Advance wrote %d revisions in %v (%.0f/s)", writes, took, float64(writes)/took.Seconds())
	resp, err := s.client.Get(ctx, "/registry-migrate")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Revision; got != target || len(resp.Kvs) != 0 {
		t.Errorf("after Advance: revision %d with %d scratch keys, want %d and none", got, len(resp.Kvs), target)
	}
	if writes != target-2 {
		t.Errorf("Advance wrote %d revisions, want %d", writes, target-2)
	}
	obj, err := s.Create(ctx, key("a", "y"), "u", cm("a", "y", "u", "1"))
	if err != nil || obj.ModRev != target+1 {
		t.Errorf("Create after Advance = rev %d (%v), want %d", obj.ModRev, err, target+1)
	}
	if n, err := s.Advance(ctx, target, 0); err != nil || n != 0 {
		t.Errorf("Advance to a passed revision = %d (%v), want nothing written", n, err)
	}
	// One revision short: a put and the delete.
	cur := s.Rev()
	if n, err := s.Advance(ctx, cur+1, 0); err != nil || n != 2 {
		t.Errorf("Advance by one = %d writes (%v), want 2", n, err)
	}
	resp, err = s.client.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 2 {
		t.Errorf("objects after Advance: %d (%v), want 2", resp.Count, err)
	}
}
