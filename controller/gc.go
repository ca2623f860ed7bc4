package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// The garbage collector does what kube-controller-manager's does, for the
// kinds edgeapi serves: dependents of a deleted owner are deleted
// (Background), or deleted before the owner goes (Foreground, the
// foregroundDeletion finalizer), or released (Orphan, the orphan
// finalizer). It is driven by its own watch of every resource, and on start
// (and whenever its watch falls behind) it rescans, so it picks up work
// left half-done by a restart.
//
// It acts on owners it has seen deleted: a deletion observed live, or one
// recorded in the change log (which reaches back at least one compaction
// interval, so a restart in the middle resumes). A reference to an owner
// that never existed is left alone, unlike kube-controller-manager, which
// deletes such dependents.
//
// Between rescans its cost follows the work, not the store: every change
// that can give it work is an event it handles (an owner deleted or marked
// for deletion, a dependent created or changed, a reference removed, a
// blocking dependent gone). What events cannot bring is kept in two
// bounded sets: objects whose processing failed (a read, delete or patch
// error) or waits (an owner in foreground deletion with blocking
// dependents left), which every tick processes again; and dependents that
// refer to an owner of a kind not served yet (custom resources are served
// some time after start), which are processed again when the registry
// serves that kind. A registry change also scans the storage resources it
// newly serves. The store is rescanned only at start, when the watch is
// lost, after a failed scan, and when a set overflows.

// gcResyncInterval is how often the collector retries what failed or
// waits. A var so tests can shorten it.
var gcResyncInterval = time.Minute

// gcMaxPending bounds the retry set and the set of dependents with owners
// of unserved kinds; past it, the collector rescans the store instead.
const gcMaxPending = 10_000

// gcMeta is the part of an object the collector reads.
type gcMeta struct {
	Metadata struct {
		Name              string                  `json:"name"`
		Namespace         string                  `json:"namespace"`
		UID               types.UID               `json:"uid"`
		DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
		Finalizers        []string                `json:"finalizers"`
		OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
}

// gcResyncPage is how many objects one List of a resync reads.
const gcResyncPage = 1000

// mayNeedGC reports whether a stored value may hold what the collector
// acts on, owner references or a deletion timestamp, by a byte search that
// is far cheaper than parseGCMeta. Stored values are encoding/json's
// output, which never escapes the letters of those keys, so a value
// without either key name in it has neither; a false positive (the name
// in data) only costs the parse.
func mayNeedGC(value []byte) bool {
	return bytes.Contains(value, []byte(`"ownerReferences"`)) || bytes.Contains(value, []byte(`"deletionTimestamp"`))
}

func parseGCMeta(value []byte) (*gcMeta, error) {
	var m gcMeta
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// garbageCollector keeps an index from owner UID to dependents.
type garbageCollector struct {
	m *Manager

	// mu guards dependents and ownersOf.
	mu         sync.Mutex
	dependents map[types.UID]map[store.Key]struct{}
	ownersOf   map[store.Key][]types.UID
	// deleted holds UIDs of deleted owners that had dependents, until
	// those dependents are dealt with.
	deleted map[types.UID]bool
	// scanned records, for owner UIDs not known to be deleted, the
	// revision up to which the change log was searched for their deletion.
	scanned map[types.UID]int64
	// retry holds the objects to process again at the next tick: their
	// processing failed, or they are owners waiting for dependents.
	retry map[store.Key]struct{}
	// unresolved holds, by the owner reference's apiVersion and kind, the
	// dependents that refer to an owner of a kind the registry did not
	// serve when they were processed.
	unresolved  map[ownerType]map[store.Key]struct{}
	nUnresolved int
	// rescan makes the next tick rescan the store: a scan failed, or the
	// retry set overflowed. rescanOnServe makes the next registry change
	// rescan it: the unresolved set overflowed.
	rescan, rescanOnServe bool

	// The fields below are only used by the collector's goroutine.

	// registryGen is the registry generation whose storage resources
	// served were scanned.
	registryGen uint64
	served      map[string]bool
	// ticks, when set (by tests), replaces the ticker.
	ticks <-chan time.Time
}

// ownerType is an owner reference's apiVersion and kind.
type ownerType struct{ apiVersion, kind string }

func newGarbageCollector(m *Manager) *garbageCollector {
	return &garbageCollector{m: m, dependents: map[types.UID]map[store.Key]struct{}{}, ownersOf: map[store.Key][]types.UID{}, deleted: map[types.UID]bool{}, scanned: map[types.UID]int64{},
		retry: map[store.Key]struct{}{}, unresolved: map[ownerType]map[store.Key]struct{}{}}
}

// retryLater has the next tick process the object at key again.
func (gc *garbageCollector) retryLater(key store.Key) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.rescan {
		return
	}
	if len(gc.retry) >= gcMaxPending {
		gc.rescan = true
		clear(gc.retry)
		return
	}
	gc.retry[key] = struct{}{}
}

// takeRetry empties the retry set and returns what it held.
func (gc *garbageCollector) takeRetry() []store.Key {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	keys := make([]store.Key, 0, len(gc.retry))
	for k := range gc.retry {
		keys = append(keys, k)
	}
	clear(gc.retry)
	return keys
}

// awaitServed records that the dependent at key refers to an owner of type
// t, which the registry does not serve.
func (gc *garbageCollector) awaitServed(t ownerType, key store.Key) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.rescanOnServe {
		return
	}
	keys := gc.unresolved[t]
	if _, ok := keys[key]; ok {
		return
	}
	if gc.nUnresolved >= gcMaxPending {
		gc.rescanOnServe = true
		clear(gc.unresolved)
		gc.nUnresolved = 0
		return
	}
	if keys == nil {
		keys = map[store.Key]struct{}{}
		gc.unresolved[t] = keys
	}
	keys[key] = struct{}{}
	gc.nUnresolved++
}

