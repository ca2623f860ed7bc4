package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// The namespace controller finalizes terminating namespaces, as
// kube-controller-manager's does: it deletes every object in the
// namespace, and once nothing is left it clears the "kubernetes" finalizer
// and removes the namespace. A commit that marks a namespace for deletion
// wakes it (observeNamespaces); it also sweeps every
// namespaceSweepInterval, and every half second while a namespace still
// holds objects that finalizers keep.

// namespaceSweepInterval is how often terminating namespaces are looked at
// even without a kick. A var so tests can shorten it.
var namespaceSweepInterval = 5 * time.Second

func (m *Manager) namespaceKind() *registry.Kind {
	return m.cfg.Registry.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
}

// kickNamespaces wakes the namespace controller.
func (m *Manager) kickNamespaces() {
	select {
	case m.nsKick <- struct{}{}:
	default:
	}
}

// observeNamespaces wakes the namespace controller when a committed write
// leaves a namespace terminating. It runs on the store's writer: it only
// sends a kick.
func (m *Manager) observeNamespaces(events []store.Event) {
	for i := range events {
		ev := &events[i]
		if ev.Type != store.Deleted && ev.Object.Key.Resource == "namespaces" && registry.HasDeletionTimestamp(ev.Object.Value) {
			m.kickNamespaces()
			return
		}
	}
}

// runNamespaceController finalizes terminating namespaces until ctx ends.
func (m *Manager) runNamespaceController(ctx context.Context) {
	t := time.NewTicker(namespaceSweepInterval)
	defer t.Stop()
	for {
		if err := m.finalizeNamespaces(ctx); err != nil && ctx.Err() == nil {
			m.log.Sugar().Warnw("finalize namespaces", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.nsKick:
		case <-t.C:
		}
	}
}

// finalizeNamespaces deletes the contents of every terminating namespace
// and removes the namespace once it is empty.
func (m *Manager) finalizeNamespaces(ctx context.Context) error {
	nk := m.namespaceKind()
	res, err := m.cfg.Store.List(ctx, store.ListOptions{Resource: nk.StorageResource})
	if err != nil {
		return err
	}
	for _, o := range res.Objects {
		obj, err := nk.DecodeStored(o.Value)
		if err != nil {
			return err
		}
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		empty, err := m.emptyNamespace(ctx, ns.Name)
		if err != nil {
			return err
		}
		if !empty {
			// Objects with finalizers remain; look again soon.
			m.retryNamespacesSoon(ctx)
			continue
		}
		if err := m.removeNamespace(ctx, nk, ns.Name, ns.UID); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) retryNamespacesSoon(ctx context.Context) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
			select {
			case m.nsKick <- struct{}{}:
			default:
			}
		}
	}()
}

// emptyNamespace deletes every object in namespace; it reports whether
// nothing is left.
func (m *Manager) emptyNamespace(ctx context.Context, namespace string) (bool, error) {
	empty := true
	seen := map[string]bool{}
	bg := metav1.DeletePropagationBackground
	for _, k := range m.cfg.Registry.Kinds() {
		if !k.Namespaced || !k.Stored() || seen[k.StorageResource] {
			continue
		}
		seen[k.StorageResource] = true
		res, err := m.cfg.Store.List(ctx, store.ListOptions{Resource: k.StorageResource, Namespace: namespace})
		if err != nil {
			return false, err
		}
		for _, o := range res.Objects {
			deleted, err := m.cfg.Objects.DeleteObject(ctx, k, namespace, o.Key.Name, &metav1.DeleteOptions{PropagationPolicy: &bg})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			if !deleted {
				empty = false
			}
		}
	}
	return empty, nil
}

// removeNamespace clears the "kubernetes" finalizer and deletes the
// namespace when no other finalizer holds it. It acts on the terminating
// namespace with uid only: once that is gone, a namespace of the same
// name is a new one, which a client may have created meanwhile.
func (m *Manager) removeNamespace(ctx context.Context, nk *registry.Kind, name string, uid types.UID) error {
	key := nk.StoreKey("", name)
	for {
		cur, err := m.cfg.Store.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		obj, err := nk.DecodeStored(cur.Value)
		if err != nil {
			return err
		}
		ns := obj.(*corev1.Namespace)
		if ns.UID != uid || ns.DeletionTimestamp == nil {
			return nil
		}
		ns.Spec.Finalizers = nil
		if len(ns.Finalizers) > 0 {
			value, err := nk.EncodeStorage(ns)
			if err != nil {
				return err
			}
			if _, err := m.cfg.Store.Update(ctx, key, store.Preconditions{ModRev: cur.ModRev}, value); errors.Is(err, store.ErrConflict) {
				continue
			} else if err != nil {
				return err
			}
			return nil
		}
		if _, err := m.cfg.Store.Delete(ctx, key, store.Preconditions{ModRev: cur.ModRev}); errors.Is(err, store.ErrConflict) {
			continue
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
}
