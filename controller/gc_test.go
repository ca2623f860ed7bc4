package controller

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// countingStore is a store that counts the reads the garbage collector
// makes: List calls and the objects they return, and Gets.
type countingStore struct {
	store.Store

	mu                sync.Mutex
	lists, rows, gets int
}

func (s *countingStore) List(ctx context.Context, opts store.ListOptions) (store.ListResult, error) {
	res, err := s.Store.List(ctx, opts)
	s.mu.Lock()
	s.lists++
	s.rows += len(res.Objects)
	s.mu.Unlock()
	return res, err
}

func (s *countingStore) Get(ctx context.Context, key store.Key) (store.Object, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Store.Get(ctx, key)
}

// reads returns the counts so far.
func (s *countingStore) reads() (lists, rows, gets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, s.rows, s.gets
}

// gcObjects is Objects for the garbage collector's tests: DeleteObject
// deletes from the store under the UID precondition, after failing as
// many times as fail says for the object's name.
type gcObjects struct {
	db *store.DB

	mu      sync.Mutex
	fail    map[string]int
	deletes map[string]int
}

func (o *gcObjects) CreateObject(context.Context, *registry.Kind, runtime.Object, string) error {
	return errors.New("not supported")
}

func (o *gcObjects) UpdateObject(context.Context, *registry.Kind, string, string, string, string, func(runtime.Object) (runtime.Object, error)) (bool, error) {
	return false, errors.New("not supported")
}

func (o *gcObjects) DeleteObject(ctx context.Context, k *registry.Kind, namespace, name string, opts *metav1.DeleteOptions) (bool, error) {
	o.mu.Lock()
	o.deletes[name]++
	fail := o.fail[name] > 0
	if fail {
		o.fail[name]--
	}
	o.mu.Unlock()
	if fail {
		return false, apierrors.NewServiceUnavailable("injected failure")
	}
	var pre store.Preconditions
	if opts != nil && opts.Preconditions != nil && opts.Preconditions.UID != nil {
		pre.UID = string(*opts.Preconditions.UID)
	}
	gr := schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}
	_, err := o.db.Delete(ctx, k.StoreKey(namespace, name), pre)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, apierrors.NewNotFound(gr, name)
	case errors.Is(err, store.ErrConflict):
		return false, apierrors.NewConflict(gr, name, err)
	case err != nil:
		return false, apierrors.NewInternalError(err)
	}
	return true, nil
}

// deletesOf returns how many times DeleteObject was called for name.
func (o *gcObjects) deletesOf(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.deletes[name]
}

// gcTest is a garbage collector running on a store of its own, with its
// ticker replaced by ticks.
type gcTest struct {
	t     *testing.T
	ctx   context.Context
	db    *store.DB
	reads *countingStore
	objs  *gcObjects
	reg   *registry.Registry
	ticks chan time.Time
}

func newGCTest(t *testing.T, reg *registry.Registry) *gcTest {
	ctx, cancel := context.WithCancel(context.Background())
	db, err := store.Open(ctx, store.Config{Path: filepath.Join(t.TempDir(), "test.db"), UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	wc := store.NewWatchCache(db, store.WatchCacheConfig{})
	g := &gcTest{t: t, ctx: ctx, db: db, reads: &countingStore{Store: db}, objs: &gcObjects{db: db, fail: map[string]int{}, deletes: map[string]int{}},
		reg: reg, ticks: make(chan time.Time)}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		wc.Close()
		db.Close()
	})
	// The collector starts at the first tick.
	go func() {
		defer close(done)
		select {
		case <-g.ticks:
		case <-ctx.Done():
			return
		}
		gc := newGarbageCollector(New(Config{Store: g.reads, Registry: reg, Objects: g.objs, WatchCache: wc}))
		gc.ticks = g.ticks
		gc.run(ctx)
	}()
	return g
}

// start starts the collector and waits for its first scan to end.
func (g *gcTest) start() {
	g.ticks <- time.Time{}
	g.tick()
}

// tick makes the collector tick and waits until it has (the second send
// is only taken once the first tick's work is done).
func (g *gcTest) tick() {
	g.ticks <- time.Time{}
	g.ticks <- time.Time{}
}

// configMap stores a ConfigMap with uid and owners.
func (g *gcTest) configMap(name string, owners ...metav1.OwnerReference) {
	g.t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), OwnerReferences: owners}}
	g.create(store.Key{Resource: "configmaps", Namespace: "ns", Name: name}, cm)
}

func (g *gcTest) create(key store.Key, obj metav1.Object) {
	g.t.Helper()
	value, err := json.Marshal(obj)
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.db.Create(g.ctx, key, string(obj.GetUID()), value); err != nil {
		g.t.Fatal(err)
	}
}

// exists reports whether the ConfigMap name is stored.
func (g *gcTest) exists(name string) bool {
	g.t.Helper()
	_, err := g.db.Get(g.ctx, store.Key{Resource: "configmaps", Namespace: "ns", Name: name})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		g.t.Fatal(err)
	}
	return err == nil
}

// waitFor polls cond for up to 30 s.
func (g *gcTest) waitFor(what string, cond func() bool) {
	g.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			g.t.Fatalf("%s: not after 30 s", what)
		}
	}
}

func ownerRef(apiVersion, kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name)}
}