// index records key's owner references (none when refs is empty).
func (gc *garbageCollector) index(key store.Key, refs []metav1.OwnerReference) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	for _, uid := range gc.ownersOf[key] {
		if deps := gc.dependents[uid]; deps != nil {
			delete(deps, key)
			if len(deps) == 0 {
				delete(gc.dependents, uid)
			}
		}
	}
	delete(gc.ownersOf, key)
	if len(refs) == 0 {
		return
	}
	uids := make([]types.UID, 0, len(refs))
	for _, r := range refs {
		uids = append(uids, r.UID)
		deps := gc.dependents[r.UID]
		if deps == nil {
			deps = map[store.Key]struct{}{}
			gc.dependents[r.UID] = deps
		}
		deps[key] = struct{}{}
	}
	gc.ownersOf[key] = uids
}

// forgetUnresolved drops the deleted dependent at key, which had refs,
// from the set of those waiting for their owners' kinds to be served.
func (gc *garbageCollector) forgetUnresolved(key store.Key, refs []metav1.OwnerReference) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.nUnresolved == 0 {
		return
	}
	for _, r := range refs {
		t := ownerType{r.APIVersion, r.Kind}
		if keys := gc.unresolved[t]; keys != nil {
			if _, ok := keys[key]; ok {
				delete(keys, key)
				gc.nUnresolved--
			}
			if len(keys) == 0 {
				delete(gc.unresolved, t)
			}
		}
	}
}

func (gc *garbageCollector) markDeleted(uid types.UID) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if len(gc.dependents[uid]) > 0 {
		gc.deleted[uid] = true
	}
}

func (gc *garbageCollector) wasDeleted(uid types.UID) bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return gc.deleted[uid]
}

// pruneDeleted forgets deleted owners no dependent refers to any more.
func (gc *garbageCollector) pruneDeleted() {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	for uid := range gc.deleted {
		if len(gc.dependents[uid]) == 0 {
			delete(gc.deleted, uid)
		}
	}
	for uid := range gc.scanned {
		if len(gc.dependents[uid]) == 0 {
			delete(gc.scanned, uid)
		}
	}
}

