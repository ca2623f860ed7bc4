//go:build etcd

package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/store"
)

// cm returns a ConfigMap's JSON with one data entry.
func cm(ns, name, uid, v string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"uid":%q},"data":{"v":%q}}`, name, ns, uid, v))
}

// rvOf returns metadata.resourceVersion of value.
func rvOf(t *testing.T, value []byte) string {
	t.Helper()
	var v struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		t.Fatalf("decode %s: %v", value, err)
	}
	return v.Metadata.ResourceVersion
}

func dataOf(t *testing.T, value []byte) string {
	t.Helper()
	var v struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		t.Fatalf("decode %s: %v", value, err)
	}
	return v.Data["v"]
}

func key(ns, name string) store.Key {
	return store.Key{Resource: "configmaps", Namespace: ns, Name: name}
}

func TestStore_Create(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	k := key("ns", "a")
	obj, err := s.Create(ctx, k, "u1", cm("ns", "a", "u1", "1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if obj.CreateRev != obj.ModRev || obj.ModRev != s.Rev() || obj.UID != "u1" {
		t.Errorf("Create = rev %d/%d uid %q, want both %d, u1", obj.CreateRev, obj.ModRev, obj.UID, s.Rev())
	}
	if got, want := rvOf(t, obj.Value), strconv.FormatInt(obj.ModRev, 10); got != want {
		t.Errorf("Create value resourceVersion = %q, want %q", got, want)
	}
	got, err := s.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.ModRev != obj.ModRev || got.CreateRev != obj.CreateRev || got.UID != "u1" || string(got.Value) != string(obj.Value) {
		t.Errorf("Get = %+v, want %+v", got, obj)
	}
	if _, err := s.Create(ctx, k, "u2", cm("ns", "a", "u2", "2")); !errors.Is(err, store.ErrExists) {
		t.Errorf("second Create: got %v, want ErrExists", err)
	}
	if _, err := s.Get(ctx, key("ns", "missing")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get missing: got %v, want ErrNotFound", err)
	}
	if _, err := s.Create(ctx, key("ns", "bad"), "", []byte(`{"kind":"x"}`)); !errors.Is(err, store.ErrInvalidObject) {
		t.Errorf("Create without metadata: got %v, want ErrInvalidObject", err)
	}
	// Past etcd's --max-request-bytes (its default, 1.5 MiB, here) etcd
	// refuses the value, beyond gRPC's default 2 MiB as well.
	for _, n := range []int{2 << 20, 3 << 20} {
		big := cm("ns", "big", "", strings.Repeat("x", n))
		if _, err := s.Create(ctx, key("ns", "big"), "", big); !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("Create of %d bytes: got %v, want ErrTooLarge", n, err)
		}
	}
	s.maxValue = 1 << 10 // Config.MaxValueBytes: checked before sending
	if _, err := s.Create(ctx, key("ns", "big"), "", cm("ns", "big", "", strings.Repeat("x", 2<<10))); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Create over MaxValueBytes: got %v, want ErrTooLarge", err)
	}
	s.maxValue = MaxRequestBytes
	// The etcd key is kube-apiserver's.
	resp, err := s.client.Get(ctx, "/registry/configmaps/ns/a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Errorf("etcd key /registry/configmaps/ns/a: %v, %d kvs, want 1", err, len(resp.Kvs))
	}
}

func TestStore_Update(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	k := key("ns", "a")
	created, err := s.Create(ctx, k, "u1", cm("ns", "a", "u1", "1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Run("ModRev", func(t *testing.T) {
		obj, err := s.Update(ctx, k, store.Preconditions{ModRev: created.ModRev}, cm("ns", "a", "u1", "2"))
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		if obj.ModRev <= created.ModRev || obj.CreateRev != created.CreateRev || obj.UID != "u1" {
			t.Errorf("Update = %d/%d %q, want ModRev > %d, CreateRev %d", obj.CreateRev, obj.ModRev, obj.UID, created.ModRev, created.CreateRev)
		}
		if got, want := rvOf(t, obj.Value), strconv.FormatInt(obj.ModRev, 10); got != want {
			t.Errorf("resourceVersion = %q, want %q", got, want)
		}
	})
	t.Run("Conflict", func(t *testing.T) {
		_, err := s.Update(ctx, k, store.Preconditions{ModRev: created.ModRev}, cm("ns", "a", "u1", "3"))
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("stale ModRev: got %v, want ErrConflict", err)
		}
		_, err = s.Update(ctx, k, store.Preconditions{UID: "other"}, cm("ns", "a", "u1", "3"))
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("wrong UID: got %v, want ErrConflict", err)
		}
	})
	t.Run("UID", func(t *testing.T) {
		obj, err := s.Update(ctx, k, store.Preconditions{UID: "u1"}, cm("ns", "a", "u1", "4"))
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		got, _ := s.Get(ctx, k)
		if dataOf(t, got.Value) != "4" || got.ModRev != obj.ModRev {
			t.Errorf("Get after Update = %s", got.Value)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		_, err := s.Update(ctx, key("ns", "missing"), store.Preconditions{}, cm("ns", "missing", "", "1"))
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
		_, err = s.Update(ctx, key("ns", "missing"), store.Preconditions{ModRev: 5}, cm("ns", "missing", "", "1"))
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("with ModRev: got %v, want ErrNotFound", err)
		}
	})
}

func TestStore_Delete(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	k := key("ns", "a")
	created, err := s.Create(ctx, k, "u1", cm("ns", "a", "u1", "1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := s.Delete(ctx, k, store.Preconditions{ModRev: created.ModRev + 100}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Delete stale ModRev: got %v, want ErrConflict", err)
	}
	if _, err := s.Delete(ctx, k, store.Preconditions{UID: "x"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Delete wrong UID: got %v, want ErrConflict", err)
	}
	obj, err := s.Delete(ctx, k, store.Preconditions{UID: "u1", ModRev: created.ModRev})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if obj.ModRev != s.Rev() || obj.ModRev <= created.ModRev || obj.CreateRev != created.CreateRev || obj.UID != "u1" {
		t.Errorf("Delete = %d/%d %q, want the delete revision %d", obj.CreateRev, obj.ModRev, obj.UID, s.Rev())
	}
	if got, want := rvOf(t, obj.Value), strconv.FormatInt(obj.ModRev, 10); got != want {
		t.Errorf("deleted resourceVersion = %q, want %q", got, want)
	}
	if _, err := s.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: got %v, want ErrNotFound", err)
	}
	if _, err := s.Delete(ctx, k, store.Preconditions{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Delete: got %v, want ErrNotFound", err)
	}
}

// names returns "ns/name" of each object.
func names(objs []store.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key.Namespace + "/" + o.Key.Name
	}
	return out
}

func equal(a, b []string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestStore_List(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	// Created out of order; listed in key order.
	for _, nn := range [][2]string{{"b", "2"}, {"a", "3"}, {"b", "1"}, {"a", "1"}, {"c", "1"}, {"a", "2"}} {
		if _, err := s.Create(ctx, key(nn[0], nn[1]), "", cm(nn[0], nn[1], "", nn[0]+nn[1])); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	// Another resource must not show.
	if _, err := s.Create(ctx, store.Key{Resource: "secrets", Namespace: "a", Name: "0"}, "", cm("a", "0", "", "")); err != nil {
		t.Fatalf("Create secret: %v", err)
	}
	all := []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c/1"}

	t.Run("All", func(t *testing.T) {
		res, err := s.List(ctx, store.ListOptions{Resource: "configmaps"})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if got := names(res.Objects); !equal(got, all) {
			t.Errorf("got %v, want %v", got, all)
		}
		if res.More || res.Remaining != 0 || res.Rev != s.Rev() {
			t.Errorf("More %v Remaining %d Rev %d, want false 0 %d", res.More, res.Remaining, res.Rev, s.Rev())
		}
		for _, o := range res.Objects {
			if got, want := rvOf(t, o.Value), strconv.FormatInt(o.ModRev, 10); got != want {
				t.Errorf("%s resourceVersion = %q, want %q", o.Key.Name, got, want)
			}
		}
	})
	t.Run("Namespace", func(t *testing.T) {
		res, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Namespace: "b"})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if got, want := names(res.Objects), []string{"b/1", "b/2"}; !equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("Pages", func(t *testing.T) {
		var got []string
		opts := store.ListOptions{Resource: "configmaps", Limit: 4}
		res, err := s.List(ctx, opts)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if !res.More || res.Remaining != 2 {
			t.Errorf("first page More %v Remaining %d, want true 2", res.More, res.Remaining)
		}
		got = append(got, names(res.Objects)...)
		last := res.Objects[len(res.Objects)-1].Key
		opts.Rev, opts.AfterNamespace, opts.AfterName = res.Rev, last.Namespace, last.Name
		res, err = s.List(ctx, opts)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if res.More || res.Remaining != 0 {
			t.Errorf("second page More %v Remaining %d, want false 0", res.More, res.Remaining)
		}
		got = append(got, names(res.Objects)...)
		if !equal(got, all) {
			t.Errorf("pages: got %v, want %v", got, all)
		}
	})
	t.Run("PagesWithByteBound", func(t *testing.T) {
		// As the API lists: a Limit and a byte bound that is not reached.
		res, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Limit: 4, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if got, want := names(res.Objects), all[:4]; !equal(got, want) || !res.More || res.Cut || res.Remaining != 2 {
			t.Errorf("got %v More %v Cut %v Remaining %d, want %v true false 2", got, res.More, res.Cut, res.Remaining, want)
		}
	})
	t.Run("Filter", func(t *testing.T) {
		opts := store.ListOptions{Resource: "configmaps", Limit: 2, Filter: func(o *store.Object) bool { return o.Key.Name == "1" }}
		res, err := s.List(ctx, opts)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if got, want := names(res.Objects), []string{"a/1", "b/1"}; !equal(got, want) || !res.More || res.Remaining != -1 {
			t.Errorf("got %v More %v Remaining %d, want %v true -1", got, res.More, res.Remaining, want)
		}
	})
	t.Run("MaxBytes", func(t *testing.T) {
		res, err := s.List(ctx, store.ListOptions{Resource: "configmaps", MaxBytes: 1})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(res.Objects) != 1 || !res.Cut || !res.More || res.Remaining != -1 {
			t.Errorf("got %d objects Cut %v More %v Remaining %d, want 1 true true -1", len(res.Objects), res.Cut, res.More, res.Remaining)
		}
	})
}

func TestStore_ListAtRev(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		if _, err := s.Create(ctx, key("ns", n), "", cm("ns", n, "", "old")); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	old := s.Rev()
	if _, err := s.Update(ctx, key("ns", "a"), store.Preconditions{}, cm("ns", "a", "", "new")); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := s.Delete(ctx, key("ns", "b"), store.Preconditions{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Create(ctx, key("ns", "c"), "", cm("ns", "c", "", "new")); err != nil {
		t.Fatalf("Create: %v", err)
	}

	res, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Rev: old})
	if err != nil {
		t.Fatalf("List at %d: %v", old, err)
	}
	if got, want := names(res.Objects), []string{"ns/a", "ns/b"}; !equal(got, want) || res.Rev != old {
		t.Errorf("at %d: got %v rev %d, want %v", old, got, res.Rev, want)
	}
	for _, o := range res.Objects {
		if got := dataOf(t, o.Value); got != "old" {
			t.Errorf("at %d: %s is %q, want old", old, o.Key.Name, got)
		}
	}
	if _, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Rev: s.Rev() + 10}); !errors.Is(err, store.ErrFutureRev) {
		t.Errorf("future rev: got %v, want ErrFutureRev", err)
	}

	t.Run("Hold", func(t *testing.T) {
		release := s.Hold(old)
		if err := s.Compact(ctx, s.Rev()); err != nil {
			t.Fatalf("Compact: %v", err)
		}
		if got := s.CompactedRev(); got != old {
			t.Errorf("CompactedRev under a Hold at %d = %d", old, got)
		}
		if _, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Rev: old}); err != nil {
			t.Errorf("List at held rev: %v", err)
		}
		release()
	})
	t.Run("Compacted", func(t *testing.T) {
		cur := s.Rev()
		if err := s.Compact(ctx, cur); err != nil {
			t.Fatalf("Compact: %v", err)
		}
		if got := s.CompactedRev(); got != cur {
			t.Errorf("CompactedRev = %d, want %d", got, cur)
		}
		if _, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Rev: old}); !errors.Is(err, store.ErrCompacted) {
			t.Errorf("List below compaction: got %v, want ErrCompacted", err)
		}
		if _, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Rev: cur}); err != nil {
			t.Errorf("List at the compacted rev: %v", err)
		}
		if _, err := s.Changes(ctx, old, 0); !errors.Is(err, store.ErrCompacted) {
			t.Errorf("Changes below compaction: got %v, want ErrCompacted", err)
		}
	})
	t.Run("Reopen", func(t *testing.T) {
		// A new store learns the compacted revision from etcd.
		s2, err := New(ctx, Config{Endpoints: s.client.Endpoints()})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		defer s2.Close()
		if got, want := s2.CompactedRev(), s.CompactedRev(); got != want {
			t.Errorf("reopened CompactedRev = %d, want %d", got, want)
		}
	})
}

func TestStore_GuaranteedUpdate(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	k := key("ns", "counter")
	if _, err := s.Create(ctx, k, "", cm("ns", "counter", "", "0")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	const updaters, each = 2, 25
	var wg sync.WaitGroup
	errs := make(chan error, updaters)
	for range updaters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := s.GuaranteedUpdate(ctx, k, func(cur store.Object) ([]byte, error) {
					n, err := strconv.Atoi(dataOf(t, cur.Value))
					if err != nil {
						return nil, err
					}
					return cm("ns", "counter", "", strconv.Itoa(n+1)), nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("GuaranteedUpdate: %v", err)
	}
	got, err := s.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got, want := dataOf(t, got.Value), strconv.Itoa(updaters*each); got != want {
		t.Errorf("counter = %s, want %s", got, want)
	}

	t.Run("Unchanged", func(t *testing.T) {
		before := s.Rev()
		obj, err := s.GuaranteedUpdate(ctx, k, func(cur store.Object) ([]byte, error) { return cur.Value, nil })
		if err != nil || obj.ModRev != got.ModRev || s.Rev() != before {
			t.Errorf("unchanged: ModRev %d (want %d), rev %d -> %d, %v", obj.ModRev, got.ModRev, before, s.Rev(), err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		_, err := s.GuaranteedUpdate(ctx, key("ns", "missing"), func(cur store.Object) ([]byte, error) { return cur.Value, nil })
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("Error", func(t *testing.T) {
		stop := errors.New("stop")
		_, err := s.GuaranteedUpdate(ctx, k, func(cur store.Object) ([]byte, error) { return nil, stop })
		if !errors.Is(err, stop) {
			t.Errorf("got %v, want tryUpdate's error", err)
		}
	})
}

func TestStore_Subscribe(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []store.Event
	cancel := s.Subscribe(func(evs []store.Event) {
		mu.Lock()
		got = append(got, evs...)
		mu.Unlock()
	})
	defer cancel()
	seen := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	k := key("ns", "a")
	created, err := s.Create(ctx, k, "u", cm("ns", "a", "u", "1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	// Subscribers have the write before its writer is answered.
	if n := seen(); n != 1 {
		t.Fatalf("after Create: %d events, want 1", n)
	}
	updated, err := s.Update(ctx, k, store.Preconditions{}, cm("ns", "a", "u", "2"))
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	deleted, err := s.Delete(ctx, k, store.Preconditions{})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := seen(); n != 3 {
		t.Fatalf("after Delete: %d events, want 3", n)
	}
	want := []struct {
		typ store.EventType
		rev int64
	}{{store.Added, created.ModRev}, {store.Modified, updated.ModRev}, {store.Deleted, deleted.ModRev}}
	mu.Lock()
	defer mu.Unlock()
	for i, w := range want {
		e := got[i]
		if e.Type != w.typ || e.Rev() != w.rev || e.Object.Key != k || e.Object.UID != "u" {
			t.Errorf("event %d = %v rev %d key %+v uid %q, want %v rev %d", i, e.Type, e.Rev(), e.Object.Key, e.Object.UID, w.typ, w.rev)
		}
		if got, want := rvOf(t, e.Object.Value), strconv.FormatInt(w.rev, 10); got != want {
			t.Errorf("event %d resourceVersion %q, want %q", i, got, want)
		}
	}
	if string(got[1].PrevValue) != string(created.Value) {
		t.Errorf("Modified PrevValue = %s, want %s", got[1].PrevValue, created.Value)
	}
}

func TestStore_Changes(t *testing.T) {
	s := openStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := s.Rev()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Create(ctx, key("ns", n), "", cm("ns", n, "", "1")); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	if _, err := s.Delete(ctx, key("ns", "b"), store.Preconditions{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	// A write outside the prefix is the newest revision: Changes ends on a
	// progress notification rather than on an event at the head.
	if _, err := s.client.Put(ctx, "/elsewhere", "x"); err != nil {
		t.Fatalf("Put outside the prefix: %v", err)
	}
	evs, err := s.Changes(ctx, start, 0)
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Type.String()+" "+e.Object.Key.Name)
	}
	if want := []string{"ADDED a", "ADDED b", "ADDED c", "DELETED b"}; !equal(got, want) {
		t.Errorf("Changes = %v, want %v", got, want)
	}
	evs, err = s.ChangeKeys(ctx, start+1, 2)
	if err != nil {
		t.Fatalf("ChangeKeys: %v", err)
	}
	if len(evs) != 2 || evs[0].Object.Key.Name != "b" || evs[0].Object.Value != nil {
		t.Errorf("ChangeKeys(limit 2) = %+v", evs)
	}
	if evs, err := s.Changes(ctx, s.Rev(), 0); err != nil || len(evs) != 0 {
		t.Errorf("Changes at the head = %v, %v, want none", evs, err)
	}
	if _, err := s.Changes(ctx, s.Rev()+5, 0); !errors.Is(err, store.ErrFutureRev) {
		t.Errorf("Changes in the future: got %v, want ErrFutureRev", err)
	}
}

// TestStore_ListOrder pins etcd's key order across namespaces where one
// namespace is a prefix of another ("a-b/..." sorts before "a/..."), and
// checks that pages of one object each neither skip nor repeat.
func TestStore_ListOrder(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for _, nn := range [][2]string{{"a", "x"}, {"a-b", "x"}, {"a.b", "y"}, {"b", "x"}} {
		if _, err := s.Create(ctx, key(nn[0], nn[1]), "", cm(nn[0], nn[1], "", "")); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	want := []string{"a-b/x", "a.b/y", "a/x", "b/x"}
	res, err := s.List(ctx, store.ListOptions{Resource: "configmaps"})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if got := names(res.Objects); !equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	var got []string
	opts := store.ListOptions{Resource: "configmaps", Limit: 1}
	for range 10 {
		res, err := s.List(ctx, opts)
		if err != nil {
			t.Fatalf("List page: %v", err)
		}
		got = append(got, names(res.Objects)...)
		if !res.More {
			break
		}
		last := res.Objects[len(res.Objects)-1].Key
		opts.Rev, opts.AfterNamespace, opts.AfterName = res.Rev, last.Namespace, last.Name
	}
	if !equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
}

func TestStore_Close(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(ctx, key("ns", "a")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Create(ctx, key("ns", "a"), "", cm("ns", "a", "", "")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Create after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.List(ctx, store.ListOptions{Resource: "configmaps"}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("List after Close: got %v, want ErrClosed", err)
	}
}

func TestStore_ListConcurrency(t *testing.T) {
	url := startEtcd(t)
	ctx := context.Background()
	s, err := New(ctx, Config{Endpoints: []string{url}, ListConcurrency: 1})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, key("ns", "a"), "u", cm("ns", "a", "u", "1")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	// The first List holds the only slot until release closes.
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := s.List(ctx, store.ListOptions{Resource: "configmaps", Filter: func(*store.Object) bool {
			close(inside)
			<-release
			return true
		}})
		done <- err
	}()
	<-inside
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.List(short, store.ListOptions{Resource: "configmaps"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second List while the slot is held: %v, want it to wait until its context ends", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first List: %v", err)
	}
	if res, err := s.List(ctx, store.ListOptions{Resource: "configmaps"}); err != nil || len(res.Objects) != 1 {
		t.Errorf("List after the slot is free: %d objects, %v; want 1", len(res.Objects), err)
	}
}