// TestGarbageCollector_TickReadsNothingIdle: once the collector has
// scanned the store at start, ticks with nothing to retry read nothing
// from it (they used to list every object of every kind).
func TestGarbageCollector_TickReadsNothingIdle(t *testing.T) {
	g := newGCTest(t, registry.Builtin())
	seedConfigMaps(t, g.db, "bench", 1000)
	g.configMap("owner")
	g.configMap("dep", ownerRef("v1", "ConfigMap", "owner"))
	g.start()
	_, startRows, _ := g.reads.reads()
	if startRows < 1002 {
		t.Fatalf("the scan at start read %d objects, want at least the 1,002 stored", startRows)
	}
	lists0, rows0, gets0 := g.reads.reads()
	for range 3 {
		g.tick()
	}
	lists, rows, gets := g.reads.reads()
	if lists != lists0 || rows != rows0 || gets != gets0 {
		t.Errorf("3 idle ticks made %d Lists (%d objects) and %d Gets, want none", lists-lists0, rows-rows0, gets-gets0)
	}
	if !g.exists("dep") {
		t.Error("the dependent of an existing owner was deleted")
	}
}

// TestGarbageCollector_TickRetriesFailedDelete: a dependent whose delete
// fails (a transient error) is deleted at the next tick, which reads the
// dependent and its owner but lists nothing.
func TestGarbageCollector_TickRetriesFailedDelete(t *testing.T) {
	g := newGCTest(t, registry.Builtin())
	seedConfigMaps(t, g.db, "bench", 100)
	g.configMap("owner")
	g.configMap("dep", ownerRef("v1", "ConfigMap", "owner"))
	g.objs.fail["dep"] = 1
	g.start()
	if _, err := g.db.Delete(g.ctx, store.Key{Resource: "configmaps", Namespace: "ns", Name: "owner"}, store.Preconditions{}); err != nil {
		t.Fatal(err)
	}
	g.waitFor("the dependent's first delete", func() bool { return g.objs.deletesOf("dep") >= 1 })
	if !g.exists("dep") {
		t.Fatal("the dependent is gone after its delete failed")
	}
	lists0, _, _ := g.reads.reads()
	g.tick()
	if g.exists("dep") {
		t.Errorf("the dependent is still there after a tick (%d deletes)", g.objs.deletesOf("dep"))
	}
	if lists, _, _ := g.reads.reads(); lists != lists0 {
		t.Errorf("the tick made %d Lists, want none", lists-lists0)
	}
}

// TestGarbageCollector_OwnerKindServedLater: a dependent whose owner is
// of a kind not served yet (as custom resources after a restart) is left
// alone, and collected as soon as the registry serves the kind, with no
// rescan of the store.
func TestGarbageCollector_OwnerKindServedLater(t *testing.T) {
	reg := registry.Builtin()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	secrets := reg.Lookup(gvr)
	if secrets == nil {
		t.Fatal("no Secret kind")
	}
	reg.Remove(gvr)
	g := newGCTest(t, reg)
	owner := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "uid-owner"}}
	ownerKey := store.Key{Resource: "secrets", Namespace: "ns", Name: "owner"}
	g.create(ownerKey, owner)
	if _, err := g.db.Delete(g.ctx, ownerKey, store.Preconditions{}); err != nil {
		t.Fatal(err)
	}
	g.configMap("dep", ownerRef("v1", "Secret", "owner"))
	g.start()
	g.tick()
	if !g.exists("dep") {
		t.Fatal("a dependent of an owner of an unserved kind was deleted")
	}
	lists0, _, _ := g.reads.reads()
	reg.Add(secrets)
	g.waitFor("the dependent's deletion once its owner's kind is served", func() bool { return !g.exists("dep") })
	g.tick()
	// One List: the newly served secrets.
	if lists, _, _ := g.reads.reads(); lists-lists0 > 1 {
		t.Errorf("serving the kind made %d Lists, want 1 (its own resource)", lists-lists0)
	}
}

// TestGarbageCollector_ForegroundOwnerAfterFailedDelete: an owner in
// foreground deletion whose blocking dependent could not be deleted
// waits; after the tick that deletes the dependent, the owner goes too.
func TestGarbageCollector_ForegroundOwnerAfterFailedDelete(t *testing.T) {
	g := newGCTest(t, registry.Builtin())
	block := true
	ref := ownerRef("v1", "ConfigMap", "owner")
	ref.BlockOwnerDeletion = &block
	g.configMap("owner")
	g.configMap("dep", ref)
	g.objs.fail["dep"] = 1
	g.start()
	ownerKey := store.Key{Resource: "configmaps", Namespace: "ns", Name: "owner"}
	now := metav1.Now()
	owner := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "uid-owner", DeletionTimestamp: &now, Finalizers: []string{metav1.FinalizerDeleteDependents}}}
	value, err := json.Marshal(owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.db.Update(g.ctx, ownerKey, store.Preconditions{}, value); err != nil {
		t.Fatal(err)
	}
	g.waitFor("the dependent's first delete", func() bool { return g.objs.deletesOf("dep") >= 1 })
	if !g.exists("owner") || !g.exists("dep") {
		t.Fatalf("after the dependent's failed delete: owner stored %v, dependent stored %v; want both", g.exists("owner"), g.exists("dep"))
	}
	g.tick()
	g.waitFor("the owner's deletion", func() bool { return !g.exists("owner") })
	if g.exists("dep") {
		t.Error("the dependent is still there after a tick")
	}
}