// deletedInLog returns those of uids whose deletion the change log
// records (owners deleted before their dependent was seen, e.g. across a
// restart). It reads the log once for all of them, from the earliest
// point not yet searched for one of them: a dependent may hold tens of
// thousands of references, and one pass per reference made that
// quadratic. An error means the log could not be read to its end.
func (gc *garbageCollector) deletedInLog(ctx context.Context, uids []types.UID) (map[types.UID]bool, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	want := make(map[types.UID]bool, len(uids))
	gc.mu.Lock()
	after := gc.scanned[uids[0]]
	for _, uid := range uids {
		want[uid] = true
		if r := gc.scanned[uid]; r < after {
			after = r
		}
	}
	gc.mu.Unlock()
	found := map[types.UID]bool{}
	var err error
	for {
		if c := gc.m.cfg.Store.CompactedRev(); after < c {
			after = c
		}
		var events []store.Event
		events, err = gc.m.cfg.Store.ChangeKeys(ctx, after, 1000)
		if errors.Is(err, store.ErrCompacted) {
			continue
		}
		if err != nil || len(events) == 0 {
			break
		}
		for i := range events {
			if uid := types.UID(events[i].Object.UID); events[i].Type == store.Deleted && want[uid] {
				found[uid] = true
			}
		}
		after = events[len(events)-1].Rev()
	}
	gc.mu.Lock()
	for uid := range want {
		if found[uid] {
			gc.deleted[uid] = true
			delete(gc.scanned, uid)
		} else {
			gc.scanned[uid] = after
		}
	}
	gc.mu.Unlock()
	return found, err
}

func (gc *garbageCollector) hasDependents(uid types.UID) bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return len(gc.dependents[uid]) > 0
}

// loadDeletedOwners marks as deleted every owner UID that dependents refer
// to and that the change log records a deletion of.
func (gc *garbageCollector) loadDeletedOwners(ctx context.Context) error {
	gc.mu.Lock()
	wanted := make(map[types.UID]bool, len(gc.dependents))
	for uid := range gc.dependents {
		wanted[uid] = true
	}
	gc.mu.Unlock()
	if len(wanted) == 0 {
		return nil
	}
	after := gc.m.cfg.Store.CompactedRev()
	for {
		events, err := gc.m.cfg.Store.ChangeKeys(ctx, after, 1000)
		if err != nil {
			if errors.Is(err, store.ErrCompacted) {
				after = gc.m.cfg.Store.CompactedRev()
				continue
			}
			return err
		}
		if len(events) == 0 {
			return nil
		}
		for i := range events {
			if events[i].Type == store.Deleted && wanted[types.UID(events[i].Object.UID)] {
				gc.markDeleted(types.UID(events[i].Object.UID))
			}
		}
		after = events[len(events)-1].Rev()
	}
}

func (gc *garbageCollector) dependentsOf(uid types.UID) []store.Key {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	out := make([]store.Key, 0, len(gc.dependents[uid]))
	for k := range gc.dependents[uid] {
		out = append(out, k)
	}
	return out
}

// kindsByStorage maps storage resources to one served kind each, for the
// kinds the collector handles.
// A kind served in another version than its storage version is left out:
// the storage version's kind covers its objects. The map is the registry
// snapshot's own, built once per registry change: callers must not modify
// it.
func (gc *garbageCollector) kindsByStorage() map[string]*registry.Kind {
	return gc.m.cfg.Registry.Snapshot().ByStorage()
}

