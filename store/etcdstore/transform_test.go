//go:build etcd

package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/store"
)

// sealer is a test transformer: it stores "sealed:" and the value's bytes
// reversed, and checks that the path it reads under is the one it wrote
// under, as an authenticating transformer would.
type sealer struct{}

var sealedPrefix = []byte("sealed:")

func (sealer) ToStorage(path string, value []byte) ([]byte, error) {
	out := append(append(append([]byte{}, sealedPrefix...), path...), '|')
	for i := len(value) - 1; i >= 0; i-- {
		out = append(out, value[i])
	}
	return out, nil
}

func (sealer) FromStorage(path string, stored []byte) ([]byte, bool, error) {
	head := append(append(append([]byte{}, sealedPrefix...), path...), '|')
	if !bytes.HasPrefix(stored, head) {
		return nil, false, fmt.Errorf("not sealed for %s", path)
	}
	body := stored[len(head):]
	out := make([]byte, len(body))
	for i := range body {
		out[i] = body[len(body)-1-i]
	}
	return out, false, nil
}

func TestStore_Transformers(t *testing.T) {
	url := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, Config{Endpoints: []string{url}, Transformers: func(resource string) store.Transformer {
		if resource == "configmaps" {
			return sealer{}
		}
		return nil
	}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()

	var mu sync.Mutex
	var events []store.Event
	defer s.Subscribe(func(evs []store.Event) {
		mu.Lock()
		events = append(events, evs...)
		mu.Unlock()
	})()

	k := key("ns", "a")
	created, err := s.Create(ctx, k, "u1", cm("ns", "a", "u1", "secret-1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	raw, err := s.client.Get(ctx, "/registry/configmaps/ns/a")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v, %d keys", err, len(raw.Kvs))
	}
	if got := raw.Kvs[0].Value; !bytes.HasPrefix(got, []byte("sealed:/registry/configmaps/ns/a|")) || bytes.Contains(got, []byte("secret-1")) {
		t.Errorf("stored value = %q, want it sealed under its etcd key", got)
	}

	got, err := s.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if dataOf(t, got.Value) != "secret-1" || got.UID != "u1" || !bytes.Equal(got.Value, created.Value) {
		t.Errorf("Get = uid %q %s, want uid u1 and %s", got.UID, got.Value, created.Value)
	}
	_, err = s.GuaranteedUpdate(ctx, k, func(cur store.Object) ([]byte, error) {
		if v := dataOf(t, cur.Value); v != "secret-1" {
			return nil, fmt.Errorf("tryUpdate saw %q", v)
		}
		return cm("ns", "a", "u1", "secret-2"), nil
	})
	if err != nil {
		t.Fatalf("GuaranteedUpdate: %v", err)
	}
	list, err := s.List(ctx, store.ListOptions{Resource: "configmaps"})
	if err != nil || len(list.Objects) != 1 {
		t.Fatalf("List: %v, %d objects", err, len(list.Objects))
	}
	if v := dataOf(t, list.Objects[0].Value); v != "secret-2" {
		t.Errorf("List value data %q, want secret-2", v)
	}
	deleted, err := s.Delete(ctx, k, store.Preconditions{UID: "u1"})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if v := dataOf(t, deleted.Value); v != "secret-2" {
		t.Errorf("Delete's last state data %q, want secret-2", v)
	}

	mu.Lock()
	if len(events) != 3 {
		t.Fatalf("%d events, want 3", len(events))
	}
	for i, want := range []string{"secret-1", "secret-2", "secret-2"} {
		if v := dataOf(t, events[i].Object.Value); v != want || events[i].Object.UID != "u1" {
			t.Errorf("event %d: data %q uid %q, want %q and u1", i, v, events[i].Object.UID, want)
		}
	}
	if v := dataOf(t, events[1].PrevValue); v != "secret-1" {
		t.Errorf("Modified event's PrevValue data %q, want secret-1", v)
	}
	mu.Unlock()
	changes, err := s.Changes(ctx, created.ModRev-1, 0)
	if err != nil || len(changes) != 3 {
		t.Fatalf("Changes: %v, %d events", err, len(changes))
	}
	if v := dataOf(t, changes[0].Object.Value); v != "secret-1" {
		t.Errorf("Changes[0] data %q, want secret-1", v)
	}

	// A value the transformer cannot read is a TransformError naming the
	// key, never garbage.
	if _, err := s.client.Put(ctx, "/registry/configmaps/ns/b", string(cm("ns", "b", "u2", "plain"))); err != nil {
		t.Fatalf("raw put: %v", err)
	}
	var te *store.TransformError
	if _, err := s.Get(ctx, key("ns", "b")); !errors.As(err, &te) || te.Path != "/registry/configmaps/ns/b" {
		t.Errorf("Get of an unsealed value: %v, want a TransformError for /registry/configmaps/ns/b", err)
	}
}

// staleSealer reads sealer's values and reports them stale, as a
// transformer does whose first key is no longer the one they were
// written with.
type staleSealer struct{ sealer }

func (t staleSealer) FromStorage(path string, stored []byte) ([]byte, bool, error) {
	v, _, err := t.sealer.FromStorage(path, stored)
	return v, true, err
}

func TestStore_GuaranteedUpdateRewritesStale(t *testing.T) {
	url := startEtcd(t)
	ctx := context.Background()
	var tr store.Transformer = sealer{}
	s, err := New(ctx, Config{Endpoints: []string{url}, Transformers: func(string) store.Transformer { return tr }})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	k := key("ns", "a")
	created, err := s.Create(ctx, k, "u1", cm("ns", "a", "u1", "v"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	same := func(cur store.Object) ([]byte, error) { return cm("ns", "a", "u1", "v"), nil }
	got, err := s.GuaranteedUpdate(ctx, k, same)
	if err != nil || got.ModRev != created.ModRev {
		t.Fatalf("unchanged update of a fresh value: rev %d, %v; want %d (nothing written)", got.ModRev, err, created.ModRev)
	}
	tr = staleSealer{}
	got, err = s.GuaranteedUpdate(ctx, k, same)
	if err != nil || got.ModRev <= created.ModRev {
		t.Errorf("unchanged update of a stale value: rev %d, %v; want it written again past %d", got.ModRev, err, created.ModRev)
	}
}