// run processes events until ctx ends.
func (gc *garbageCollector) run(ctx context.Context) {
	for ctx.Err() == nil {
		rev := gc.m.cfg.Store.Rev()
		w, err := gc.m.cfg.WatchCache.Watch(ctx, "", "", rev)
		if err != nil {
			gc.m.log.Sugar().Warnw("garbage collector watch", "error", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		gc.m.gcHandled.Store(rev)
		gc.resyncOrWarn(ctx)
		gc.follow(ctx, w)
		w.Stop()
	}
}

// resyncOrWarn rescans the store; when that fails, the next tick tries
// again.
func (gc *garbageCollector) resyncOrWarn(ctx context.Context) {
	if err := gc.resync(ctx); err != nil && ctx.Err() == nil {
		gc.m.log.Sugar().Warnw("garbage collector resync", "error", err)
		gc.mu.Lock()
		gc.rescan = true
		gc.mu.Unlock()
	}
}

// follow handles watch events until the watch ends; a periodic tick
// retries work that failed or waits, and registry changes are followed
// as they come.
func (gc *garbageCollector) follow(ctx context.Context, w *store.Watcher) {
	events := make(chan *store.CachedEvent)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(events)
		for {
			ev, err := w.Next(wctx)
			if err != nil {
				return
			}
			select {
			case events <- ev:
			case <-wctx.Done():
				return
			}
		}
	}()
	ticks := gc.ticks
	if ticks == nil {
		t := time.NewTicker(gcResyncInterval)
		defer t.Stop()
		ticks = t.C
	}
	changed := gc.m.cfg.Registry.Changed()
	gc.followRegistry(ctx)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			gc.handle(ctx, &ev.Event)
			gc.m.gcHandled.Store(ev.Rev())
		case <-changed:
			changed = gc.m.cfg.Registry.Changed()
			gc.followRegistry(ctx)
		case <-ticks:
			gc.tick(ctx)
		case <-ctx.Done():
			return
		}
	}
}

// tick processes the retry set again, or rescans the store when a scan
// failed or the set overflowed.
func (gc *garbageCollector) tick(ctx context.Context) {
	gc.mu.Lock()
	rescan := gc.rescan
	gc.mu.Unlock()
	if rescan {
		gc.resyncOrWarn(ctx)
		return
	}
	kinds := gc.kindsByStorage()
	for _, key := range gc.takeRetry() {
		if k := kinds[key.Resource]; k != nil {
			gc.processKey(ctx, k, key)
		}
	}
	gc.pruneDeleted()
}

// processKey reads the object at key and processes it.
func (gc *garbageCollector) processKey(ctx context.Context, k *registry.Kind, key store.Key) {
	o, err := gc.m.cfg.Store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return
	}
	if err != nil {
		gc.retryLater(key)
		return
	}
	if !mayNeedGC(o.Value) {
		return
	}
	m, err := parseGCMeta(o.Value)
	if err != nil {
		return
	}
	gc.processObject(ctx, k, key, m)
}

// followRegistry catches up with registry changes: it scans the storage
// resources newly served, and processes again the dependents whose
// owners' kinds are newly served.
func (gc *garbageCollector) followRegistry(ctx context.Context) {
	snap := gc.m.cfg.Registry.Snapshot()
	if snap.Generation() == gc.registryGen {
		return
	}
	gc.mu.Lock()
	rescan := gc.rescanOnServe
	gc.mu.Unlock()
	if rescan {
		gc.resyncOrWarn(ctx)
		return
	}
	kinds := snap.ByStorage()
	var added []string
	for res := range kinds {
		if !gc.served[res] {
			added = append(added, res)
		}
	}
	if err := gc.scan(ctx, snap, added); err != nil && ctx.Err() == nil {
		gc.m.log.Sugar().Warnw("garbage collector scan of newly served resources", "error", err)
		gc.mu.Lock()
		gc.rescan = true
		gc.mu.Unlock()
	}
	var ready []store.Key
	gc.mu.Lock()
	for t, keys := range gc.unresolved {
		gv, err := schema.ParseGroupVersion(t.apiVersion)
		if err != nil || snap.ByGVK(gv.WithKind(t.kind)) == nil {
			continue
		}
		for key := range keys {
			ready = append(ready, key)
		}
		gc.nUnresolved -= len(keys)
		delete(gc.unresolved, t)
	}
	gc.mu.Unlock()
	for _, key := range ready {
		if k := kinds[key.Resource]; k != nil {
			gc.processKey(ctx, k, key)
		}
	}
}

// resync rebuilds the index from the store and processes every object
// that needs the collector.
func (gc *garbageCollector) resync(ctx context.Context) error {
	gc.mu.Lock()
	gc.rescan, gc.rescanOnServe = false, false
	clear(gc.retry)
	clear(gc.unresolved)
	gc.nUnresolved = 0
	gc.mu.Unlock()
	snap := gc.m.cfg.Registry.Snapshot()
	// Index entries of resources no longer served go too.
	gc.mu.Lock()
	clear(gc.dependents)
	clear(gc.ownersOf)
	gc.mu.Unlock()
	gc.served = nil
	return gc.scan(ctx, snap, slices.Collect(maps.Keys(snap.ByStorage())))
}

// scan indexes the objects of the storage resources given, which snap
// serves, and processes every one of them that needs the collector; then
// it records snap's resources as scanned.
func (gc *garbageCollector) scan(ctx context.Context, snap *registry.Snapshot, resources []string) error {
	kinds := snap.ByStorage()
	type item struct {
		k   *registry.Kind
		key store.Key
		m   *gcMeta
	}
	var todo []item
	for _, res := range resources {
		k := kinds[res]
		// Page through the resource so that a resync of many objects
		// holds one page in memory, not all of them.
		opts := store.ListOptions{Resource: res, Limit: gcResyncPage}
		for {
			list, err := gc.m.cfg.Store.List(ctx, opts)
			if err != nil {
				return err
			}
			for _, o := range list.Objects {
				if !mayNeedGC(o.Value) {
					gc.index(o.Key, nil)
					continue
				}
				m, err := parseGCMeta(o.Value)
				if err != nil {
					continue
				}
				gc.index(o.Key, m.Metadata.OwnerReferences)
				if len(m.Metadata.OwnerReferences) > 0 || (m.Metadata.DeletionTimestamp != nil && gcFinalizer(m.Metadata.Finalizers) != "") {
					todo = append(todo, item{k, o.Key, m})
				}
			}
			if !list.More || len(list.Objects) == 0 {
				break
			}
			last := list.Objects[len(list.Objects)-1].Key
			opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
		}
	}
	if len(todo) > 0 {
		if err := gc.loadDeletedOwners(ctx); err != nil {
			return err
		}
	}
	for _, it := range todo {
		gc.processObject(ctx, it.k, it.key, it.m)
	}
	gc.pruneDeleted()
	gc.registryGen = snap.Generation()
	gc.served = make(map[string]bool, len(kinds))
	for res := range kinds {
		gc.served[res] = true
	}
	return nil
}

func gcFinalizer(finalizers []string) string {
	for _, f := range finalizers {
		if f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents {
			return f
		}
	}
	return ""
}

// handle reacts to one committed event.
func (gc *garbageCollector) handle(ctx context.Context, ev *store.Event) {
	kinds := gc.kindsByStorage()
	k := kinds[ev.Object.Key.Resource]
	if k == nil {
		return
	}
	var m *gcMeta
	if ev.Type == store.Modified && bytes.Contains(ev.PrevValue, []byte(`"ownerReferences"`)) {
		// An owner waiting in the foreground may be unblocked by a
		// reference that went away.
		defer func() { gc.recheckRemovedOwners(ctx, kinds, ev, m) }()
	}
	if ev.Type != store.Deleted && !mayNeedGC(ev.Object.Value) {
		// Most writes: nothing to collect, and no owners to index.
		gc.index(ev.Object.Key, nil)
		return
	}
	var err error
	if m, err = parseGCMeta(ev.Object.Value); err != nil {
		return
	}
	if ev.Type == store.Deleted {
		gc.index(ev.Object.Key, nil)
		gc.forgetUnresolved(ev.Object.Key, m.Metadata.OwnerReferences)
		gc.markDeleted(m.Metadata.UID)
		// Dependents of a deleted owner lose it.
		for _, dep := range gc.dependentsOf(m.Metadata.UID) {
			if dk := kinds[dep.Resource]; dk != nil {
				gc.processDependent(ctx, dk, dep)
			}
		}
		// An owner in foreground deletion may be waiting for this one.
		for _, ref := range m.Metadata.OwnerReferences {
			gc.processOwnerRef(ctx, kinds, ev.Object.Key.Namespace, ref)
		}
		return
	}
	gc.index(ev.Object.Key, m.Metadata.OwnerReferences)
	gc.processObject(ctx, k, ev.Object.Key, m)
}

// recheckRemovedOwners processes the owners a modified object no longer
// refers to; cur is its parsed value, when handle parsed it.
func (gc *garbageCollector) recheckRemovedOwners(ctx context.Context, kinds map[string]*registry.Kind, ev *store.Event, cur *gcMeta) {
	prev, err := parseGCMeta(ev.PrevValue)
	if err != nil {
		return
	}
	if cur == nil {
		if !bytes.Contains(ev.Object.Value, []byte(`"ownerReferences"`)) {
			cur = &gcMeta{}
		} else if cur, err = parseGCMeta(ev.Object.Value); err != nil {
			return
		}
	}
	// A set, not a nested loop: an object may have tens of thousands of
	// references.
	kept := make(map[types.UID]bool, len(cur.Metadata.OwnerReferences))
	for _, r := range cur.Metadata.OwnerReferences {
		kept[r.UID] = true
	}
	for _, ref := range prev.Metadata.OwnerReferences {
		if !kept[ref.UID] {
			gc.processOwnerRef(ctx, kinds, ev.Object.Key.Namespace, ref)
		}
	}
}

// processObject handles an object's own deletion finalizers and its
// references to owners.
func (gc *garbageCollector) processObject(ctx context.Context, k *registry.Kind, key store.Key, m *gcMeta) {
	if m.Metadata.DeletionTimestamp != nil {
		switch gcFinalizer(m.Metadata.Finalizers) {
		case metav1.FinalizerOrphanDependents:
			gc.orphanDependents(ctx, k, key, m.Metadata.UID)
			return
		case metav1.FinalizerDeleteDependents:
			gc.deleteDependentsForeground(ctx, k, key, m.Metadata.UID)
			return
		}
	}
	if len(m.Metadata.OwnerReferences) > 0 {
		gc.processDependent(ctx, k, key)
	}
}

// processOwnerRef re-examines the owner named by ref (a dependent of it
// was deleted), if it is in foreground deletion.
func (gc *garbageCollector) processOwnerRef(ctx context.Context, kinds map[string]*registry.Kind, namespace string, ref metav1.OwnerReference) {
	ok := gc.ownerKind(ref)
	if ok == nil {
		return
	}
	key := ok.StoreKey(namespace, ref.Name)
	o, err := gc.m.cfg.Store.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			gc.retryLater(key)
		}
		return
	}
	m, err := parseGCMeta(o.Value)
	if err != nil || m.Metadata.UID != ref.UID {
		return
	}
	gc.processObject(ctx, ok, key, m)
}

// ownerKind resolves an owner reference to a served kind, or nil.
func (gc *garbageCollector) ownerKind(ref metav1.OwnerReference) *registry.Kind {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	return gc.m.cfg.Registry.Snapshot().ByGVK(gv.WithKind(ref.Kind))
}

// ownerObject is what the collector needs of an owner's stored object.
type ownerObject struct {
	// resolvable is false for owners of kinds edgeapi does not serve:
	// those are never acted on.
	resolvable bool
	// failed: the owner could not be read.
	failed bool
	found  bool
	uid    types.UID
	// foreground: being deleted in the foreground.
	foreground bool
}

// lookupOwner reads the object an owner reference names (by kind,
// namespace and name; the caller compares the UID).
func (gc *garbageCollector) lookupOwner(ctx context.Context, namespace string, ref metav1.OwnerReference) ownerObject {
	ok := gc.ownerKind(ref)
	if ok == nil {
		return ownerObject{}
	}
	if !ok.Namespaced {
		namespace = ""
	}
	o, err := gc.m.cfg.Store.Get(ctx, ok.StoreKey(namespace, ref.Name))
	if errors.Is(err, store.ErrNotFound) {
		return ownerObject{resolvable: true}
	}
	if err != nil {
		return ownerObject{resolvable: true, failed: true}
	}
	m, err := parseGCMeta(o.Value)
	if err != nil {
		return ownerObject{resolvable: true}
	}
	return ownerObject{resolvable: true, found: true, uid: m.Metadata.UID,
		foreground: m.Metadata.DeletionTimestamp != nil && slices.Contains(m.Metadata.Finalizers, metav1.FinalizerDeleteDependents)}
}

// processDependent acts on a dependent as kube-controller-manager's
// attemptToDeleteItem does. Its owners are solid (present, or of kinds
// edgeapi does not serve, or never seen deleted), dangling (seen deleted)
// or waiting (being deleted in the foreground). With a solid owner left,
// references to dangling and waiting owners are removed. Without one, the
// dependent is deleted: in the foreground when a waiting owner needs it
// gone and it has dependents of its own, else as its own finalizers say.
// When a read or a write fails, the dependent is retried at the next tick.
func (gc *garbageCollector) processDependent(ctx context.Context, k *registry.Kind, key store.Key) {
	o, err := gc.m.cfg.Store.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			gc.retryLater(key)
		}
		return
	}
	m, err := parseGCMeta(o.Value)
	if err != nil || len(m.Metadata.OwnerReferences) == 0 {
		return
	}
	type ownerStatus struct {
		uid                         types.UID
		resolvable, exists, waiting bool
	}
	owners := make([]ownerStatus, 0, len(m.Metadata.OwnerReferences))
	var unseen []types.UID // absent owners not known to be deleted
	// An object may name one owner object in many references (with other
	// UIDs): each is read and parsed once.
	type ownerName struct{ apiVersion, kind, name string }
	lookups := map[ownerName]ownerObject{}
	for _, ref := range m.Metadata.OwnerReferences {
		n := ownerName{ref.APIVersion, ref.Kind, ref.Name}
		ob, ok := lookups[n]
		if !ok {
			ob = gc.lookupOwner(ctx, key.Namespace, ref)
			lookups[n] = ob
			if !ob.resolvable {
				gc.awaitServed(ownerType{ref.APIVersion, ref.Kind}, key)
			}
		}
		if ob.failed {
			gc.retryLater(key)
			return
		}
		exists := ob.found && ob.uid == ref.UID
		owners = append(owners, ownerStatus{ref.UID, ob.resolvable, exists, exists && ob.foreground})
		if ob.resolvable && !exists && !gc.wasDeleted(ref.UID) {
			unseen = append(unseen, ref.UID)
		}
	}
	inLog, err := gc.deletedInLog(ctx, unseen)
	if err != nil {
		gc.retryLater(key)
		return
	}
	var dangling, waiting []types.UID
	solid := 0
	for _, o := range owners {
		switch {
		case !o.resolvable:
			solid++
		case o.exists && o.waiting:
			waiting = append(waiting, o.uid)
		case o.exists:
			solid++
		case gc.wasDeleted(o.uid) || inLog[o.uid]:
			dangling = append(dangling, o.uid)
		default:
			// Never seen deleted (e.g. it never existed): left alone.
			solid++
		}
	}
	switch {
	case len(dangling) == 0 && len(waiting) == 0:
		return
	case solid > 0:
		if gc.removeOwnerRefs(ctx, k, key, append(dangling, waiting...)) != nil {
			gc.retryLater(key)
		}
		return
	case m.Metadata.DeletionTimestamp != nil:
		return
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case len(waiting) > 0 && gc.hasDependents(m.Metadata.UID):
		policy = metav1.DeletePropagationForeground
	case slices.Contains(m.Metadata.Finalizers, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(m.Metadata.Finalizers, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	pre := m.Metadata.UID
	_, err = gc.m.cfg.Objects.DeleteObject(ctx, k, key.Namespace, key.Name, &metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &pre},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		gc.m.log.Sugar().Warnw("garbage collector delete dependent", "key", key, "error", err)
		gc.retryLater(key)
	}
}

// orphanDependents strips the owner from every dependent, then removes the
// orphan finalizer from the owner.
func (gc *garbageCollector) orphanDependents(ctx context.Context, k *registry.Kind, key store.Key, uid types.UID) {
	kinds := gc.kindsByStorage()
	for _, dep := range gc.dependentsOf(uid) {
		if dk := kinds[dep.Resource]; dk != nil {
			if err := gc.removeOwnerRefs(ctx, dk, dep, []types.UID{uid}); err != nil {
				gc.retryLater(key)
				return
			}
		}
	}
	gc.removeFinalizer(ctx, k, key, uid, metav1.FinalizerOrphanDependents)
}

// deleteDependentsForeground deletes the dependents of an owner in
// foreground deletion and removes its finalizer once no dependent with
// blockOwnerDeletion is left. An owner still waiting is processed again
// at the next tick (the deletion of its last blocking dependent also
// brings it back).
func (gc *garbageCollector) deleteDependentsForeground(ctx context.Context, k *registry.Kind, key store.Key, uid types.UID) {
	kinds := gc.kindsByStorage()
	blocking := 0
	for _, dep := range gc.dependentsOf(uid) {
		dk := kinds[dep.Resource]
		if dk == nil {
			continue
		}
		o, err := gc.m.cfg.Store.Get(ctx, dep)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				blocking++
			}
			continue
		}
		m, err := parseGCMeta(o.Value)
		if err != nil {
			continue
		}
		for _, ref := range m.Metadata.OwnerReferences {
			if ref.UID == uid && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				blocking++
			}
		}
		gc.processDependent(ctx, dk, dep)
	}
	if blocking == 0 {
		gc.removeFinalizer(ctx, k, key, uid, metav1.FinalizerDeleteDependents)
	} else {
		gc.retryLater(key)
	}
}

// removeOwnerRefs drops the references to uids from the object at key.
func (gc *garbageCollector) removeOwnerRefs(ctx context.Context, k *registry.Kind, key store.Key, uids []types.UID) error {
	_, err := gc.m.cfg.Store.GuaranteedUpdate(ctx, key, func(cur store.Object) ([]byte, error) {
		obj, err := k.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		m := registry.Accessor(obj)
		drop := make(map[types.UID]bool, len(uids))
		for _, u := range uids {
			drop[u] = true
		}
		var keep []metav1.OwnerReference
		for _, ref := range m.GetOwnerReferences() {
			if !drop[ref.UID] {
				keep = append(keep, ref)
			}
		}
		m.SetOwnerReferences(keep)
		return k.EncodeStorage(obj)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		gc.m.log.Sugar().Warnw("garbage collector remove owner reference", "key", key, "error", err)
		return err
	}
	return nil
}

// removeFinalizer removes finalizer from the owner at key (if it is still
// the object with uid); an owner left without finalizers is deleted.
func (gc *garbageCollector) removeFinalizer(ctx context.Context, k *registry.Kind, key store.Key, uid types.UID, finalizer string) {
	for ctx.Err() == nil {
		cur, err := gc.m.cfg.Store.Get(ctx, key)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				gc.retryLater(key)
			}
			return
		}
		obj, err := k.DecodeStored(cur.Value)
		if err != nil {
			return
		}
		m := registry.Accessor(obj)
		if m.GetUID() != uid || !slices.Contains(m.GetFinalizers(), finalizer) {
			return
		}
		m.SetFinalizers(slices.DeleteFunc(slices.Clone(m.GetFinalizers()), func(f string) bool { return f == finalizer }))
		pre := store.Preconditions{ModRev: cur.ModRev}
		if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && !(k.Resource == "namespaces") {
			if _, err = gc.m.cfg.Store.Delete(ctx, key, pre); err == nil && k.AfterDelete != nil {
				k.AfterDelete(ctx, obj)
			}
		} else {
			var value []byte
			if value, err = k.EncodeStorage(obj); err == nil {
				_, err = gc.m.cfg.Store.Update(ctx, key, pre, value)
			}
		}
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			gc.m.log.Sugar().Warnw("garbage collector remove finalizer", "key", key, "finalizer", finalizer, "error", err)
			gc.retryLater(key)
		}
		if k.Resource == "namespaces" {
			gc.m.kickNamespaces()
		}
		return
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
